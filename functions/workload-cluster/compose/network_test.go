package compose

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
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

// TestSubnetZones (NM3): subnets go into zones by ID, the first
// spec.availabilityZones the hub looked up for the region; a subnet that
// exists by zone name keeps it (the placement is immutable); a region the
// hub has no zones for, or too few, is an error naming what to change.
func TestSubnetZones(t *testing.T) {
	byName := func(az string) Object {
		return Object{"spec": Object{"forProvider": Object{"availabilityZone": az}}}
	}
	tests := map[string]struct {
		reason   string
		region   string
		azs      int
		zones    map[string][]string
		observed map[string]Object
		want     map[string]Object // subnet key -> placement fields
		wantErr  []string
	}{
		"new spoke": {
			reason: "the first zones by ID", region: "us-east-1", azs: 2,
			zones: map[string][]string{"us-east-1": {"use1-az6", "use1-az1", "use1-az2"}},
			want: map[string]Object{
				"subnet-public-a": {"availabilityZoneId": "use1-az6"}, "subnet-private-a": {"availabilityZoneId": "use1-az6"},
				"subnet-public-b": {"availabilityZoneId": "use1-az1"}, "subnet-private-b": {"availabilityZoneId": "use1-az1"},
			},
		},
		"spoke composed by zone name before": {
			reason: "an existing subnet keeps its zone; a new zone's go by ID", region: "eu-west-1", azs: 3,
			zones:    map[string][]string{"eu-west-1": {"euw1-az1", "euw1-az2", "euw1-az3"}},
			observed: map[string]Object{"subnet-public-a": byName("eu-west-1a"), "subnet-private-a": byName("eu-west-1a")},
			want: map[string]Object{
				"subnet-public-a": {"availabilityZone": "eu-west-1a"}, "subnet-private-a": {"availabilityZone": "eu-west-1a"},
				"subnet-public-b": {"availabilityZoneId": "euw1-az2"}, "subnet-private-c": {"availabilityZoneId": "euw1-az3"},
			},
		},
		"late-initialized ID": {
			reason: "a subnet the provider filled both fields of stays by ID", region: "eu-west-1", azs: 2,
			zones: map[string][]string{"eu-west-1": {"euw1-az1", "euw1-az2"}},
			observed: map[string]Object{"subnet-public-a": {"spec": Object{"forProvider": Object{
				"availabilityZone": "eu-west-1a", "availabilityZoneId": "euw1-az1"}}}},
			want: map[string]Object{"subnet-public-a": {"availabilityZoneId": "euw1-az1"}},
		},
		"region the hub did not look up": {
			reason: "the stack's spokeRegions lacks it", region: "ap-south-1", azs: 2,
			zones:   map[string][]string{"eu-west-1": {"euw1-az1", "euw1-az2"}, "us-east-1": {"use1-az1", "use1-az2"}},
			wantErr: []string{`spec.region "ap-south-1"`, "SPOKE_ZONE_IDS has eu-west-1, us-east-1", "spokeRegions"},
		},
		"fewer zones than asked": {
			reason: "EKS refuses the others", region: "us-east-1", azs: 3,
			zones:   map[string][]string{"us-east-1": {"use1-az1", "use1-az2"}},
			wantErr: []string{"spec.availabilityZones 3", "region us-east-1 has 2 zones EKS accepts (use1-az1, use1-az2)"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := testParams(t)
			p.Spec.Region, p.Spec.AvailabilityZones = tc.region, tc.azs
			p.Input.SpokeZoneIDs = tc.zones
			p.Observed = tc.observed
			objs, err := Network(p)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error (%s)", tc.reason)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range tc.want {
				fp := objs[key]["spec"].(Object)["forProvider"].(Object)
				got := Object{}
				for _, f := range []string{"availabilityZone", "availabilityZoneId"} {
					if v, ok := fp[f]; ok {
						got[f] = v
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s placement %v, want %v (%s)", key, got, want, tc.reason)
				}
			}
		})
	}
}
