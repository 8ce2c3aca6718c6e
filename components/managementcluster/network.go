package managementcluster

import (
	"fmt"
	"net/netip"
)

// SubnetCIDRs splits the VPC into eight equal blocks: private subnets take
// blocks 0..n-1 (nodes and pods need the room), public subnets blocks
// 4..4+n-1 (load balancers and NAT gateways). With a /16 that is a /19 per
// subnet. n is 1 to 4.
func SubnetCIDRs(vpc string, n int) (private, public []string, err error) {
	p, err := netip.ParsePrefix(vpc)
	if err != nil {
		return nil, nil, fmt.Errorf("VPC CIDR %q: %w", vpc, err)
	}
	if !p.Addr().Is4() || p.Masked() != p || p.Bits() > 28 {
		return nil, nil, fmt.Errorf("VPC CIDR %q: want a canonical IPv4 prefix of /28 or larger", vpc)
	}
	if n < 1 || n > 4 {
		return nil, nil, fmt.Errorf("subnet count %d: want 1 to 4", n)
	}
	bits := p.Bits() + 3
	size := uint32(1) << (32 - bits)
	base := p.Addr().As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	block := func(i int) string {
		a := start + uint32(i)*size
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), bits).String()
	}
	for i := 0; i < n; i++ {
		private = append(private, block(i))
		public = append(public, block(4+i))
	}
	return private, public, nil
}

// NATCount is how many NAT gateways a NAT mode makes for n zones.
func NATCount(mode string, n int) int {
	if mode == NATPerAZ {
		return n
	}
	return 1
}
