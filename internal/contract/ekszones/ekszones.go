// Package ekszones knows which availability zones EKS cannot use for a
// cluster's control plane subnets.
//
// EKS refuses cluster subnets in a few zones, named by zone ID because zone
// names map to different physical zones in each account (EKS User Guide,
// "View Amazon EKS networking requirements for VPC and subnets": "Your
// subnets can't reside in AWS Outposts, AWS Wavelength, or an AWS Local
// Zone" and "use1-az3 in the us-east-1 Region, usw1-az2 in the us-west-1
// Region, cac1-az3 in the ca-central-1 Region"). CreateCluster fails with
// UnsupportedAvailabilityZoneException after the VPC exists, so the program
// leaves these zones out before anything is created.
package ekszones

import (
	"fmt"
	"regexp"
	"slices"
)

// unsupported are the zone IDs EKS does not accept for cluster subnets.
var unsupported = []string{"use1-az3", "usw1-az2", "cac1-az3"}

// Unsupported reports whether EKS refuses cluster subnets in zone ID id.
func Unsupported(id string) bool { return slices.Contains(unsupported, id) }

// List returns the unsupported zone IDs.
func List() []string { return slices.Clone(unsupported) }

// Zone is one availability zone: its name in this account (names map to
// physical zones differently in each account) and its zone ID (the same
// physical zone in every account).
type Zone struct{ Name, ID string }

// Usable returns, in the order given (AWS lists zones by name), the
// region's standard zones - named <region><letter>, so no Local or
// Wavelength Zone - that EKS accepts for cluster subnets, and the standard
// zones it refuses as "name (id)". ids is parallel to names, as
// ec2:DescribeAvailabilityZones returns them.
func Usable(region string, names, ids []string) (usable []Zone, refused []string, err error) {
	if len(ids) != len(names) {
		return nil, nil, fmt.Errorf("region %s: %d zone names but %d zone IDs", region, len(names), len(ids))
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(region) + `[a-z]$`)
	for i, z := range names {
		switch {
		case !re.MatchString(z):
		case Unsupported(ids[i]):
			refused = append(refused, z+" ("+ids[i]+")")
		default:
			usable = append(usable, Zone{Name: z, ID: ids[i]})
		}
	}
	return usable, refused, nil
}
