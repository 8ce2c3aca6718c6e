package fleetvalidate

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
)

// accessReasons returns why a pull request needs a human because it grants
// access to a spoke: a changed claim whose adminPrincipalArns or
// publicAccessCidrs differ from the base (a new claim that sets either
// counts as a change). Without the base (no --base-ref) any changed claim
// that sets either needs review.
func accessReasons(claims []fleettree.ClaimFile, changed []string, base func(string) ([]byte, error)) []string {
	touched := map[string]bool{}
	for _, f := range changed {
		touched[path.Clean(f)] = true
	}
	var out []string
	for _, c := range claims {
		if !touched[c.Rel] {
			continue
		}
		var old *workloadcluster.Claim
		known := false
		if base != nil {
			if b, err := base(c.Rel); err == nil {
				known = true
				prev, _ := fleettree.ParseClaims(b)
				for _, p := range prev {
					if p.Metadata.Name == c.Claim.Metadata.Name {
						old = p
					}
				}
			}
		}
		var oldAdmins, oldCIDRs []string
		if old != nil {
			oldAdmins, oldCIDRs = old.Spec.AdminPrincipalARNs, old.Spec.PublicAccessCIDRs
		}
		name, s := c.Claim.Metadata.Name, c.Claim.Spec
		for _, d := range []struct {
			field    string
			cur, old []string
		}{{"spec.adminPrincipalArns", s.AdminPrincipalARNs, oldAdmins}, {"spec.publicAccessCidrs", s.PublicAccessCIDRs, oldCIDRs}} {
			switch {
			case !known && len(d.cur) > 0:
				out = append(out, fmt.Sprintf("%s: cluster %s sets %s and the base is unknown (pass --base-ref): access changes need review", c.Rel, name, d.field))
			case known && !sameSet(d.cur, d.old):
				out = append(out, fmt.Sprintf("%s: cluster %s changes %s (%s -> %s): access changes need review", c.Rel, name, d.field, list(d.old), list(d.cur)))
			}
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func list(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	return "[" + strings.Join(s, ", ") + "]"
}
