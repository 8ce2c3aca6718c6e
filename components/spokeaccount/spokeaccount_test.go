package spokeaccount

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/gitops-fleet/eks-fleet/components/deleteguard"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
)

const account = "222233334444"

var hubEnv = hubiam.Env{Partition: "aws", AccountID: mocks.AccountID, Region: "eu-west-1", HubName: "mgmt"}

func TestCheck(t *testing.T) {
	for name, tc := range map[string]struct {
		args   Args
		reason string
		want   string // in the error; "" none
	}{
		"ok": {args: Args{Env: hubEnv.InAccount(account), ExternalID: "ext-123", DeleteCheck: spokesRemain}, reason: "another account, an external ID, a delete check"},
		"no delete check": {args: Args{Env: hubEnv.InAccount(account), ExternalID: "ext-123"}, want: "no DeleteCheck",
			reason: "the account role would go while the spokes it deletes remain"},
		"hub account": {args: Args{Env: hubEnv, ExternalID: "ext-123"}, want: "is the hub's own",
			reason: "the hub's own account has the hub stack's boundary and Crossplane role"},
		"same account": {args: Args{Env: hubEnv.InAccount(mocks.AccountID), ExternalID: "ext-123"}, want: "is the hub's own",
			reason: "InAccount of the hub's own account is still the hub's"},
		"no external id": {args: Args{Env: hubEnv.InAccount(account)}, want: `external ID ""`,
			reason: "the trust would have no confused-deputy guard"},
		"bad account": {args: Args{Env: hubEnv.InAccount("2222"), ExternalID: "ext-123"}, want: `AccountID "2222"`,
			reason: "ARNs with a malformed account"},
	} {
		err := tc.args.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (%s): %v", name, tc.reason, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s (%s): error %v, want %q", name, tc.reason, err, tc.want)
		}
	}
}

func TestSpokeAccount(t *testing.T) {
	m := mocks.New()
	m.Account = account
	var c *SpokeAccount
	if err := m.Run(nil, func(ctx *pulumi.Context) (err error) {
		c, err = New(ctx, "acct", Args{Env: hubEnv.InAccount(account), ExternalID: "ext-123", Tags: pulumi.StringMap{"owner": pulumi.String("payments")}, DeleteCheck: spokesRemain})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	comp := m.One(Type, "acct")
	for _, r := range m.Resources() {
		if r != comp && r.Parent != comp.URN {
			t.Errorf("%s %s not parented to the component", r.Type, r.Name)
		}
		if r.Custom && r.Type != "aws:iam/rolePolicyAttachment:RolePolicyAttachment" && r.Inputs["tags"].ObjectValue()["owner"].StringValue() != "payments" {
			t.Errorf("%s %s: tags %v", r.Type, r.Name, r.Inputs["tags"])
		}
	}
	att := m.One("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "acct")
	if att.Inputs["role"].StringValue() != "mgmt-crossplane-account" || att.Inputs["policyArn"].StringValue() != "arn:aws:iam::"+account+":policy/mgmt-crossplane-account" {
		t.Errorf("attachment %v", att.Inputs)
	}
	want := map[string]string{
		"accountId":   account,
		"roleArn":     "arn:aws:iam::" + account + ":role/mgmt-crossplane-account",
		"boundaryArn": "arn:aws:iam::" + account + ":policy/mgmt-spoke-boundary",
		"externalId":  "ext-123",
	}
	for name, o := range map[string]pulumi.StringOutput{"accountId": c.AccountID, "roleArn": c.RoleArn, "boundaryArn": c.BoundaryArn, "externalId": c.ExternalID} {
		r, err := internals.UnsafeAwaitOutput(context.Background(), o)
		if err != nil || r.Value != want[name] {
			t.Errorf("%s = %v (%v), want %s", name, r.Value, err, want[name])
		}
	}
	if len(c.Resources()) != 4 {
		t.Errorf("Resources: %d", len(c.Resources()))
	}
	// The guard stands before all four: it depends on each (the engine
	// deletes it first, and none of them while its check refuses:
	// components/deleteguard's engine test), and runs DeleteCheck.
	guard := m.One(deleteguard.Type, "acct-guard")
	if guard == nil || guard.Parent != comp.URN {
		t.Fatalf("no DeleteGuard acct-guard under the component: %+v", guard)
	}
	var wantDeps []string
	for _, r := range m.Resources() {
		if r.Custom {
			wantDeps = append(wantDeps, r.URN)
		}
	}
	if got := slices.Sorted(slices.Values(guard.Dependencies)); !slices.Equal(got, slices.Sorted(slices.Values(wantDeps))) {
		t.Errorf("guard depends on %v, want %v", got, wantDeps)
	}
	if err := c.Guard.Check(context.Background()); err == nil || err.Error() != "spokes remain" {
		t.Errorf("guard check: %v, want DeleteCheck's", err)
	}
}

// spokesRemain is a DeleteCheck that always refuses, so a test can tell the
// guard runs it.
func spokesRemain(context.Context) error { return errors.New("spokes remain") }

// Bad args register nothing.
func TestBadArgsRegisterNothing(t *testing.T) {
	m := mocks.New()
	err := m.Run(nil, func(ctx *pulumi.Context) error {
		_, err := New(ctx, "acct", Args{Env: hubEnv, ExternalID: "x"})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "spokeaccount acct:") {
		t.Errorf("error %v", err)
	}
	if n := len(m.Resources()); n != 0 {
		t.Errorf("%d resources registered", n)
	}
}
