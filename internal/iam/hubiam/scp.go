package hubiam

import (
	"fmt"
	"slices"

	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// QuotaSCP is AWS Organizations' size limit of a service control policy.
const QuotaSCP = 5120

// KindSCP is a Usage of a service control policy.
const KindSCP = "scp"

// The service control policy of an account that holds a fleet. Two rows
// of docs/iam.md are open because IAM gives no key to fence them by: the
// hub's Crossplane may tag any untagged EKS OIDC provider as a spoke's
// (IAM authorizes CreateOpenIDConnectProvider's tags as a
// TagOpenIDConnectProvider on a provider with no tags), and may read every
// launch template's user data (ec2:DescribeLaunchTemplateVersions has no
// resource type). Both are harmless in an account whose EKS OIDC providers
// and launch templates are all the fleet's. The SCP makes that an
// invariant: only the fleet's principals create them there. Service-linked
// roles (EKS's node group role, which makes templates for node groups
// without one) are outside every SCP (AWS Organizations, "SCP effects on
// permissions"), so the SCP also keeps EKS clusters and node groups to the
// fleet's principals. The program's pre-flight check (internal/hub/
// preflight) refuses an account that holds another's already.

// FleetPrincipals are the principals that create EKS OIDC providers and
// launch templates in the accounts of hub e: its Crossplane role, the
// account role of each spoke account, and deployers (the identities that
// run pulumi up of the hub's stack, which makes the hub's own).
func FleetPrincipals(e Env, deployers []string) []string {
	out := []string{e.CrossplaneRoleARN(), fmt.Sprintf("arn:%s:iam::*:role/%s", e.Partition, AccountRoleName(e.HubName))}
	for _, d := range slices.Sorted(slices.Values(deployers)) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// FleetAccountSCP is the service control policy to attach to every account
// of hub e's fleet (the hub's, each spoke account): no principal but
// FleetPrincipals creates an EKS OIDC provider, a launch template (or adds
// a version to one), an EKS cluster or a node group.
func FleetAccountSCP(e Env, deployers []string) policydoc.Document {
	notFleet := map[string]map[string]any{"ArnNotLike": {"aws:PrincipalArn": FleetPrincipals(e, deployers)}}
	return policydoc.NewDocument(
		policydoc.Statement{
			Sid: "FleetOnlyEKSOIDCProviders", Effect: policydoc.Deny,
			Action:    []string{"iam:CreateOpenIDConnectProvider"},
			Resource:  []string{fmt.Sprintf("arn:%s:iam::*:oidc-provider/oidc.eks.*", e.Partition)},
			Condition: notFleet,
		},
		policydoc.Statement{
			Sid: "FleetOnlyLaunchTemplates", Effect: policydoc.Deny,
			Action:    []string{"ec2:CreateLaunchTemplate", "ec2:CreateLaunchTemplateVersion"},
			Resource:  []string{"*"},
			Condition: notFleet,
		},
		// EKS's node group service-linked role makes a launch template for
		// every node group created without one, beyond any SCP: only the
		// fleet's principals create clusters and node groups, so those
		// templates are the fleet's too.
		policydoc.Statement{
			Sid: "FleetOnlyEKSClusters", Effect: policydoc.Deny,
			Action:    []string{"eks:CreateCluster", "eks:CreateNodegroup"},
			Resource:  []string{"*"},
			Condition: notFleet,
		},
	)
}

// FleetAccountSCPUsage is FleetAccountSCP against its quota.
func FleetAccountSCPUsage(e Env, deployers []string) Usage {
	d := FleetAccountSCP(e, deployers)
	return Usage{Role: "organization", Kind: KindSCP, ARN: "scp/" + e.HubName + "-fleet-account", Size: policydoc.Size(d), Quota: QuotaSCP, Document: d.MustJSON()}
}
