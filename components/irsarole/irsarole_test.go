package irsarole

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
)

const (
	issuer      = "oidc.eks.eu-west-1.amazonaws.com/id/ABC"
	providerARN = "arn:aws:iam::111122223333:oidc-provider/" + issuer
	boundary    = "arn:aws:iam::111122223333:policy/mgmt-spoke-boundary"
)

func sa(ns, name string) serviceaccounts.ServiceAccount {
	return serviceaccounts.ServiceAccount{Namespace: ns, Name: name}
}

// token is a web identity token's subject and audience.
type token struct{ sub, aud string }

func sub(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// assumable evaluates the trust policy the way STS does for
// AssumeRoleWithWebIdentity: some Allow statement for the provider and the
// action whose every operator and key matches (a list of values is an OR;
// StringLike values are globs).
func assumable(t *testing.T, doc policydoc.Document, tok token) bool {
	t.Helper()
	values := map[string]string{issuer + ":sub": tok.sub, issuer + ":aud": tok.aud}
	for _, st := range doc.Statement {
		if st.Effect != policydoc.Allow || st.Principal["Federated"] != providerARN || !slices.Contains(st.Action, "sts:AssumeRoleWithWebIdentity") {
			continue
		}
		ok := true
		for op, keys := range st.Condition {
			for key, want := range keys {
				var alts []string
				switch w := want.(type) {
				case string:
					alts = []string{w}
				case []any:
					for _, e := range w {
						alts = append(alts, e.(string))
					}
				default:
					t.Fatalf("condition %s %s: value %T", op, key, want)
				}
				got, known := values[key]
				match := false
				for _, a := range alts {
					switch op {
					case "StringEquals":
						match = match || (known && got == a)
					case "StringLike":
						m, err := path.Match(a, got)
						if err != nil {
							t.Fatalf("pattern %q: %v", a, err)
						}
						match = match || (known && m)
					default:
						t.Fatalf("unexpected operator %s", op)
					}
				}
				ok = ok && match
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestTrustPolicy(t *testing.T) {
	cases := []struct {
		name  string
		sas   []serviceaccounts.ServiceAccount
		sids  []string
		allow []token
		deny  []token
	}{
		{
			name: "one exact", sas: []serviceaccounts.ServiceAccount{serviceaccounts.HubExternalSecrets}, sids: []string{SidExact},
			allow: []token{{sub("external-secrets", "external-secrets"), Audience}},
			deny: []token{
				{sub("external-secrets", "external-secrets"), "other"},
				{sub("external-secrets", "external-secrets-webhook"), Audience},
				{sub("default", "external-secrets"), Audience},
			},
		},
		{
			name: "one prefix", sas: []serviceaccounts.ServiceAccount{serviceaccounts.HubCrossplaneAWS}, sids: []string{SidPrefix},
			allow: []token{{sub("crossplane-system", "provider-aws-ec2-1a2b3c"), Audience}},
			deny: []token{
				{sub("crossplane-system", "provider-aws-ec2-1a2b3c"), "other"},
				{sub("crossplane-system", "crossplane"), Audience},
				{sub("default", "provider-aws-ec2-1a2b3c"), Audience},
			},
		},
		{
			name: "flux controllers", sas: serviceaccounts.HubFluxControllers(), sids: []string{SidExact},
			allow: []token{
				{sub("flux-system", "kustomize-controller"), Audience},
				{sub("flux-system", "helm-controller"), Audience},
			},
			deny: []token{
				{sub("flux-system", "kustomize-controller"), "other"},
				{sub("flux-system", "helm-controller"), ""},
				{sub("flux-system", "source-controller"), Audience},
				{sub("default", "helm-controller"), Audience},
			},
		},
		{
			// Exact and prefix subjects in one statement would be ANDed and
			// match nothing: each must still work on its own.
			name: "exact and prefix",
			sas:  []serviceaccounts.ServiceAccount{sa("apps", "api"), serviceaccounts.HubCrossplaneAWS, sa("apps", "worker")},
			sids: []string{SidExact, SidPrefix},
			allow: []token{
				{sub("apps", "api"), Audience},
				{sub("apps", "worker"), Audience},
				{sub("crossplane-system", "provider-aws-iam-9f8e7d"), Audience},
			},
			deny: []token{
				{sub("apps", "api"), "other"},
				{sub("crossplane-system", "provider-aws-iam-9f8e7d"), "other"},
				{sub("apps", "api-2"), Audience},
				{sub("apps", "frontend"), Audience},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckServiceAccounts(tc.sas); err != nil {
				t.Fatal(err)
			}
			js, err := TrustPolicy(providerARN, issuer, tc.sas).JSON()
			if err != nil {
				t.Fatal(err)
			}
			doc, err := policydoc.Parse(js)
			if err != nil {
				t.Fatal(err)
			}
			var sids []string
			for _, st := range doc.Statement {
				sids = append(sids, st.Sid)
				// Every statement conditions on :aud and on :sub, with exact
				// names under StringEquals and prefixes under StringLike.
				if st.Condition["StringEquals"][issuer+":aud"] != Audience {
					t.Errorf("%s: aud %v", st.Sid, st.Condition)
				}
				op, other := "StringEquals", "StringLike"
				if st.Sid == SidPrefix {
					op, other = other, op
				}
				if _, ok := st.Condition[op][issuer+":sub"]; !ok {
					t.Errorf("%s: no %s :sub: %v", st.Sid, op, st.Condition)
				}
				if _, ok := st.Condition[other][issuer+":sub"]; ok {
					t.Errorf("%s: :sub under %s too: %v", st.Sid, other, st.Condition)
				}
			}
			if !slices.Equal(sids, tc.sids) {
				t.Errorf("statements %v, want %v", sids, tc.sids)
			}
			for _, tok := range tc.allow {
				if !assumable(t, doc, tok) {
					t.Errorf("%+v cannot assume the role:\n%s", tok, js)
				}
			}
			for _, tok := range tc.deny {
				if assumable(t, doc, tok) {
					t.Errorf("%+v can assume the role:\n%s", tok, js)
				}
			}
		})
	}
}

func TestTrustPolicyIsStable(t *testing.T) {
	a := TrustPolicy(providerARN, issuer, []serviceaccounts.ServiceAccount{serviceaccounts.HubKustomizeController, serviceaccounts.HubHelmController}).MustJSON()
	b := TrustPolicy(providerARN, issuer, []serviceaccounts.ServiceAccount{serviceaccounts.HubHelmController, serviceaccounts.HubKustomizeController}).MustJSON()
	if a != b {
		t.Errorf("order of ServiceAccounts changes the trust policy:\n%s\n%s", a, b)
	}
	want := `["` + serviceaccounts.HubHelmController.Subject() + `","` + serviceaccounts.HubKustomizeController.Subject() + `"]`
	if !strings.Contains(a, want) {
		t.Errorf("subjects not a sorted list %s: %s", want, a)
	}
}

func TestIrsaRole(t *testing.T) {
	cases := []struct {
		name     string
		sas      []serviceaccounts.ServiceAccount
		boundary bool
	}{
		{"exact", []serviceaccounts.ServiceAccount{serviceaccounts.HubExternalSecrets}, false},
		{"prefix", []serviceaccounts.ServiceAccount{serviceaccounts.HubCrossplaneAWS}, true},
		{"spoke lbc", []serviceaccounts.ServiceAccount{serviceaccounts.SpokeLoadBalancerControl}, true},
		{"flux controllers", serviceaccounts.HubFluxControllers(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mocks.New()
			policy := policydoc.NewDocument(policydoc.Statement{Effect: policydoc.Allow, Action: []string{"eks:DescribeCluster"}, Resource: []string{"arn:aws:eks:*:111122223333:cluster/mgmt-*"}}).MustJSON()
			err := m.Run(nil, func(ctx *pulumi.Context) error {
				args := Args{
					RoleName:        "mgmt-test",
					OIDCProviderARN: pulumi.String(providerARN),
					OIDCIssuer:      pulumi.String(issuer),
					ServiceAccounts: tc.sas,
					PolicyJSON:      pulumi.String(policy),
				}
				if tc.boundary {
					args.PermissionsBoundary = pulumi.String(boundary)
				}
				_, err := New(ctx, "test", args)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			comp := m.One(Type, "test")
			if comp == nil {
				t.Fatal("no component")
			}
			for _, typ := range []string{"aws:iam/role:Role", "aws:iam/policy:Policy", "aws:iam/rolePolicyAttachment:RolePolicyAttachment"} {
				r := m.One(typ, "test")
				if r == nil {
					t.Fatalf("no %s", typ)
				}
				if r.Parent != comp.URN {
					t.Errorf("%s parent %s", typ, r.Parent)
				}
			}
			if n := len(m.Resources()); n != 4 {
				t.Errorf("%d resources, want 4: %v", n, m.SortedTypes())
			}
			role := m.One("aws:iam/role:Role", "test")
			got := role.Inputs["assumeRolePolicy"].StringValue()
			if want := TrustPolicy(providerARN, issuer, tc.sas).MustJSON(); got != want {
				t.Errorf("trust policy\n%s\nwant\n%s", got, want)
			}
			doc, err := policydoc.Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.sas {
				name := s.Name
				if s.Prefix {
					name += "abc123"
				}
				if !assumable(t, doc, token{sub(s.Namespace, name), Audience}) {
					t.Errorf("%s cannot assume the role: %s", s.Subject(), got)
				}
				if !strings.Contains(role.Inputs["description"].StringValue(), s.Subject()) {
					t.Errorf("description %q does not name %s", role.Inputs["description"].StringValue(), s.Subject())
				}
			}
			b, has := role.Inputs["permissionsBoundary"]
			if tc.boundary != (has && b.IsString() && b.StringValue() == boundary) {
				t.Errorf("boundary = %v, want set=%v", b, tc.boundary)
			}
			if got := m.One("aws:iam/policy:Policy", "test").Inputs["policy"].StringValue(); got != policy {
				t.Errorf("policy %s", got)
			}
		})
	}
}

func TestIrsaRoleRejectsBadServiceAccounts(t *testing.T) {
	cases := []struct {
		name string
		sas  []serviceaccounts.ServiceAccount
		want string
	}{
		{"none", nil, "ServiceAccounts is empty"},
		{"no namespace", []serviceaccounts.ServiceAccount{sa("", "x")}, "ServiceAccounts[0]"},
		{"no name", []serviceaccounts.ServiceAccount{serviceaccounts.HubKustomizeController, sa("flux-system", "")}, "ServiceAccounts[1]"},
		{"wildcard", []serviceaccounts.ServiceAccount{sa("flux-system", "*-controller")}, "IAM wildcards"},
		{"twice", []serviceaccounts.ServiceAccount{serviceaccounts.HubHelmController, serviceaccounts.HubHelmController}, "listed twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := mocks.New()
			err := m.Run(nil, func(ctx *pulumi.Context) error {
				_, err := New(ctx, "bad", Args{RoleName: "x", OIDCProviderARN: pulumi.String(providerARN), OIDCIssuer: pulumi.String(issuer), PolicyJSON: pulumi.String("{}"), ServiceAccounts: tc.sas})
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "irsarole bad") {
				t.Fatalf("err %v, want one naming the role and %q", err, tc.want)
			}
			if len(m.All()) != 0 {
				t.Errorf("registered %v", m.SortedTypes())
			}
		})
	}
}
