package fleetcmd

import (
	"fmt"
	"strings"
	"testing"
)

// TestPublicAccessCIDRs: the flag's help says the hub's egress is added by
// the Composition and how many of one's own networks fit; more than that
// is refused before anything is written.
func TestPublicAccessCIDRs(t *testing.T) {
	cidrs := func(n int) string {
		var s []string
		for i := 0; i < n; i++ {
			s = append(s, fmt.Sprintf("203.0.%d.0/24", i))
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // in stdout (help) or stderr (failure)
	}{
		{"help names the hub's egress and the limit", []string{"--help"}, 0,
			[]string{"--public-access-cidrs", "hub's NAT egress IPs are always added by the Composition", "cluster-info HUB_EGRESS_CIDRS", "own networks", "at most 37"}},
		{"37 own networks fit", []string{"c1", "--public-access-cidrs", cidrs(37), "--dry-run"}, 0, nil},
		{"38 are refused", []string{"c1", "--public-access-cidrs", cidrs(38)}, 1, []string{"spec.publicAccessCidrs", "38", "at most 37"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.snapshot()
			r := f.run(testDeps(), append([]string{"cluster", "add"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			out := r.stdout
			if tt.wantCode != 0 {
				out = r.stderr
			}
			// cobra wraps nothing, but keep the check independent of spacing.
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range tt.want {
				if !strings.Contains(flat, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if f.snapshot() != before {
				t.Errorf("tree changed")
			}
		})
	}
}
