package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/hub"
	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// Both stack kinds read the deploying account (its ID, the provider's
// region, the stack's aws:profile) before registering anything, and refuse
// an account holding an EKS OIDC provider or a launch template their
// fleet did not make, naming it, with nothing created; an account holding
// the fleet's own (tagged as the program and the composition tag them) or
// other issuers' providers passes; an unreadable account is refused too.
func TestPreflight(t *testing.T) {
	foreign := preflight.Inventory{
		OIDCProviders: []preflight.OIDCProvider{{ARN: "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/WEB"}},
		LaunchTemplates: []preflight.LaunchTemplate{
			{Region: "eu-central-1", ID: "lt-0web", Name: "web-nodes", Tags: map[string]string{"team": "web"}},
		},
	}
	own := preflight.Inventory{
		OIDCProviders: []preflight.OIDCProvider{
			{ARN: "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB", Tags: map[string]string{fence.TagCluster: "mgmt"}},
			{ARN: "arn:aws:iam::111122223333:oidc-provider/token.actions.githubusercontent.com"},
		},
		LaunchTemplates: []preflight.LaunchTemplate{
			{Region: "eu-west-1", ID: "lt-0hub", Name: "mgmt-nodes", Tags: map[string]string{stacks.HubTagKey: "mgmt"}},
			{Region: "eu-central-1", ID: "lt-0pay", Name: "pay-nodes", Tags: map[string]string{fence.TagCluster: "mgmt-pay"}},
		},
	}
	for name, tc := range map[string]struct {
		reason  string
		file    string
		account string
		holds   preflight.Inventory
		readErr error
		// deployed: the hub's EKS cluster exists (a later pulumi up).
		deployed bool
		// want starts the program's error ("" passes).
		want string
	}{
		"hub, another team's": {
			reason: "the shared account holds another team's EKS provider and template",
			file:   "Pulumi.mgmt.yaml", account: mocks.AccountID, holds: foreign,
			want: `stack "test": account 111122223333 holds 2 EKS OIDC provider(s) or launch template(s) that hub mgmt's fleet did not make, nothing was created:` + "\n" +
				`  - EKS OIDC provider arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/WEB (no tags)` + "\n" +
				`  - launch template lt-0web (web-nodes) in eu-central-1 (tags team=web)`,
		},
		"spoke account, another team's": {
			reason: "a spoke account is checked as the hub's is",
			file:   "Pulumi.acct-payments.yaml", account: paymentsAccount, holds: foreign,
			want: `stack "test": account 222233334444 holds 2 EKS OIDC provider(s)`,
		},
		"hub, the fleet's own": {
			reason: "a later pulumi up finds the hub's and its spokes' own, and a CI issuer's provider",
			file:   "Pulumi.mgmt.yaml", account: mocks.AccountID, holds: own,
		},
		"hub upgrade, its own provider untagged": {
			reason: "a hub an earlier release deployed has its own OIDC provider untagged: the deployed hub's issuer is its own",
			file:   "Pulumi.mgmt.yaml", account: mocks.AccountID, deployed: true,
			holds: preflight.Inventory{OIDCProviders: []preflight.OIDCProvider{{ARN: "arn:aws:iam::111122223333:oidc-provider/" + strings.TrimPrefix(mocks.Issuer(), "https://")}}},
		},
		"first up, an untagged provider": {
			reason: "before the hub exists, no untagged EKS provider is its own",
			file:   "Pulumi.mgmt.yaml", account: mocks.AccountID,
			holds: preflight.Inventory{OIDCProviders: []preflight.OIDCProvider{{ARN: "arn:aws:iam::111122223333:oidc-provider/" + strings.TrimPrefix(mocks.Issuer(), "https://")}}},
			want:  `stack "test": account 111122223333 holds 1 EKS OIDC provider(s)`,
		},
		"spoke account, empty": {
			reason: "a new spoke account holds nothing",
			file:   "Pulumi.acct-payments.yaml", account: paymentsAccount,
		},
		"unreadable": {
			reason: "no right to list is a refusal, not a pass",
			file:   "Pulumi.mgmt.yaml", account: mocks.AccountID, readErr: errors.New("AccessDenied"),
			want: `stack "test": read account 111122223333's EKS OIDC providers and launch templates (the program refuses an account that holds another's, docs/iam.md): AccessDenied`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := accountMocks(tc.account)
			m.Holds, m.ReadErr = tc.holds, tc.readErr
			cfg := stackConfig(t, tc.file)
			if tc.deployed {
				m.Clusters = map[string]string{cfg["eks-fleet:hubName"]: cfg["eks-fleet:kubernetesVersion"]}
			}
			cfg[stacks.ProfileKey] = "platform"
			err := m.Run(cfg, hub.Program(m))
			wantQ := []preflight.Query{{AccountID: tc.account, Region: cfg[stacks.RegionKey], Profile: "platform"}}
			if diff := cmp.Diff(wantQ, m.Reads()); diff != "" {
				t.Errorf("%s: queries (-want +got):\n%s", tc.reason, diff)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				if len(m.SortedTypes()) == 0 {
					t.Errorf("%s: nothing registered", tc.reason)
				}
				return
			}
			// The engine's error wraps the program's ("1 error occurred: * ...").
			if err == nil || !strings.Contains(err.Error(), "* "+tc.want) {
				t.Fatalf("%s: got %v\nwant it to hold %s", tc.reason, err, tc.want)
			}
			if got := m.SortedTypes(); len(got) != 0 {
				t.Errorf("%s: registered %v", tc.reason, got)
			}
		})
	}
}

