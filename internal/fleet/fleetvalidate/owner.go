package fleetvalidate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

// ownerReasons says why the pull request's author may not have the
// touched clusters' claims merged without review (none: the author is a
// member of every owning team). Ownership is read from the base: the team
// label of the claim as it is on the base, or, for a cluster the request
// adds, the label it gives the new claim; the members of that team are
// those of the base's fleet policy, so a request can neither make its
// author a member nor move a cluster to another team and have it
// approved.
func ownerReasons(author string, claims []fleettree.ClaimFile, touched []string, base baseFunc) []string {
	if len(touched) == 0 {
		return nil
	}
	if base == nil {
		return []string{"cluster ownership is read from the base branch: pass --base-ref"}
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
	current := map[string]*workloadcluster.Claim{}
	for _, c := range claims {
		current[c.Claim.Metadata.Name] = c.Claim
	}
	var reasons []string
	for _, name := range touched {
		team := current[name].Metadata.Labels[workloadcluster.TeamLabel]
		old, err := baseClaim(base, name)
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		if old != nil {
			was := old.Metadata.Labels[workloadcluster.TeamLabel]
			if was != team {
				reasons = append(reasons, fmt.Sprintf("%s: changes the owning team (label %s) from %q to %q", name, workloadcluster.TeamLabel, was, team))
				continue
			}
		}
		switch {
		case team == "":
			reasons = append(reasons, fmt.Sprintf("%s: the claim names no owning team (label %s, written by fleet cluster add --team): only the code owners may change it", name, workloadcluster.TeamLabel))
		case !pol.IsMember(team, author):
			reasons = append(reasons, fmt.Sprintf("%s: owned by team %s; %s is not a member (spec.teams.%s.members of the base's fleet policy)", name, team, author, team))
		}
	}
	return reasons
}

// baseClaim is cluster name's claim on the base, nil when the base has none.
func baseClaim(base baseFunc, name string) (*workloadcluster.Claim, error) {
	b, err := base(fleettree.ClaimRel(name))
	if err != nil || b == nil {
		return nil, err
	}
	var c workloadcluster.Claim
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s on the base: %w", fleettree.ClaimRel(name), err)
	}
	return &c, nil
}

// editNotices says, for each claim the request changes on an existing
// cluster, what the change does that its owners may not expect: what
// cannot be undone, what replaces nodes, what adds cost. The gate's
// verdict carries them whether or not the request is auto-approved.
func editNotices(claims []fleettree.ClaimFile, touched []string, base baseFunc) []string {
	if base == nil {
		return nil
	}
	current := map[string]*workloadcluster.Claim{}
	for _, c := range claims {
		current[c.Claim.Metadata.Name] = c.Claim
	}
	var out []string
	for _, name := range touched {
		old, err := baseClaim(base, name)
		if err != nil || old == nil || current[name] == nil {
			continue
		}
		for _, n := range EditNotices(old.Spec, current[name].Spec) {
			out = append(out, name+": "+n)
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
		out = append(out, fmt.Sprintf("nodes.instanceTypes %s -> %s is not applied to the existing node group (EKS cannot change a managed node group's instance types in place)",
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
