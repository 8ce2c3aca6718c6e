// Package publiccidr checks the CIDR lists that open an EKS public API
// endpoint, for the hub (stack config) and for spokes (claims), with one set
// of rules:
//
//   - each entry is a canonical IPv4 CIDR (EKS rejects IPv6 and host bits);
//   - at most MaxEKS entries (EKS's own limit on publicAccessCidrs), or fewer
//     when the caller reserves some for itself;
//   - no entry is wider than /MinPrefixBits: a range that size is never one
//     site's egress, and a handful of them would open the endpoint to most of
//     the internet;
//   - the entries together must not cover the whole IPv4 space, so
//     0.0.0.0/1 + 128.0.0.0/1 is refused like 0.0.0.0/0.
package publiccidr

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

const (
	// MaxEKS is the most CIDRs EKS accepts in vpcConfig.publicAccessCidrs.
	MaxEKS = 40
	// MinPrefixBits is the widest prefix admitted (/8).
	MinPrefixBits = 8
)

// Validate checks cidrs for the field named field against MaxEKS.
func Validate(field string, cidrs []string) error {
	return ValidateN(field, cidrs, MaxEKS)
}

// ValidateN checks cidrs for field with at most max entries. Every problem is
// reported, each naming the field, the value and what is allowed.
func ValidateN(field string, cidrs []string, max int) error {
	var errs []error
	if len(cidrs) > max {
		errs = append(errs, fmt.Errorf("%s: has %d entries: at most %d are allowed", field, len(cidrs), max))
	}
	var prefixes []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for i, s := range cidrs {
		p, err := Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", field, i, err))
			continue
		}
		if seen[p] {
			errs = append(errs, fmt.Errorf("%s[%d]: %q is listed twice", field, i, s))
			continue
		}
		seen[p] = true
		prefixes = append(prefixes, p)
	}
	if len(prefixes) > 0 && CoversAll(prefixes) {
		errs = append(errs, fmt.Errorf("%s: %s together cover the whole internet (0.0.0.0/0): list only the networks that must reach the API endpoint", field, strings.Join(cidrs, ", ")))
	}
	return errors.Join(errs...)
}

// Parse parses one entry: a canonical IPv4 CIDR no wider than /MinPrefixBits.
func Parse(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() || p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 CIDR in canonical form (network address, e.g. 203.0.113.0/24)", s)
	}
	if p.Bits() < MinPrefixBits {
		return netip.Prefix{}, fmt.Errorf("%q is wider than /%d: list the networks that must reach the API endpoint (allowed: /%d to /32)", s, MinPrefixBits, MinPrefixBits)
	}
	return p, nil
}

// CoversAll reports whether the union of prefixes is the whole IPv4 space.
func CoversAll(prefixes []netip.Prefix) bool {
	type span struct{ lo, hi uint64 }
	spans := make([]span, 0, len(prefixes))
	for _, p := range prefixes {
		if !p.Addr().Is4() {
			continue
		}
		a := p.Masked().Addr().As4()
		lo := uint64(a[0])<<24 | uint64(a[1])<<16 | uint64(a[2])<<8 | uint64(a[3])
		spans = append(spans, span{lo, lo + 1<<(32-p.Bits())})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	var next uint64
	for _, s := range spans {
		if s.lo > next {
			return false
		}
		if s.hi > next {
			next = s.hi
		}
	}
	return next == 1<<32
}