// A spoke-account stack's delete guard asks the deploying account, with
// the stack's query, for what it holds of the hub's spokes: tagged
// eksfleet.io/cluster, and roles named with the spokes' prefix; and
// refuses while any of this hub's remains.
func TestSpokeAccountDeleteGuard(t *testing.T) {
	for name, tc := range map[string]struct {
		reason string
		left   []preflight.SpokeResource
		want   string // the error's first line; "" passes
	}{
		"spokes left": {
			reason: "a spoke's cluster and role are still there",
			left: []preflight.SpokeResource{
				{Cluster: "mgmt-pay", ARN: "arn:aws:eks:eu-west-1:222233334444:cluster/mgmt-pay"},
				{ARN: "arn:aws:iam::222233334444:role/mgmt-spoke-pay-cluster"},
			},
			want: `stack "test": account 222233334444 still holds 2 resource(s) of hub mgmt's spokes, nothing was deleted:`,
		},
		"another hub's": {
			reason: "another hub's spokes in the account are not this stack's to guard",
			left:   []preflight.SpokeResource{{Cluster: "staging-pay", ARN: "arn:aws:ec2:eu-west-1:222233334444:vpc/vpc-1"}},
		},
		"none": {reason: "every spoke is gone"},
	} {
		t.Run(name, func(t *testing.T) {
			m := accountMocks(paymentsAccount)
			m.Left = tc.left
			var a *hub.Account
			cfg := stackConfig(t, "Pulumi.acct-payments.yaml")
			if err := m.Run(cfg, func(ctx *pulumi.Context) (err error) {
				a, err = hub.BuildAccount(ctx, accountConfig(t), m)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			err := a.Account.Guard.Check(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: %v", tc.reason, err)
			case tc.want != "" && (err == nil || strings.Split(err.Error(), "\n")[0] != tc.want):
				t.Errorf("%s: %v\nwant %s", tc.reason, err, tc.want)
			}
			q := preflight.Query{AccountID: paymentsAccount, Region: cfg[stacks.RegionKey]}
			if diff := cmp.Diff([]preflight.Query{q, q}, m.Reads()); diff != "" {
				t.Errorf("queries (the pre-flight check's, the guard's; -want +got):\n%s", diff)
			}
		})
	}
}
