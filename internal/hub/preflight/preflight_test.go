package preflight

import (
	"context"
	"errors"
	"fmt"
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
		issuer string
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
		"the deployed hub's, untagged": {
			reason: "a hub an earlier release deployed has its own provider untagged (this pulumi up tags it): the deployed hub's issuer is its own",
			issuer: "oidc.eks.eu-west-1.amazonaws.com/id/HUB",
			inv:    Inventory{OIDCProviders: []OIDCProvider{oidc("oidc.eks.eu-west-1.amazonaws.com/id/HUB", nil)}},
		},
		"untagged, another issuer than the hub's": {
			reason: "the deployed hub's issuer makes only its own provider the fleet's",
			issuer: "oidc.eks.eu-west-1.amazonaws.com/id/HUB",
			inv:    Inventory{OIDCProviders: []OIDCProvider{oidc("oidc.eks.eu-west-1.amazonaws.com/id/HUB2", nil)}},
			want:   []Finding{{Kind: "EKS OIDC provider", Where: "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB2"}},
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
			if diff := cmp.Diff(tc.want, Foreign(Fleet{Hub: hub, HubIssuer: tc.issuer}, tc.inv)); diff != "" {
				t.Errorf("%s: Foreign (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

type reader struct {
	inv         Inventory
	left        []SpokeResource
	err         error
	got         []Query
	key, prefix string
}

func (r *reader) Read(_ context.Context, q Query) (Inventory, error) {
	r.got = append(r.got, q)
	return r.inv, r.err
}

func (r *reader) Remains(_ context.Context, q Query, key, rolePrefix string) ([]SpokeResource, error) {
	r.got = append(r.got, q)
	r.key, r.prefix = key, rolePrefix
	return r.left, r.err
}

func TestCheck(t *testing.T) {
	q := Query{AccountID: account, Region: "eu-west-1", Profile: "platform"}
	t.Run("refused", func(t *testing.T) {
		r := &reader{inv: Inventory{
			OIDCProviders:   []OIDCProvider{oidc("oidc.eks.eu-west-1.amazonaws.com/id/WEB", nil)},
			LaunchTemplates: []LaunchTemplate{{Region: "eu-west-1", ID: "lt-8", Name: "batch", Tags: map[string]string{"team": "web", "cost": "1"}}},
		}}
		err := Check(context.Background(), r, "prod", Fleet{Hub: hub}, q)
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
		if err := Check(context.Background(), r, "prod", Fleet{Hub: hub}, q); err != nil {
			t.Errorf("Check: %v", err)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		r := &reader{err: errors.New("AccessDenied: iam:ListOpenIDConnectProviders")}
		err := Check(context.Background(), r, "prod", Fleet{Hub: hub}, q)
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

func TestRemains(t *testing.T) {
	listed := []SpokeResource{
		{Cluster: "mgmt-web", ARN: "arn:aws:ec2:us-east-1:222233334444:vpc/vpc-2"},
		{Cluster: "staging-pay", ARN: "arn:aws:ec2:eu-west-1:222233334444:vpc/vpc-9"},
		{ARN: "arn:aws:iam::222233334444:role/mgmt-spoke-pay-cluster"},
		{Cluster: "mgmt-pay", ARN: "arn:aws:eks:eu-west-1:222233334444:cluster/mgmt-pay"},
		{Cluster: "mgmt-pay", ARN: "arn:aws:ec2:eu-west-1:222233334444:vpc/vpc-1"},
		{Cluster: "mgmtx", ARN: "arn:aws:ec2:eu-west-1:222233334444:vpc/vpc-8"},
		{Cluster: "mgmt-pay", ARN: "arn:aws:ec2:eu-west-1:222233334444:vpc/vpc-1"},
	}
	want := []SpokeResource{
		{ARN: "arn:aws:iam::222233334444:role/mgmt-spoke-pay-cluster"},
		{Cluster: "mgmt-pay", ARN: "arn:aws:ec2:eu-west-1:222233334444:vpc/vpc-1"},
		{Cluster: "mgmt-pay", ARN: "arn:aws:eks:eu-west-1:222233334444:cluster/mgmt-pay"},
		{Cluster: "mgmt-web", ARN: "arn:aws:ec2:us-east-1:222233334444:vpc/vpc-2"},
	}
	// Another hub's (staging-) and a look-alike (mgmtx) are not this
	// hub's spokes; a resource listed twice (two regions' answers) counts
	// once.
	if diff := cmp.Diff(want, Remains(hub, listed)); diff != "" {
		t.Errorf("Remains (-want +got):\n%s", diff)
	}
}

func TestCheckNoSpokes(t *testing.T) {
	q := Query{AccountID: "222233334444", Region: "eu-west-1"}
	var left []SpokeResource
	for i := range 7 {
		left = append(left, SpokeResource{Cluster: "mgmt-pay", ARN: fmt.Sprintf("arn:aws:ec2:eu-west-1:222233334444:subnet/subnet-%d", i)})
	}
	left = append(left, SpokeResource{ARN: "arn:aws:iam::222233334444:role/mgmt-spoke-pay-cluster"})
	r := &reader{left: left}
	err := CheckNoSpokes(context.Background(), r, "acct-payments", hub, "mgmt-crossplane-account", "mgmt-spoke-", q)
	want := strings.Join([]string{
		`stack "acct-payments": account 222233334444 still holds 8 resource(s) of hub mgmt's spokes, nothing was deleted:`,
		`  - spoke roles: arn:aws:iam::222233334444:role/mgmt-spoke-pay-cluster`,
		`  - mgmt-pay: arn:aws:ec2:eu-west-1:222233334444:subnet/subnet-0, arn:aws:ec2:eu-west-1:222233334444:subnet/subnet-1, arn:aws:ec2:eu-west-1:222233334444:subnet/subnet-2, arn:aws:ec2:eu-west-1:222233334444:subnet/subnet-3, arn:aws:ec2:eu-west-1:222233334444:subnet/subnet-4 and 2 more`,
		`The hub's Crossplane deletes them through this stack's role mgmt-crossplane-account; without it they would stay in the account, out of the fleet's reach.`,
		`Fix: remove those spokes' claims (fleet cluster remove <name>, then merge) and wait until fleet status no longer lists them; what remains of a spoke whose claim is already gone is what break glass left of its apps (README, "A spoke whose API cannot be reached"): delete it by hand. Then run pulumi destroy --run-program again.`,
	}, "\n")
	if err == nil {
		t.Fatal("CheckNoSpokes passed with spokes left")
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if r.key != fence.TagCluster || r.prefix != "mgmt-spoke-" || len(r.got) != 1 || r.got[0] != q {
		t.Errorf("asked for key %q, prefix %q, queries %v", r.key, r.prefix, r.got)
	}
	if err := CheckNoSpokes(context.Background(), &reader{left: []SpokeResource{{Cluster: "staging-pay", ARN: "arn:x"}}}, "acct-payments", hub, "r", "mgmt-spoke-", q); err != nil {
		t.Errorf("another hub's spokes only: %v", err)
	}
	err = CheckNoSpokes(context.Background(), &reader{err: errors.New("AccessDenied")}, "acct-payments", hub, "r", "mgmt-spoke-", q)
	if err == nil || err.Error() != `stack "acct-payments": read what account 222233334444 holds of hub mgmt's spokes (the stack is not destroyed while its role is the only way to delete them): AccessDenied` {
		t.Errorf("unreadable: %v", err)
	}
}
