package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/gitops-fleet/eks-fleet/components/deleteguard"
	"github.com/gitops-fleet/eks-fleet/components/irsarole"
	"github.com/gitops-fleet/eks-fleet/components/spokeaccount"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/hub"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// paymentsAccount is the account Pulumi.acct-payments.yaml deploys into.
const paymentsAccount = "222233334444"

// accountMocks are mocks whose caller is in account.
func accountMocks(account string) *mocks.Mocks {
	m := mocks.New()
	m.Account = account
	m.CallerARN = "arn:aws:iam::" + account + ":role/platform-deployer"
	return m
}

// A spoke-account stack, run as main runs it, makes the SpokeAccount
// component and nothing else (no cluster, no key, no Flux), holding
// exactly hubiam's documents for the account, and outputs the fleet
// policy's entry.
func TestSpokeAccountStack(t *testing.T) {
	m := accountMocks(paymentsAccount)
	var outputs map[string]pulumi.Output
	err := m.Run(stackConfig(t, "Pulumi.acct-payments.yaml"), func(ctx *pulumi.Context) error {
		if err := hub.Program(m)(ctx); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("hub.Program: %v", err)
	}
	want := []string{
		"aws:iam/policy:Policy=2", "aws:iam/role:Role=1",
		"aws:iam/rolePolicyAttachment:RolePolicyAttachment=1", deleteguard.Type + "=1", spokeaccount.Type + "=1",
	}
	if got := m.SortedTypes(); !slices.Equal(got, want) {
		t.Errorf("registered %v, want %v", got, want)
	}
	comp := m.One(spokeaccount.Type, hub.AccountResource)
	for _, r := range m.Resources() {
		if r.Custom && r.Parent != comp.URN {
			t.Errorf("%s %s not parented to the SpokeAccount", r.Type, r.Name)
		}
	}
	env := hubiam.Env{Partition: "aws", AccountID: mocks.AccountID, Region: "eu-west-1", HubName: "mgmt"}.InAccount(paymentsAccount)
	doc := func(typ, name, field string) string {
		r := m.One(typ, name)
		if r == nil {
			t.Fatalf("no %s %s", typ, name)
		}
		return r.Inputs[resource.PropertyKey(field)].StringValue()
	}
	for _, c := range []struct{ what, got, want string }{
		{"boundary", doc("aws:iam/policy:Policy", hub.AccountResource+"-boundary", "policy"), hubiam.SpokeBoundary(env).MustJSON()},
		{"account role policy", doc("aws:iam/policy:Policy", hub.AccountResource, "policy"), hubiam.Crossplane(env).MustJSON()},
		{"account role trust", doc("aws:iam/role:Role", hub.AccountResource, "assumeRolePolicy"), hubiam.AccountRoleTrust(env, "7c9e6679-7425-40de-944b-e07fc1f90ae7").MustJSON()},
		{"boundary name", doc("aws:iam/policy:Policy", hub.AccountResource+"-boundary", "name"), "mgmt-spoke-boundary"},
		{"role name", doc("aws:iam/role:Role", hub.AccountResource, "name"), "mgmt-crossplane-account"},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n%s", c.what, cmp.Diff(c.want, c.got))
		}
	}
	// The account role trusts the hub's Crossplane role in the hub's account.
	if !strings.Contains(doc("aws:iam/role:Role", hub.AccountResource, "assumeRolePolicy"), `"arn:aws:iam::111122223333:role/mgmt-crossplane-aws"`) {
		t.Error("the account role does not trust the hub's Crossplane role in the hub's account")
	}
	tags := m.One("aws:iam/role:Role", hub.AccountResource).Inputs["tags"].ObjectValue()
	if tags["eks-fleet/hub"].StringValue() != "mgmt" || tags["eks-fleet/stack"].StringValue() != mocks.Stack || tags["owner"].StringValue() != "payments" {
		t.Errorf("role tags %v", tags)
	}

	// The outputs, through the program's own Account.
	m2 := accountMocks(paymentsAccount)
	if err := m2.Run(stackConfig(t, "Pulumi.acct-payments.yaml"), func(ctx *pulumi.Context) error {
		a, err := hub.BuildAccount(ctx, accountConfig(t), m2)
		if a != nil {
			outputs = a.Outputs
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for name, o := range outputs {
		r, err := internals.UnsafeAwaitOutput(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = r.Value
	}
	entry, _ := json.Marshal(spokeaccounts.Account{ID: paymentsAccount, RoleARN: "arn:aws:iam::" + paymentsAccount + ":role/mgmt-crossplane-account",
		ExternalID: "7c9e6679-7425-40de-944b-e07fc1f90ae7"})
	wantOut := map[string]any{
		hub.OutAccountID:          paymentsAccount,
		hub.OutAccountRoleARN:     "arn:aws:iam::" + paymentsAccount + ":role/mgmt-crossplane-account",
		hub.OutAccountExternalID:  "7c9e6679-7425-40de-944b-e07fc1f90ae7",
		hub.OutAccountBoundaryARN: "arn:aws:iam::" + paymentsAccount + ":policy/mgmt-spoke-boundary",
		hub.OutFleetPolicyAccount: string(entry),
		hub.OutAccountSCP:         hubiam.FleetAccountSCP(env, []string{"arn:aws:iam::" + paymentsAccount + ":role/platform-deployer"}).MustJSON(),
		hub.OutAccountNextSteps:   hub.AccountNextSteps(accountConfig(t), paymentsAccount),
	}
	if d := cmp.Diff(wantOut, got); d != "" {
		t.Errorf("outputs (-want +got):\n%s", d)
	}
}

func accountConfig(t *testing.T) stacks.AccountConfig {
	t.Helper()
	c, errs := stacks.AccountFromValues(stackConfig(t, "Pulumi.acct-payments.yaml"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return c
}

// Refused before anything is created, naming the setting: a spoke-account
// stack deployed into the hub's own account, and a hub that lists its own
// account among its spoke accounts.
func TestAccountsRefuseTheHubsOwnAccount(t *testing.T) {
	m := accountMocks(mocks.AccountID)
	err := m.Run(stackConfig(t, "Pulumi.acct-payments.yaml"), hub.Program(m))
	if err == nil || !strings.Contains(err.Error(), `eks-fleet:hubAccountId: invalid value "111122223333": allowed an account other than the one this stack deploys into`) {
		t.Errorf("spoke-account stack in the hub's account: %v", err)
	}
	if got := m.SortedTypes(); len(got) != 0 {
		t.Errorf("created %v", got)
	}

	cfg := stackConfig(t, "Pulumi.mgmt.yaml")
	cfg["eks-fleet:spokeAccounts"] = `["` + paymentsAccount + `","` + mocks.AccountID + `"]`
	m, _, err = runProgram(t, cfg)
	if err == nil || !strings.Contains(err.Error(), `eks-fleet:spokeAccounts: invalid value "111122223333": allowed accounts other than the hub's own`) {
		t.Errorf("hub listing its own account: %v", err)
	}
	for _, r := range m.Resources() {
		if r.Custom {
			t.Errorf("created %s %s", r.Type, r.Name)
		}
	}
}

// A hub with spoke accounts: its Crossplane role gets a second policy, on
// exactly those accounts' roles, under the Crossplane IrsaRole, and the
// root Kustomization (deleted first on destroy) depends on it, so
// Crossplane can still reach the accounts while Flux deletes their spokes.
// Without spoke accounts there is no such policy.
func TestHubSpokeAccounts(t *testing.T) {
	for name, tc := range map[string]struct {
		accounts string
		want     []string
	}{
		"none": {accounts: "[]"},
		"two":  {accounts: `["444455556666","222233334444"]`, want: []string{"444455556666", "222233334444"}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := stackConfig(t, "Pulumi.mgmt.yaml")
			cfg["eks-fleet:spokeAccounts"] = tc.accounts
			m, h, err := runProgram(t, cfg)
			if err != nil {
				t.Fatal(err)
			}
			policies := m.ByType("aws:iam/rolePolicy:RolePolicy")
			if len(tc.want) == 0 {
				if len(policies) != 0 || h.CrossplaneAccounts != nil {
					t.Errorf("spoke accounts policy without spoke accounts: %d", len(policies))
				}
				return
			}
			p := m.One("aws:iam/rolePolicy:RolePolicy", hub.CrossplaneAccountsResource)
			if p == nil {
				t.Fatal("no spoke accounts policy")
			}
			if parent := m.ByURN(p.Parent); parent == nil || parent.Type != irsarole.Type || parent.Name != hub.CrossplaneResource {
				t.Errorf("parent %q, want the Crossplane IrsaRole", p.Parent)
			}
			if d := cmp.Diff(hubiam.CrossplaneAccounts(h.Env, tc.want).MustJSON(), p.Inputs["policy"].StringValue()); d != "" {
				t.Errorf("policy (-want +got):\n%s", d)
			}
			if !strings.Contains(p.Inputs["policy"].StringValue(), "arn:aws:iam::222233334444:role/mgmt-crossplane-account") {
				t.Errorf("policy %s", p.Inputs["policy"].StringValue())
			}
			root := m.ByType("kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization")[0]
			if !slices.Contains(root.Dependencies, p.URN) {
				t.Error("the root Kustomization does not depend on the spoke accounts policy")
			}
		})
	}
}
