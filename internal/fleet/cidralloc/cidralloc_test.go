package cidralloc

import (
	"net/netip"
	"strings"
	"testing"
)

func pp(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestParse(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{"10.1.0.0/16", ""},
		{"10.1.2.0/16", "host bits"},
		{"10.1.0.0", "not a CIDR"},
		{"fd00::/64", "not an IPv4"},
		{"", "not a CIDR"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Parse(%q) = %v, want %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestFindFree(t *testing.T) {
	tests := []struct {
		name    string
		pools   []netip.Prefix
		bits    int
		used    []netip.Prefix
		want    string
		wantErr bool
	}{
		{"empty pool", pp("10.0.0.0/8"), 16, nil, "10.0.0.0/16", false},
		{"skips hub", pp("10.0.0.0/8"), 16, pp("10.0.0.0/16"), "10.1.0.0/16", false},
		{"skips a smaller block inside", pp("10.0.0.0/8"), 16, pp("10.0.0.0/16", "10.1.4.0/24"), "10.2.0.0/16", false},
		{"fills a gap", pp("10.0.0.0/8"), 16, pp("10.0.0.0/16", "10.2.0.0/16"), "10.1.0.0/16", false},
		{"big used block", pp("10.0.0.0/8"), 20, pp("10.0.0.0/12"), "10.16.0.0/20", false},
		{"second pool", pp("10.0.0.0/15", "172.16.0.0/12"), 16, pp("10.0.0.0/16", "10.1.0.0/16"), "172.16.0.0/16", false},
		{"full", pp("10.0.0.0/15"), 16, pp("10.0.0.0/15"), "", true},
		{"pool smaller than block", pp("10.0.0.0/24"), 16, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindFree(tt.pools, tt.bits, tt.used)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && got.String() != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			for _, u := range tt.used {
				if err == nil && got.Overlaps(u) {
					t.Errorf("%s overlaps used %s", got, u)
				}
			}
		})
	}
}

func TestFindOverlaps(t *testing.T) {
	b := func(owner, p string) Block { return Block{Owner: owner, Prefix: netip.MustParsePrefix(p)} }
	tests := []struct {
		name   string
		blocks []Block
		want   []string // "A|B"
	}{
		{"disjoint", []Block{b("a", "10.1.0.0/16"), b("b", "10.2.0.0/16"), b("hub", "10.0.0.0/16")}, nil},
		{"same", []Block{b("a", "10.1.0.0/16"), b("b", "10.1.0.0/16")}, []string{"a|b"}},
		{"nested", []Block{b("big", "10.0.0.0/8"), b("x", "10.3.0.0/16"), b("y", "10.200.0.0/16")}, []string{"big|x", "big|y"}},
		{"adjacent", []Block{b("a", "10.1.0.0/17"), b("b", "10.1.128.0/17")}, nil},
		{"partial chain", []Block{b("a", "10.1.0.0/16"), b("b", "10.1.128.0/17"), b("c", "10.2.0.0/16")}, []string{"a|b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range FindOverlaps(tt.blocks) {
				got = append(got, o.A.Owner+"|"+o.B.Owner)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
