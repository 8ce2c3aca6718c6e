// Package preflight is the program's check of the deploying account before
// it creates anything: the fence between spokes in one account assumes the
// account's EKS OIDC providers and launch templates are all the fleet's
// (docs/iam.md, "The fleet account SCP"), because the hub's Crossplane may
// tag an untagged EKS OIDC provider as a spoke's and may read every launch
// template's user data, and IAM gives no key to fence either by. The fleet
// account SCP stops new ones; this check refuses an account that already
// holds another's, naming each. And before a spoke account's stack is
// destroyed, CheckNoSpokes refuses while the account holds anything of the
// hub's spokes (remains.go).
//
// What the account holds is read through a Reader: the AWS SDK's
// (preflight/awsreader) when the program runs under the engine, the
// mocks' when it runs under pulumi.WithMocks.
package preflight

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// OIDCProvider is one of the account's IAM OIDC identity providers.
type OIDCProvider struct {
	ARN  string
	Tags map[string]string
}

// LaunchTemplate is one of the account's EC2 launch templates.
type LaunchTemplate struct {
	Region, ID, Name string
	Tags             map[string]string
}

// Inventory is what the check reads of an account: its IAM OIDC providers
// of EKS issuers (IsEKSProvider; a reader may leave out the others) and
// its launch templates in every region enabled for it.
type Inventory struct {
	OIDCProviders   []OIDCProvider
	LaunchTemplates []LaunchTemplate
}

// Query says which account to read, with which credentials.
type Query struct {
	// AccountID is the account the AWS provider deploys into; a reader
	// whose credentials reach another account refuses to read.
	AccountID string
	// Region is the provider's region (aws:region): the reader's first
	// calls go there.
	Region string
	// Profile is the stack's aws:profile, empty when unset.
	Profile string
}

// Reader reads an account.
type Reader interface {
	// Read reads the account's Inventory.
	Read(ctx context.Context, q Query) (Inventory, error)
	// Remains lists the account's resources that carry tag key, in every
	// region enabled for it, with the key's value as Cluster; and its IAM
	// roles whose name starts with rolePrefix, with no Cluster.
	Remains(ctx context.Context, q Query, key, rolePrefix string) ([]SpokeResource, error)
}

// EKSIssuerPrefix starts the URL of every EKS cluster's OIDC issuer, and
// so the resource part of its IAM provider's ARN after "oidc-provider/".
const EKSIssuerPrefix = "oidc.eks."

// IsEKSProvider reports whether an OIDC provider ARN is an EKS cluster's
// (arn:<partition>:iam::<account>:oidc-provider/oidc.eks.<region>...):
// only those are within the hub's Crossplane's reach, and so the check's.
func IsEKSProvider(arn string) bool {
	_, res, ok := strings.Cut(arn, ":oidc-provider/")
	return ok && strings.HasPrefix(res, EKSIssuerPrefix)
}

// fleetName reports whether v names hub's own cluster or one of its
// spokes' (<hub>-<spoke>, internal/iam/spokeiam ClusterName): the values
// the fleet's tags carry.
func fleetName(hub, v string) bool { return v == hub || strings.HasPrefix(v, hub+"-") }

// Fleet is whose resources the check accepts.
type Fleet struct {
	Hub string
	// HubIssuer is the deployed hub cluster's OIDC issuer (the URL
	// without https://), empty before the first pulumi up: its provider
	// is the hub's own, tagged or not (releases before c93014d left it
	// untagged; this pulumi up tags it).
	HubIssuer string
}

// OwnsOIDCProvider reports whether f's fleet made p: the hub's program
// tags its own eksfleet.io/cluster=<hub> (managementcluster
// TagOIDCProvider), the composition its spokes' <hub>-<spoke>; the
// deployed hub's is its own whatever its tags.
func (f Fleet) OwnsOIDCProvider(p OIDCProvider) bool {
	if f.HubIssuer != "" && strings.HasSuffix(p.ARN, ":oidc-provider/"+f.HubIssuer) {
		return true
	}
	return fleetName(f.Hub, p.Tags[fence.TagCluster])
}

