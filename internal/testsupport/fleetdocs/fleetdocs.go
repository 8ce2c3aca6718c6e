// Package fleetdocs gives tests the IAM documents the fleet writes for the
// example hub (clusterinfo.Example): the spokes' permissions boundary, the
// hub Crossplane's policy and every spoke role's own policy, as the program
// and the composition function write them.
package fleetdocs

import (
	"fmt"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// Documents returns the documents by what they are ("the spokes'
// boundary", "the hub's Crossplane policy", "spoke role <name>"), for a
// spoke "a" of the example hub.
func Documents() (map[string]policydoc.Document, error) {
	in, err := compose.InputFrom(clusterinfo.Example())
	if err != nil {
		return nil, fmt.Errorf("the example hub: %w", err)
	}
	env := in.Hub()
	docs := map[string]policydoc.Document{"the spokes' boundary": hubiam.SpokeBoundary(env), "the hub's Crossplane policy": hubiam.Crossplane(env)}
	roles, err := spokeiam.Roles(spokeiam.Spoke{
		Hub: env, Name: "a", OIDCIssuer: "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF",
		FluxRoleARN: in.FluxRoleARN, AdminPrincipalARNs: []string{"arn:aws:iam::" + env.AccountID + ":role/ops"},
		SubnetIDs: spokeiam.PendingSubnetIDs(6),
	})
	if err != nil {
		return nil, fmt.Errorf("the example spoke's roles: %w", err)
	}
	for _, r := range roles {
		if r.Inline != nil {
			docs["spoke role "+r.Name] = *r.Inline
		}
	}
	return docs, nil
}
