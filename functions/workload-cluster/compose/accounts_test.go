package compose

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

const (
	testAccount  = clusterinfo.ExampleSpokeAccount
	testEndpoint = "https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com"
	testCA       = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
)

// observeAccount is observeAll for a spoke in another account: AWS reports
// the cluster there, with its endpoint and CA.
func observeAccount(c Composed) map[string]Object {
	obs := observeAll(c)
	if cl, ok := obs["cluster"]; ok {
		ap := cl["status"].(Object)["atProvider"].(Object)
		ap["arn"] = "arn:aws:eks:eu-west-1:" + testAccount + ":cluster/mgmt-pay"
		ap["endpoint"] = testEndpoint
		ap["certificateAuthority"] = []any{Object{"data": base64.StdEncoding.EncodeToString([]byte(testCA))}}
	}
	return obs
}

func convergeAccount(t *testing.T, p Params) Composed {
	t.Helper()
	var prev Composed
	for i := 0; i < 8; i++ {
		c, err := Compose(p)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && len(c.Objects) == len(prev.Objects) {
			return c
		}
		prev = c
		p.Observed = observeAccount(c)
	}
	t.Fatal("composition did not converge")
	return Composed{}
}

// A spoke in another account is the same spoke, every AWS resource
// managed through the account's ProviderConfig and every IAM ARN in the
// account, except the hub's Flux role its access entry names; the hub's
// Flux reaches its API server with the endpoint and CA in the kubeconfig
// ConfigMap (it cannot DescribeCluster across accounts).
func TestSpokeInAnotherAccount(t *testing.T) {
	hubSpoke := testParams(t)
	inAccount := testParams(t)
	inAccount.Spec.Account = testAccount
	a := convergeAccount(t, inAccount)
	runs := converge(t, hubSpoke)
	h := runs[len(runs)-1]

	if !slices.Equal(slices.Sorted(maps.Keys(a.Objects)), slices.Sorted(maps.Keys(h.Objects))) {
		t.Fatalf("composed %v, in the hub's account %v", slices.Sorted(maps.Keys(a.Objects)), slices.Sorted(maps.Keys(h.Objects)))
	}
	pc := Object{"name": spokeaccounts.ProviderConfigName(testAccount)}
	aws := 0
	for k, o := range a.Objects {
		isAWS := strings.Contains(o["apiVersion"].(string), ".aws.upbound.io/")
		ref := field(o, "spec", "providerConfigRef")
		switch {
		case isAWS && !cmp.Equal(ref, any(pc)):
			t.Errorf("%s: providerConfigRef %v, want %v", k, ref, pc)
		case !isAWS && ref != nil:
			t.Errorf("%s (%s): providerConfigRef on a non-AWS object", k, o["apiVersion"])
		case field(h.Objects[k], "spec", "providerConfigRef") != nil:
			t.Errorf("%s: providerConfigRef on a spoke in the hub's account", k)
		}
		if isAWS {
			aws++
		}
		// Everything but the ProviderConfig, the account in the ARNs and
		// the kubeconfig is the hub-account spoke's.
		if k == KubeconfigKey {
			continue
		}
		// A bootstrap step substitutes the spoke's account and boundary
		// over the hub's (spokeinfo.AccountNames).
		var plain Object
		b, _ := json.Marshal(o)
		if err := json.Unmarshal(b, &plain); err != nil {
			t.Fatal(err)
		}
		if sub, ok := field(plain, "spec", "postBuild", "substitute").(map[string]any); ok && plain["kind"] == "Kustomization" {
			want := map[string]any{"ACCOUNT_ID": testAccount, "SPOKE_PERMISSIONS_BOUNDARY_ARN": "arn:aws:iam::" + testAccount + ":policy/mgmt-spoke-boundary"}
			for name, v := range want {
				if sub[name] != v {
					t.Errorf("%s: substitutes %s=%v, want %v", k, name, sub[name], v)
				}
				delete(sub, name)
			}
		}
		got, _ := json.Marshal(plain)
		want, _ := json.Marshal(h.Objects[k])
		moved := strings.ReplaceAll(string(want), ":111122223333:", ":"+testAccount+":")
		// the hub's Flux role and the claim's admin (a principal of the
		// hub's account) stay where they are
		for _, keep := range []string{":role/mgmt-flux", ":role/ops"} {
			moved = strings.ReplaceAll(moved, ":"+testAccount+keep, ":111122223333"+keep)
		}
		unref := strings.Replace(string(got), `,"providerConfigRef":{"name":"`+spokeaccounts.ProviderConfigName(testAccount)+`"}`, "", 1)
		if unref != moved {
			t.Errorf("%s differs beyond its account:\n%s", k, cmp.Diff(moved, unref))
		}
	}
	if aws < 40 {
		t.Errorf("only %d AWS objects", aws)
	}
	// IAM in the account, Flux's access entry for the hub's role.
	roles, err := spokeiam.Roles(inAccount.spoke())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range checkRoles(a, roles, inAccount.Spoke) {
		t.Error(e)
	}
	for _, r := range roles {
		if !strings.Contains(r.BoundaryARN, ":"+testAccount+":policy/") {
			t.Errorf("role %s: boundary %s not the account's", r.Key, r.BoundaryARN)
		}
	}
	if got := str(a.Objects["access-entry-flux"], "spec", "forProvider", "principalArn"); got != "arn:aws:iam::111122223333:role/mgmt-flux" {
		t.Errorf("Flux's access entry names %q, want the hub's Flux role", got)
	}
	want := Object{meta.KubeConfigKeyProvider: "aws", meta.KubeConfigKeyCluster: "arn:aws:eks:eu-west-1:" + testAccount + ":cluster/mgmt-pay",
		meta.KubeConfigKeyAddress: testEndpoint, meta.KubeConfigKeyCACert: testCA}
	if d := cmp.Diff(want, field(a.Objects[KubeconfigKey], "data")); d != "" {
		t.Errorf("kubeconfig data (-want +got):\n%s", d)
	}
	if d := cmp.Diff(Object{"provider": "aws", "cluster": "arn:aws:eks:eu-west-1:111122223333:cluster/mgmt-pay"}, field(h.Objects[KubeconfigKey], "data")); d != "" {
		t.Errorf("hub-account kubeconfig data changed (-want +got):\n%s", d)
	}
}

