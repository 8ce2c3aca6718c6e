package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
)

// The check before a spoke account's stack is destroyed: the hub's
// Crossplane deletes a spoke's resources in that account through the role
// the stack made, so the stack may not go while any of them remains
// (they would be left in the account, out of the fleet's reach).

// SpokeResource is one resource of a spoke that an account holds.
type SpokeResource struct {
	// Cluster is its eksfleet.io/cluster tag (<hub>-<spoke>); empty for a
	// role found by its name.
	Cluster string
	ARN     string
}

// Remains are what an account holds of hub's spokes, among what r listed:
// resources tagged eksfleet.io/cluster <hub> or <hub>-<spoke>, and every
// role named with the spokes' role prefix (r lists only those), sorted by
// cluster then ARN.
func Remains(hub string, listed []SpokeResource) []SpokeResource {
	var out []SpokeResource
	for _, s := range listed {
		if s.Cluster == "" || fleetName(hub, s.Cluster) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b SpokeResource) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		return strings.Compare(a.ARN, b.ARN)
	})
	return slices.CompactFunc(out, func(a, b SpokeResource) bool { return a == b })
}

// TagKey is the tag every AWS resource of a spoke carries.
const TagKey = fence.TagCluster

// RemainsError refuses to delete a spoke account's stack.
type RemainsError struct {
	Stack, Hub, AccountID string
	// Role is the account role the stack would delete.
	Role      string
	Resources []SpokeResource
}

// maxListed is how many ARNs the message shows for each spoke.
const maxListed = 5

func (e *RemainsError) Error() string {
	lines := []string{fmt.Sprintf("stack %q: account %s still holds %d resource(s) of hub %s's spokes, nothing was deleted:", e.Stack, e.AccountID, len(e.Resources), e.Hub)}
	var groups []string
	by := map[string][]string{}
	for _, r := range e.Resources {
		g := r.Cluster
		if g == "" {
			g = "spoke roles"
		}
		if _, ok := by[g]; !ok {
			groups = append(groups, g)
		}
		by[g] = append(by[g], r.ARN)
	}
	for _, g := range groups {
		arns := by[g]
		more := ""
		if len(arns) > maxListed {
			more = fmt.Sprintf(" and %d more", len(arns)-maxListed)
			arns = arns[:maxListed]
		}
		lines = append(lines, fmt.Sprintf("  - %s: %s%s", g, strings.Join(arns, ", "), more))
	}
	lines = append(lines,
		"The hub's Crossplane deletes them through this stack's role "+e.Role+"; without it they would stay in the account, out of the fleet's reach.",
		"Fix: remove those spokes' claims (fleet cluster remove <name>, then merge) and wait until fleet status no longer lists them; what remains of a spoke whose claim is already gone is what break glass left of its apps (README, \"A spoke whose API cannot be reached\"): delete it by hand. Then run pulumi destroy --run-program again.")
	return strings.Join(lines, "\n")
}

// CheckNoSpokes reads, through r, what the account still holds of hub's
// spokes, and refuses while anything does.
func CheckNoSpokes(ctx context.Context, r Reader, stack, hub, role, rolePrefix string, q Query) error {
	listed, err := r.Remains(ctx, q, TagKey, rolePrefix)
	if err != nil {
		return fmt.Errorf("stack %q: read what account %s holds of hub %s's spokes (the stack is not destroyed while its role is the only way to delete them): %w", stack, q.AccountID, hub, err)
	}
	if rs := Remains(hub, listed); len(rs) > 0 {
		return &RemainsError{Stack: stack, Hub: hub, AccountID: q.AccountID, Role: role, Resources: rs}
	}
	return nil
}
