package preflight

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

const (
	hub     = "mgmt"
	account = "111122223333"
)

func oidc(id string, tags map[string]string) OIDCProvider {
	return OIDCProvider{ARN: "arn:aws:iam::" + account + ":oidc-provider/" + id, Tags: tags}
}

func TestForeign(t *testing.T) {
	cases := map[string]struct {
		reason string
		inv    Inventory
		want   []Finding
	}{
		"empty": {
			reason: "a new account holds nothing",
		},
		"fleet's own": {
			reason: "the hub's provider and node template, a spoke's provider and template, and the template EKS made for a spoke node group of an earlier release are the fleet's",
			inv: Inventory{
				OIDCProviders: []OIDCProvider{
					oidc("oidc.eks.eu-west-1.amazonaws.com/id/HUB", map[string]string{fence.TagCluster: hub}),
					oidc("oidc.eks.eu-west-1.amazonaws.com/id/PAY", map[string]string{fence.TagCluster: hub + "-pay"}),
				},
				LaunchTemplates: []LaunchTemplate{
					{Region: "eu-west-1", ID: "lt-1", Name: "mgmt-nodes", Tags: map[string]string{stacks.HubTagKey: hub}},
					{Region: "eu-west-1", ID: "lt-2", Name: "pay-nodes", Tags: map[string]string{fence.TagCluster: hub + "-pay"}},
					{Region: "eu-central-1", ID: "lt-3", Name: "eks-1234", Tags: map[string]string{fence.TagEKSNodeCluster: hub + "-old"}},
				},
			},
		},
		"other issuers": {
			reason: "OIDC providers of other issuers (CI's, an IdP) are out of the hub's Crossplane's reach and left alone",
			inv: Inventory{OIDCProviders: []OIDCProvider{
				oidc("token.actions.githubusercontent.com", nil),
				oidc("accounts.google.com", map[string]string{"team": "web"}),
			}},
		},
		"another team's": {
			reason: "an untagged EKS provider, one of another hub, and templates of another team or hub are refused, providers first, templates by region then ID",
			inv: Inventory{
				OIDCProviders: []OIDCProvider{
					oidc("oidc.eks.eu-west-1.amazonaws.com/id/WEB", nil),
					oidc("oidc.eks.eu-west-1.amazonaws.com/id/ABC", map[string]string{fence.TagCluster: "staging"}),
				},
				LaunchTemplates: []LaunchTemplate{
					{Region: "us-east-1", ID: "lt-9", Name: "web", Tags: map[string]string{"team": "web"}},
					{Region: "eu-west-1", ID: "lt-8", Name: "batch"},
					{Region: "eu-west-1", ID: "lt-2", Name: "staging-nodes", Tags: map[string]string{stacks.HubTagKey: "staging"}},
				},
			},
			want: []Finding{
				{Kind: "EKS OIDC provider", Where: "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC", Tags: map[string]string{fence.TagCluster: "staging"}},
				{Kind: "EKS OIDC provider", Where: "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/WEB"},
				{Kind: "launch template", Where: "lt-2 (staging-nodes) in eu-west-1", Tags: map[string]string{stacks.HubTagKey: "staging"}},
				{Kind: "launch template", Where: "lt-8 (batch) in eu-west-1"},
				{Kind: "launch template", Where: "lt-9 (web) in us-east-1", Tags: map[string]string{"team": "web"}},
			},
		},
		"look-alike names": {
			reason: "a value that only starts with the hub's name (mgmtx) is not the fleet's; the fleet's values are <hub> and <hub>-<spoke>",
			inv: Inventory{LaunchTemplates: []LaunchTemplate{
				{Region: "eu-west-1", ID: "lt-5", Name: "x", Tags: map[string]string{fence.TagCluster: hub + "x"}},
			}},
			want: []Finding{{Kind: "launch template", Where: "lt-5 (x) in eu-west-1", Tags: map[string]string{fence.TagCluster: "mgmtx"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Foreign(hub, tc.inv)); diff != "" {
				t.Errorf("%s: Foreign (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

type reader struct {
	inv Inventory
	err error
	got []Query
}

func (r *reader) Read(_ context.Context, q Query) (Inventory, error) {
	r.got = append(r.got, q)
	return r.inv, r.err
}

func TestCheck(t *testing.T) {
	q := Query{AccountID: account, Region: "eu-west-1", Profile: "platform"}
	t.Run("refused", func(t *testing.T) {
		r := &reader{inv: Inventory{
			OIDCProviders:   []OIDCProvider{oidc("oidc.eks.eu-west-1.amazonaws.com/id/WEB", nil)},
			LaunchTemplates: []LaunchTemplate{{Region: "eu-west-1", ID: "lt-8", Name: "batch", Tags: map[string]string{"team": "web", "cost": "1"}}},
		}}
		err := Check(context.Background(), r, "prod", hub, q)
		want := strings.Join([]string{
			`stack "prod": account 111122223333 holds 2 EKS OIDC provider(s) or launch template(s) that hub mgmt's fleet did not make, nothing was created:`,
			`  - EKS OIDC provider arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/WEB (no tags)`,
			`  - launch template lt-8 (batch) in eu-west-1 (tags cost=1, team=web)`,
			`The spokes' fence assumes every EKS OIDC provider and launch template of the account is the fleet's: the hub's Crossplane may tag an untagged EKS OIDC provider as a spoke's, and reads every launch template's user data (docs/iam.md, "The fleet account SCP").`,
			`Fix: deploy into an account that holds the fleet alone, or delete or move what is listed; then attach the stack output fleetAccountScp to the account so no other principal creates them.`,
		}, "\n")
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Check: %v, want an *Error", err)
		}
		if diff := cmp.Diff(want, err.Error()); diff != "" {
			t.Errorf("message (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]Query{q}, r.got); diff != "" {
			t.Errorf("queries (-want +got):\n%s", diff)
		}
	})
	t.Run("fleet alone", func(t *testing.T) {
		r := &reader{inv: Inventory{OIDCProviders: []OIDCProvider{oidc("oidc.eks.eu-west-1.amazonaws.com/id/HUB", map[string]string{fence.TagCluster: hub})}}}
		if err := Check(context.Background(), r, "prod", hub, q); err != nil {
			t.Errorf("Check: %v", err)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		r := &reader{err: errors.New("AccessDenied: iam:ListOpenIDConnectProviders")}
		err := Check(context.Background(), r, "prod", hub, q)
		want := `stack "prod": read account 111122223333's EKS OIDC providers and launch templates (the program refuses an account that holds another's, docs/iam.md): AccessDenied: iam:ListOpenIDConnectProviders`
		if err == nil || err.Error() != want {
			t.Errorf("Check: %v\nwant %s", err, want)
		}
	})
}

func TestIsEKSProvider(t *testing.T) {
	cases := map[string]struct {
		arn  string
		want bool
	}{
		"eks":         {arn: "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC", want: true},
		"china":       {arn: "arn:aws-cn:iam::111122223333:oidc-provider/oidc.eks.cn-north-1.amazonaws.com.cn/id/ABC", want: true},
		"github":      {arn: "arn:aws:iam::111122223333:oidc-provider/token.actions.githubusercontent.com"},
		"eks in path": {arn: "arn:aws:iam::111122223333:oidc-provider/example.com/oidc.eks.x"},
		"not an arn":  {arn: "oidc.eks.eu-west-1.amazonaws.com/id/ABC"},
	}
	for name, tc := range cases {
		if got := IsEKSProvider(tc.arn); got != tc.want {
			t.Errorf("%s: IsEKSProvider(%s) = %v, want %v", name, tc.arn, got, tc.want)
		}
	}
}
