package fleetvalidate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

// claimEdit is a touched cluster's claim in the request and on the base
// (old is nil for a cluster the request adds).
type claimEdit struct {
	name     string
	old, cur *workloadcluster.Claim
}

// claimEdits pairs each touched cluster's claim with its claim on the base
// (fleettree.ClaimRel of its name, as newCluster reads it); a base file
// that cannot be read is a reason.
func claimEdits(claims []fleettree.ClaimFile, touched []string, base baseFunc) ([]claimEdit, []string) {
	var edits []claimEdit
	var reasons []string
	for _, name := range touched {
		c, ok := fleettree.FindClaim(claims, name)
		if !ok {
			continue
		}
		e := claimEdit{name: name, cur: c.Claim}
		b, err := base(fleettree.ClaimRel(name))
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("%s on the base: %v", fleettree.ClaimRel(name), err))
			continue
		}
		if b != nil {
			olds, err := fleettree.ParseClaims(b)
			if err != nil {
				reasons = append(reasons, fmt.Sprintf("%s on the base: %v", fleettree.ClaimRel(name), err))
				continue
			}
			for _, o := range olds {
				if o.Metadata.Name == name {
					e.old = o
				}
			}
		}
		edits = append(edits, e)
	}
	return edits, reasons
}

// ownerReasons says why the pull request's author may not have the
// touched clusters' claims merged without review (none: the author is a
// member of every owning team). Ownership is read from the base: the team
// label of the claim as it is on the base, or, for a cluster the request
// adds, the label it gives the new claim; the members of that team are
// those of the base's fleet policy, so a request can neither make its
// author a member nor move a cluster to another team and have it
// approved.
func ownerReasons(author string, edits []claimEdit, base baseFunc) []string {
	if len(edits) == 0 {
		return nil
	}
	if author == "" {
		return []string{"the pull request's author is unknown (pass --author): only members of a cluster's owning team may change it without review"}
	}
	b, err := base(policy.RelPath)
	if err != nil || b == nil {
		return []string{fmt.Sprintf("%s on the base: %v (cluster ownership needs the base's fleet policy)", policy.RelPath, err)}
	}
	pol, err := policy.Parse(b, policy.RelPath+" on the base")
	if err != nil {
		return []string{err.Error()}
	}
	var reasons []string
	for _, e := range edits {
		team := e.cur.Metadata.Labels[workloadcluster.TeamLabel]
		if e.old != nil {
			if was := e.old.Metadata.Labels[workloadcluster.TeamLabel]; was != team {
				reasons = append(reasons, fmt.Sprintf("%s: changes the owning team (label %s) from %q to %q", e.name, workloadcluster.TeamLabel, was, team))
				continue
			}
		}
		switch {
		case team == "":
			reasons = append(reasons, fmt.Sprintf("%s: the claim names no owning team (label %s, written by fleet cluster add --team): only the code owners may change it", e.name, workloadcluster.TeamLabel))
		case !pol.IsMember(team, author):
			reasons = append(reasons, fmt.Sprintf("%s: owned by team %s; %s is not a member (spec.teams.%s.members of the base's fleet policy)", e.name, team, author, team))
		}
	}
	return reasons
}

// editNotices says, for each claim the request changes on an existing
// cluster, what the change does that its owners may not expect: what
// cannot be undone, what replaces nodes, what adds cost. The gate's
// verdict carries them whether or not the request is auto-approved.
func editNotices(edits []claimEdit) []string {
	var out []string
	for _, e := range edits {
		if e.old == nil {
			continue
		}
		for _, n := range EditNotices(e.old.Spec, e.cur.Spec) {
			out = append(out, e.name+": "+n)
		}
	}
	return out
}

// EditNotices lists what an edit of a claim's spec from old to new does
// beyond the field itself.
func EditNotices(old, new workloadcluster.Spec) []string {
	var out []string
	if old.KubernetesVersion != new.KubernetesVersion {
		out = append(out, fmt.Sprintf("kubernetesVersion %s -> %s cannot be undone (EKS does not downgrade); the control plane is upgraded, then every node is replaced, one at a time",
			old.KubernetesVersion, new.KubernetesVersion))
	}
	if !maps.Equal(old.Tags, new.Tags) {
		out = append(out, "tags reach the nodes' launch template: EKS replaces every node, one at a time")
	}
	if !slices.Equal(old.Nodes.InstanceTypes, new.Nodes.InstanceTypes) {
		out = append(out, fmt.Sprintf("nodes.instanceTypes %s -> %s replaces the node group (EKS cannot change a managed node group's instance types in place): a second group is created with them, then every node of the current one is drained and deleted",
			strings.Join(old.Nodes.InstanceTypes, ","), strings.Join(new.Nodes.InstanceTypes, ",")))
	}
	if old.NATMode != new.NATMode {
		out = append(out, fmt.Sprintf("natMode %s -> %s: %d NAT gateway(s) and Elastic IP(s) instead of %d",
			old.NATMode, new.NATMode, new.ElasticIPs(), old.ElasticIPs()))
	}
	if new.Nodes.Desired < old.Nodes.Desired || new.Nodes.Max < old.Nodes.Max || new.Nodes.Min < old.Nodes.Min {
		out = append(out, fmt.Sprintf("nodes %d:%d:%d -> %d:%d:%d removes capacity: pods on the nodes EKS removes are evicted",
			old.Nodes.Min, old.Nodes.Desired, old.Nodes.Max, new.Nodes.Min, new.Nodes.Desired, new.Nodes.Max))
	}
	return out
}
