package accounts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

// repoTree copies the repository's fleet policy and accounts directory
// into a tree of its own.
func repoTree(t *testing.T) *fleettree.Tree {
	t.Helper()
	root := filepath.Join(t.TempDir(), "manifests")
	repo := filepath.Join("..", "..", "..", "manifests")
	copyFile := func(rel string) {
		b, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		write(t, root, rel, string(b))
	}
	copyFile(policy.RelPath)
	entries, err := os.ReadDir(filepath.Join(repo, filepath.FromSlash(Dir)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(Dir + "/" + e.Name())
	}
	tr, err := fleettree.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, tr *fleettree.Tree, rel string) string {
	t.Helper()
	b, err := os.ReadFile(tr.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var orders = spokeaccounts.Account{ID: "444455556666", RoleARN: "arn:aws:iam::444455556666:role/mgmt-crossplane-account", ExternalID: "ext-orders-1"}

// The repository's tree is consistent, and Add appends to the policy's
// accounts (keeping every other byte of the file), writes the
// ProviderConfig and lists it; the result is consistent again.
func TestAdd(t *testing.T) {
	tr := repoTree(t)
	pol, err := policy.Load(tr.Path(policy.RelPath))
	if err != nil {
		t.Fatal(err)
	}
	if f := Findings(tr, pol); len(f) != 0 {
		t.Fatalf("the repository's tree: %v", f)
	}
	before := read(t, tr, policy.RelPath)
	ch, err := Add(tr, orders)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Apply(tr.Root); err != nil {
		t.Fatal(err)
	}
	const entry = `    - id: "444455556666"
      roleArn: arn:aws:iam::444455556666:role/mgmt-crossplane-account
      externalId: ext-orders-1
`
	anchor := "      externalId: 7c9e6679-7425-40de-944b-e07fc1f90ae7\n"
	want := strings.Replace(before, anchor, anchor+entry, 1)
	if d := cmp.Diff(want, read(t, tr, policy.RelPath)); d != "" || want == before {
		t.Errorf("policy (-want +got):\n%s", d)
	}
	if d := cmp.Diff(string(ProviderConfig(orders)), read(t, tr, ProviderConfigRel(orders.ID))); d != "" {
		t.Errorf("ProviderConfig (-want +got):\n%s", d)
	}
	if got := read(t, tr, Dir+"/kustomization.yaml"); !strings.HasSuffix(got, "  - 222233334444.yaml\n  - 444455556666.yaml\n") {
		t.Errorf("kustomization:\n%s", got)
	}
	pol, err = policy.Load(tr.Path(policy.RelPath))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := pol.Account(orders.ID); !ok || got != orders {
		t.Errorf("policy entry %+v", got)
	}
	if f := Findings(tr, pol); len(f) != 0 {
		t.Errorf("after Add: %v", f)
	}
	if _, err := Add(tr, orders); err == nil || !strings.Contains(err.Error(), "already a spoke account") {
		t.Errorf("adding it twice: %v", err)
	}
	bad := orders
	bad.ID, bad.RoleARN = "555566667777", "arn:aws:iam::444455556666:role/mgmt-crossplane-account"
	if _, err := Add(tr, bad); err == nil || !strings.Contains(err.Error(), "roleArn") {
		t.Errorf("a role of another account: %v", err)
	}
}

// An empty accounts list in block style and a policy without one.
func TestAddToAPolicyWithoutAccounts(t *testing.T) {
	for name, accountsLine := range map[string]string{"none": "", "empty": "  accounts: []\n"} {
		t.Run(name, func(t *testing.T) {
			tr := repoTree(t)
			b := read(t, tr, policy.RelPath)
			i, j := strings.Index(b, "  accounts:\n"), strings.Index(b, "  cidr:\n")
			b = b[:i] + accountsLine + b[j:]
			write(t, tr.Root, policy.RelPath, b)
			write(t, tr.Root, Dir+"/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n")
			if err := os.Remove(tr.Path(ProviderConfigRel("222233334444"))); err != nil {
				t.Fatal(err)
			}
			ch, err := Add(tr, orders)
			if err != nil {
				t.Fatal(err)
			}
			if err := ch.Apply(tr.Root); err != nil {
				t.Fatal(err)
			}
			pol, err := policy.Load(tr.Path(policy.RelPath))
			if err != nil {
				t.Fatal(err)
			}
			if len(pol.Accounts) != 1 || pol.Accounts[0] != orders {
				t.Errorf("accounts %+v", pol.Accounts)
			}
			if f := Findings(tr, pol); len(f) != 0 {
				t.Errorf("after Add: %v", f)
			}
		})
	}
}

func TestFindings(t *testing.T) {
	for name, tc := range map[string]struct {
		plant  func(t *testing.T, root string)
		reason string
		want   []string
	}{
		"missing": {reason: "the hub's Crossplane could not reach the account",
			plant: func(t *testing.T, root string) {
				os.Remove(filepath.Join(root, filepath.FromSlash(ProviderConfigRel("222233334444"))))
			},
			want: []string{"account 222233334444 of the fleet policy has no ProviderConfig"}},
		"edited": {reason: "an external ID other than the policy's: the assume fails, or trusts what review did not see",
			plant: func(t *testing.T, root string) {
				p := filepath.Join(root, filepath.FromSlash(ProviderConfigRel("222233334444")))
				b, _ := os.ReadFile(p)
				os.WriteFile(p, []byte(strings.Replace(string(b), "7c9e6679", "00000000", 1)), 0o644)
			},
			want: []string{"differs from the fleet policy's entry for account 222233334444"}},
		"unlisted": {reason: "Flux would never apply it",
			plant: func(t *testing.T, root string) {
				write(t, root, Dir+"/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n")
			},
			want: []string{"does not list 222233334444.yaml"}},
		"orphan": {reason: "a way into an account review never listed",
			plant: func(t *testing.T, root string) {
				write(t, root, ProviderConfigRel("999988887777"), "x")
				write(t, root, Dir+"/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - 222233334444.yaml\n  - 999988887777.yaml\n")
			},
			want: []string{"a ProviderConfig for account 999988887777, which the fleet policy does not list", "lists 999988887777.yaml, which is not"}},
	} {
		t.Run(name, func(t *testing.T) {
			tr := repoTree(t)
			tc.plant(t, tr.Root)
			pol, err := policy.Load(tr.Path(policy.RelPath))
			if err != nil {
				t.Fatal(err)
			}
			got := Findings(tr, pol)
			if len(got) != len(tc.want) {
				t.Fatalf("%s: %d findings %v, want %d", tc.reason, len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Message, w) {
					t.Errorf("%s: finding %d %q, want %q", tc.reason, i, got[i].Message, w)
				}
			}
		})
	}
}