// OwnsLaunchTemplate reports whether f's fleet made t: the hub's node
// template carries the program's eks-fleet/hub tag, a spoke's the
// composition's eksfleet.io/cluster=<hub>-<spoke>, and the one EKS makes
// for a node group without its own template (a spoke node group of an
// earlier release) eks:cluster-name.
func (f Fleet) OwnsLaunchTemplate(t LaunchTemplate) bool {
	return t.Tags[stacks.HubTagKey] == f.Hub ||
		fleetName(f.Hub, t.Tags[fence.TagCluster]) ||
		fleetName(f.Hub, t.Tags[fence.TagEKSNodeCluster])
}

// Finding is one OIDC provider or launch template the fleet does not own.
type Finding struct {
	// Kind is "EKS OIDC provider" or "launch template".
	Kind string
	// Where is the provider's ARN, or the template's ID, name and region.
	Where string
	Tags  map[string]string
}

func (f Finding) String() string {
	keys := slices.Sorted(maps.Keys(f.Tags))
	tags := make([]string, len(keys))
	for i, k := range keys {
		tags[i] = k + "=" + f.Tags[k]
	}
	t := "no tags"
	if len(tags) > 0 {
		t = "tags " + strings.Join(tags, ", ")
	}
	return fmt.Sprintf("%s %s (%s)", f.Kind, f.Where, t)
}

// Foreign lists, in a stable order, what inv holds that f's fleet does
// not own: EKS OIDC providers first, then launch templates by region.
func Foreign(f Fleet, inv Inventory) []Finding {
	var out []Finding
	ps := slices.Clone(inv.OIDCProviders)
	slices.SortFunc(ps, func(a, b OIDCProvider) int { return strings.Compare(a.ARN, b.ARN) })
	for _, p := range ps {
		if IsEKSProvider(p.ARN) && !f.OwnsOIDCProvider(p) {
			out = append(out, Finding{Kind: "EKS OIDC provider", Where: p.ARN, Tags: p.Tags})
		}
	}
	ts := slices.Clone(inv.LaunchTemplates)
	slices.SortFunc(ts, func(a, b LaunchTemplate) int {
		if c := strings.Compare(a.Region, b.Region); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, t := range ts {
		if !f.OwnsLaunchTemplate(t) {
			out = append(out, Finding{Kind: "launch template", Where: fmt.Sprintf("%s (%s) in %s", t.ID, t.Name, t.Region), Tags: t.Tags})
		}
	}
	return out
}

// Error is the check's refusal of an account.
type Error struct {
	Stack, Hub, AccountID string
	Findings              []Finding
}

func (e *Error) Error() string {
	lines := []string{fmt.Sprintf("stack %q: account %s holds %d EKS OIDC provider(s) or launch template(s) that hub %s's fleet did not make, nothing was created:", e.Stack, e.AccountID, len(e.Findings), e.Hub)}
	for _, f := range e.Findings {
		lines = append(lines, "  - "+f.String())
	}
	lines = append(lines,
		"The spokes' fence assumes every EKS OIDC provider and launch template of the account is the fleet's: the hub's Crossplane may tag an untagged EKS OIDC provider as a spoke's, and reads every launch template's user data (docs/iam.md, \"The fleet account SCP\").",
		"Fix: deploy into an account that holds the fleet alone, or delete or move what is listed; then attach the stack output "+SCPOutput+" to the account so no other principal creates them.")
	return strings.Join(lines, "\n")
}

// SCPOutput is the stack output, of the hub's stack and of each spoke
// account's, that holds the fleet account SCP (hub.OutFleetAccountSCP).
const SCPOutput = "fleetAccountScp"

// Check reads the account through r and refuses it, naming each, when it
// holds an EKS OIDC provider or a launch template f's fleet does not own.
func Check(ctx context.Context, r Reader, stack string, f Fleet, q Query) error {
	inv, err := r.Read(ctx, q)
	if err != nil {
		return fmt.Errorf("stack %q: read account %s's EKS OIDC providers and launch templates (the program refuses an account that holds another's, docs/iam.md): %w", stack, q.AccountID, err)
	}
	if found := Foreign(f, inv); len(found) > 0 {
		return &Error{Stack: stack, Hub: f.Hub, AccountID: q.AccountID, Findings: found}
	}
	return nil
}
