package fleetvalidate

import (
	"path"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

// ChangeScope is what a pull request's changed files (relative to the
// tree) need proven beyond the hub tree and the fleet-wide checks: the
// clusters whose claim file or workloads folder changed. ok is false when
// a change can affect every spoke (anything else under gitops-system, the
// apps, or a file the rules do not know), which needs the full proof.
// Files outside the tree (prefixed "../") change nothing the proof sees.
func ChangeScope(changed []string, claims []fleettree.ClaimFile) (names []string, ok bool) {
	byFile := map[string][]string{}
	known := map[string]bool{}
	for _, c := range claims {
		byFile[c.Rel] = append(byFile[c.Rel], c.Claim.Metadata.Name)
		known[c.Claim.Metadata.Name] = true
	}
	names = []string{}
	for _, f := range changed {
		f = path.Clean(f)
		dir, base := path.Split(f)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case strings.HasPrefix(f, "../"):
		case f == policy.RelPath:
			// read by PolicyFindings over every claim; the hub tree is
			// built and validated in full either way.
		case dir == fleettree.ClaimsDir && base == fleettree.Kustomization:
			// the listing: checked fleet-wide by PolicyFindings.
		case dir == fleettree.ClaimsDir && (strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")):
			names = append(names, byFile[f]...) // none when the file was removed
		case strings.HasPrefix(f, fleettree.WorkloadsDir+"/"):
			name, _, _ := strings.Cut(strings.TrimPrefix(f, fleettree.WorkloadsDir+"/"), "/")
			if known[name] {
				names = append(names, name)
			}
		default:
			return nil, false
		}
	}
	slices.Sort(names)
	return slices.Compact(names), true
}
