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

import "slices"

// unsupported are the zone IDs EKS does not accept for cluster subnets.
var unsupported = []string{"use1-az3", "usw1-az2", "cac1-az3"}

// Unsupported reports whether EKS refuses cluster subnets in zone ID id.
func Unsupported(id string) bool { return slices.Contains(unsupported, id) }

// List returns the unsupported zone IDs.
func List() []string { return slices.Clone(unsupported) }
