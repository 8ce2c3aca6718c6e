package clusterinfo

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// HUB_EGRESS_CIDRS must read as a YAML list once Flux substitutes it as the
// whole value of a field.
func TestFormatCIDRsSubstitutesAsAList(t *testing.T) {
	cases := []struct {
		name  string
		cidrs []string
		want  string
	}{
		{"none", nil, "[]"},
		{"one", []string{"198.51.100.10/32"}, `["198.51.100.10/32"]`},
		{"three", []string{"198.51.100.10/32", "198.51.100.11/32", "203.0.113.7/32"}, `["198.51.100.10/32","198.51.100.11/32","203.0.113.7/32"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := FormatCIDRs(c.cidrs)
			if got != c.want {
				t.Fatalf("FormatCIDRs(%v) = %s, want %s", c.cidrs, got, c.want)
			}
			var doc struct {
				L []string `yaml:"publicAccessCidrs"`
			}
			if err := yaml.Unmarshal([]byte("publicAccessCidrs: "+got+"\n"), &doc); err != nil {
				t.Fatalf("substituted YAML: %v", err)
			}
			if len(doc.L) != len(c.cidrs) || (len(c.cidrs) > 0 && !slices.Equal(doc.L, c.cidrs)) {
				t.Errorf("substituted YAML reads %v, want %v", doc.L, c.cidrs)
			}
			back, err := ParseCIDRs(got)
			if err != nil || len(back) != len(c.cidrs) || (len(c.cidrs) > 0 && !slices.Equal(back, c.cidrs)) {
				t.Errorf("ParseCIDRs(%s) = %v, %v", got, back, err)
			}
		})
	}
	if _, err := ParseCIDRs("198.51.100.10/32"); err == nil {
		t.Error("ParseCIDRs accepted a bare CIDR")
	}
}

func TestExampleEgress(t *testing.T) {
	if !slices.Contains(Names(), HubEgressCIDRs) {
		t.Fatalf("Names() lacks %s", HubEgressCIDRs)
	}
	cidrs, err := ParseCIDRs(Example().HubEgressCIDRs)
	if err != nil || len(cidrs) == 0 {
		t.Fatalf("Example().HubEgressCIDRs %q: %v", Example().HubEgressCIDRs, err)
	}
	testNet := netip.MustParsePrefix("198.51.100.0/24")
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil || p.Bits() != 32 || !testNet.Contains(p.Addr()) {
			t.Errorf("example egress %q: want a /32 in TEST-NET-2 %s", c, testNet)
		}
	}
}

func TestFromMap(t *testing.T) {
	full := Example().Map()
	cases := map[string]struct {
		reason  string
		edit    func(map[string]string)
		wantErr []string
	}{
		"round trip": {reason: "Map's data gives back the same values", edit: func(map[string]string) {}},
		"missing": {reason: "a variable left out is named", edit: func(m map[string]string) { delete(m, SealingKMSKeyARN) },
			wantErr: []string{"cluster-info variable " + SealingKMSKeyARN + " is missing"}},
		"unknown": {reason: "a variable the contract lacks is named", edit: func(m map[string]string) { m["NOT_A_VARIABLE"] = "x" },
			wantErr: []string{"cluster-info has no variable NOT_A_VARIABLE"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data := maps.Clone(full)
			tc.edit(data)
			got, err := FromMap(data)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				if got != Example() {
					t.Errorf("%s: got %+v, want %+v", tc.reason, got, Example())
				}
				return
			}
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %v, want %q", tc.reason, err, w)
				}
			}
		})
	}
}
