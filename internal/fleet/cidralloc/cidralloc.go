// Package cidralloc picks VPC CIDR blocks for spokes and finds overlaps
// between the blocks of every cluster in the fleet and the hub. It works on
// IPv4 prefixes only (EKS VPCs here are IPv4).
package cidralloc

import (
	"fmt"
	"net/netip"
	"sort"
)

// Parse reads an IPv4 CIDR and insists that it is in canonical form
// (10.1.0.0/16, not 10.1.2.3/16), as AWS and the XRD do.
func Parse(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR block (want e.g. 10.1.0.0/16): %w", s, err)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 CIDR block", s)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%q has host bits set: the block is %s", s, p.Masked())
	}
	return p, nil
}

// Overlaps reports whether two prefixes share any address.
func Overlaps(a, b netip.Prefix) bool { return a.Overlaps(b) }

// Block is a named prefix: a cluster's VPC or a reserved range.
type Block struct {
	Owner  string
	Prefix netip.Prefix
}

// Overlap is one pair of blocks that share addresses.
type Overlap struct{ A, B Block }

// FindOverlaps returns every overlapping pair. It sorts the blocks by first
// address and sweeps once, so a fleet of n clusters costs O(n log n + k)
// for k overlaps instead of comparing every pair.
func FindOverlaps(blocks []Block) []Overlap {
	s := make([]Block, len(blocks))
	copy(s, blocks)
	sort.SliceStable(s, func(i, j int) bool {
		if c := s[i].Prefix.Addr().Compare(s[j].Prefix.Addr()); c != 0 {
			return c < 0
		}
		return s[i].Prefix.Bits() < s[j].Prefix.Bits()
	})
	var out []Overlap
	// active holds the blocks whose range may still reach later blocks.
	var active []Block
	for _, b := range s {
		kept := active[:0]
		for _, a := range active {
			if lastAddr(a.Prefix).Compare(b.Prefix.Addr()) >= 0 {
				kept = append(kept, a)
				out = append(out, Overlap{A: a, B: b})
			}
		}
		active = append(kept, b)
	}
	return out
}

// lastAddr is the highest address in p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= ^uint32(0) >> uint(p.Bits())
	if p.Bits() == 0 {
		v = ^uint32(0)
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// FindFree returns the lowest block of the given size inside one of pools
// (tried in order) that overlaps none of used.
func FindFree(pools []netip.Prefix, bits int, used []netip.Prefix) (netip.Prefix, error) {
	if bits < 0 || bits > 32 {
		return netip.Prefix{}, fmt.Errorf("prefix length /%d is not an IPv4 prefix length (0-32)", bits)
	}
	sorted := make([]netip.Prefix, len(used))
	copy(sorted, used)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Addr().Less(sorted[j].Addr()) })
	for _, pool := range pools {
		if pool.Bits() > bits {
			continue
		}
		size := uint64(1) << uint(32-bits)
		start := toU32(pool.Addr())
		end := uint64(start) + (uint64(1) << uint(32-pool.Bits()))
		for cand := uint64(start); cand+size <= end; {
			p := netip.PrefixFrom(fromU32(uint32(cand)), bits)
			clash, ok := firstClash(sorted, p)
			if !ok {
				return p, nil
			}
			// Skip past the clashing block, aligned up to the block size.
			next := uint64(toU32(lastAddr(clash))) + 1
			if next <= cand {
				next = cand + size
			}
			cand = (next + size - 1) / size * size
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free /%d left in %v that avoids %d used blocks: add a pool to the policy's cidr.pools or pass --cidr", bits, pools, len(used))
}

func firstClash(sorted []netip.Prefix, p netip.Prefix) (netip.Prefix, bool) {
	for _, u := range sorted {
		if u.Overlaps(p) {
			return u, true
		}
	}
	return netip.Prefix{}, false
}

func toU32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func fromU32(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
