package publiccidr

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("203.0.%d.0/24", i)
		}
		return out
	}
	halves := []string{"0.0.0.0/1", "128.0.0.0/1"}
	var eighths []string
	for i := 0; i < 256; i += 32 {
		eighths = append(eighths, fmt.Sprintf("%d.0.0.0/3", i))
	}
	var slash8s []string
	for i := 0; i < 40; i++ {
		slash8s = append(slash8s, fmt.Sprintf("%d.0.0.0/8", i))
	}
	tests := []struct {
		name  string
		cidrs []string
		want  []string // substrings of the error; none means valid
	}{
		{"one site", []string{"203.0.113.0/24"}, nil},
		{"a host", []string{"198.51.100.7/32"}, nil},
		{"forty", many(40), nil},
		{"forty /8s", slash8s, nil},
		{"forty-one", many(41), []string{"has 41 entries: at most 40"}},
		{"internet", []string{"0.0.0.0/0"}, []string{`"0.0.0.0/0" is wider than /8`}},
		{"halves", halves, []string{"wider than /8"}},
		{"eighths", eighths, []string{"wider than /8"}},
		{"host bits", []string{"203.0.113.1/24"}, []string{"canonical form"}},
		{"ipv6", []string{"2001:db8::/32"}, []string{"not an IPv4 CIDR"}},
		{"garbage", []string{"everyone"}, []string{"field[0]"}},
		{"twice", []string{"203.0.113.0/24", "203.0.113.0/24"}, []string{"field[1]: \"203.0.113.0/24\" is listed twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate("field", tc.cidrs)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate(%v) = %v, want nil", tc.cidrs, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%v) = nil, want an error containing %q", tc.cidrs, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate(%v) = %q, want it to contain %q", tc.cidrs, err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "field") {
				t.Errorf("error %q does not name the field first", err)
			}
		})
	}
}

func TestValidateNReservesEntries(t *testing.T) {
	if err := ValidateN("spec.publicAccessCidrs", []string{"203.0.113.0/24", "198.51.100.0/24"}, 1); err == nil || !strings.Contains(err.Error(), "at most 1") {
		t.Fatalf("ValidateN with max 1 = %v, want a count error", err)
	}
}

func TestCoversAll(t *testing.T) {
	p := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	tests := []struct {
		name string
		in   []netip.Prefix
		want bool
	}{
		{"zero", p("0.0.0.0/0"), true},
		{"halves", p("128.0.0.0/1", "0.0.0.0/1"), true},
		{"overlapping", p("0.0.0.0/1", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"), true},
		{"gap at the end", p("0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3"), false},
		{"gap at the start", p("128.0.0.0/1", "64.0.0.0/2"), false},
		{"gap in the middle", p("0.0.0.0/2", "128.0.0.0/1"), false},
		{"one site", p("203.0.113.0/24"), false},
	}
	for _, tc := range tests {
		if got := CoversAll(tc.in); got != tc.want {
			t.Errorf("%s: CoversAll(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}

// With the /8 floor, covering the internet takes 256 entries; the union check
// still refuses it should a caller allow that many.
func TestValidateNRefusesUnionOfTheInternet(t *testing.T) {
	var all []string
	for i := 0; i < 256; i++ {
		all = append(all, fmt.Sprintf("%d.0.0.0/8", i))
	}
	err := ValidateN("f", all, len(all))
	if err == nil || !strings.Contains(err.Error(), "cover the whole internet") {
		t.Fatalf("ValidateN(256 /8s) = %v, want the union refused", err)
	}
	if err := ValidateN("f", all[1:], len(all)); err != nil {
		t.Fatalf("ValidateN(255 /8s) = %v, want nil (0.0.0.0/8 is left out)", err)
	}
}
