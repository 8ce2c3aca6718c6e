package compose

import (
	"fmt"
	"net/netip"
	"testing"
)

// Every VPC the XRD admits: each /16, /17, /18 network address in a sample
// of the IPv4 space, including the ones the old P&T lookup table listed.
func admittedVPCs() []string {
	var out []string
	for bits := MinVPCPrefix; bits <= MaxVPCPrefix; bits++ {
		step := 1 << (24 - bits) // third-octet step of a /bits network
		for third := 0; third < 256; third += step {
			out = append(out, fmt.Sprintf("10.20.%d.0/%d", third, bits))
		}
		out = append(out, fmt.Sprintf("172.16.0.0/%d", bits), fmt.Sprintf("192.168.0.0/%d", bits))
	}
	return out
}

func TestPlanSubnetsEveryAdmittedSize(t *testing.T) {
	for _, vpc := range admittedVPCs() {
		for azs := 2; azs <= MaxAZs; azs++ {
			t.Run(fmt.Sprintf("%s/%daz", vpc, azs), func(t *testing.T) {
				s, err := PlanSubnets(vpc, azs)
				if err != nil {
					t.Fatal(err)
				}
				v := netip.MustParsePrefix(vpc)
				if len(s.Private) != azs || len(s.Public) != azs {
					t.Fatalf("got %d private, %d public subnets, want %d each", len(s.Private), len(s.Public), azs)
				}
				all := append(append([]netip.Prefix{}, s.Private...), s.Public...)
				for i, a := range all {
					if a.Masked() != a {
						t.Errorf("%s has host bits", a)
					}
					if !v.Contains(a.Addr()) || a.Bits() < v.Bits() {
						t.Errorf("%s outside VPC %s", a, v)
					}
					for _, b := range all[i+1:] {
						if a.Overlaps(b) {
							t.Errorf("%s overlaps %s", a, b)
						}
					}
				}
				for _, p := range s.Private {
					if p.Bits() != v.Bits()+2 {
						t.Errorf("private %s: want /%d", p, v.Bits()+2)
					}
				}
				for _, p := range s.Public {
					if p.Bits() != v.Bits()+4 {
						t.Errorf("public %s: want /%d", p, v.Bits()+4)
					}
				}
			})
		}
	}
}

// Golden values equal to what the P&T Composition's lookup table produced.
func TestPlanSubnetsMatchesOldComposition(t *testing.T) {
	for _, tc := range []struct {
		vpc             string
		private, public []string
	}{
		{"10.20.0.0/16", []string{"10.20.0.0/18", "10.20.64.0/18", "10.20.128.0/18"}, []string{"10.20.192.0/20", "10.20.208.0/20", "10.20.224.0/20"}},
		{"10.20.128.0/17", []string{"10.20.128.0/19", "10.20.160.0/19", "10.20.192.0/19"}, []string{"10.20.224.0/21", "10.20.232.0/21", "10.20.240.0/21"}},
		{"10.20.192.0/18", []string{"10.20.192.0/20", "10.20.208.0/20", "10.20.224.0/20"}, []string{"10.20.240.0/22", "10.20.244.0/22", "10.20.248.0/22"}},
	} {
		s, err := PlanSubnets(tc.vpc, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if s.Private[i].String() != tc.private[i] || s.Public[i].String() != tc.public[i] {
				t.Errorf("%s az %d: got %s/%s, want %s/%s", tc.vpc, i, s.Private[i], s.Public[i], tc.private[i], tc.public[i])
			}
		}
	}
}

// Planted errors: every value the XRD refuses is refused here too, naming the field.
func TestPlanSubnetsRefuses(t *testing.T) {
	for _, tc := range []struct {
		vpc string
		azs int
	}{
		{"10.20.0.0/15", 2}, {"10.20.0.0/19", 2}, {"10.20.1.0/16", 2}, {"10.20.64.0/17", 3},
		{"fd00::/56", 2}, {"not-a-cidr", 2}, {"10.20.0.0/16", 1}, {"10.20.0.0/16", 4},
	} {
		if _, err := PlanSubnets(tc.vpc, tc.azs); err == nil {
			t.Errorf("PlanSubnets(%q, %d): want error", tc.vpc, tc.azs)
		}
	}
}