// Until AWS reports the endpoint and CA, a spoke in another account has no
// kubeconfig and so no bootstrap, and says why.
func TestAccountBootstrapWaitsForTheEndpoint(t *testing.T) {
	p := testParams(t)
	p.Spec.Account = testAccount
	for range 6 {
		c, err := Compose(p)
		if err != nil {
			t.Fatal(err)
		}
		p.Observed = observeAll(c) // no endpoint, no CA
	}
	c, err := Compose(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Objects[KubeconfigKey]; ok {
		t.Error("kubeconfig composed without the endpoint and CA")
	}
	if !slices.ContainsFunc(c.Pending, func(s string) bool { return strings.Contains(s, "API endpoint and CA") }) {
		t.Errorf("pending %v does not say what it waits for", c.Pending)
	}
}

// A claim naming an account the hub cannot reach composes nothing and
// says why, naming the field and value.
func TestAccountRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		account, want string
	}{
		"not an account":      {"12345", `spec.account "12345": not an AWS account ID`},
		"the hub's own":       {"111122223333", `spec.account "111122223333" is the hub's own account`},
		"not a spoke account": {"999988887777", `spec.account "999988887777" is not one of the hub's spoke accounts (` + testAccount + `; cluster-info SPOKE_ACCOUNTS)`},
	} {
		p := testParams(t)
		p.Spec.Account = tc.account
		c, err := Compose(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
		if len(c.Objects) != 0 {
			t.Errorf("%s: composed %d objects", name, len(c.Objects))
		}
	}
	p := testParams(t)
	p.Input.SpokeAccounts = []string{"111122223333"}
	if err := p.Input.Validate(); err == nil || !strings.Contains(err.Error(), "spokeAccounts") {
		t.Errorf("the hub's own account in the input's spokeAccounts: %v", err)
	}
}
