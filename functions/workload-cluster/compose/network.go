// Package compose is the logic of the workload-cluster composition function:
// it turns an XWorkloadCluster into the AWS objects the hub's Crossplane
// manages. It is a library so that tests and fleet can call it in-process;
// ../main.go only serves it over gRPC.
package compose

import (
	"fmt"
	"net/netip"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

// VPC prefix lengths the XRD admits (spec.vpcCidr is /16, /17 or /18).
const (
	MinVPCPrefix = 16
	MaxVPCPrefix = 18
	// MaxAZs is the XRD's maximum of spec.availabilityZones.
	MaxAZs = workloadcluster.MaxAvailabilityZones
)

// AZSuffixes are the zone letters in use order: <region>a, b, c.
var AZSuffixes = []string{"a", "b", "c"}

// Subnets is the address plan of one VPC.
type Subnets struct {
	Private []netip.Prefix // one per AZ in use, first quarters of the VPC
	Public  []netip.Prefix // one per AZ in use, first sixteenths of the last quarter
}

// PlanSubnets computes the subnets of a VPC with azs zones: private subnet i
// is the i-th /p+2 quarter, public subnet i the i-th /p+4 of the last
// quarter (the same plan the P&T lookup table encoded for /16../18).
func PlanSubnets(vpcCIDR string, azs int) (Subnets, error) {
	vpc, err := netip.ParsePrefix(vpcCIDR)
	if err != nil {
		return Subnets{}, fmt.Errorf("spec.vpcCidr %q: %w", vpcCIDR, err)
	}
	if !vpc.Addr().Is4() {
		return Subnets{}, fmt.Errorf("spec.vpcCidr %q: must be IPv4", vpcCIDR)
	}
	if vpc.Bits() < MinVPCPrefix || vpc.Bits() > MaxVPCPrefix {
		return Subnets{}, fmt.Errorf("spec.vpcCidr %q: prefix must be /%d to /%d", vpcCIDR, MinVPCPrefix, MaxVPCPrefix)
	}
	if vpc.Masked() != vpc {
		return Subnets{}, fmt.Errorf("spec.vpcCidr %q: host bits set (network address is %s)", vpcCIDR, vpc.Masked())
	}
	if azs < workloadcluster.MinAvailabilityZones || azs > MaxAZs {
		return Subnets{}, fmt.Errorf("spec.availabilityZones %d: must be %d or %d", azs, workloadcluster.MinAvailabilityZones, MaxAZs)
	}
	base := vpc.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	size := uint32(1) << (32 - vpc.Bits())
	quarter, sixteenth := size/4, size/16
	var s Subnets
	for i := range azs {
		s.Private = append(s.Private, prefixAt(start+uint32(i)*quarter, vpc.Bits()+2))
		s.Public = append(s.Public, prefixAt(start+3*quarter+uint32(i)*sixteenth, vpc.Bits()+4))
	}
	return s, nil
}

func prefixAt(a uint32, bits int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), bits)
}

// NATZones returns the AZ suffixes that get a NAT gateway (and EIP) and, per
// AZ in use, the suffix of the NAT its private route points at.
func NATZones(natMode string, azs int) (nats []string, routeVia map[string]string, err error) {
	routeVia = map[string]string{}
	switch natMode {
	case workloadcluster.NATSingle:
		nats = []string{AZSuffixes[0]}
		for _, z := range AZSuffixes[:azs] {
			routeVia[z] = AZSuffixes[0]
		}
	case workloadcluster.NATPerAZ:
		nats = append(nats, AZSuffixes[:azs]...)
		for _, z := range AZSuffixes[:azs] {
			routeVia[z] = z
		}
	default:
		return nil, nil, fmt.Errorf("spec.natMode %q: must be %q or %q", natMode, workloadcluster.NATSingle, workloadcluster.NATPerAZ)
	}
	return nats, routeVia, nil
}
