package fleetvalidate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

// The committed example spoke has its deploy key; each planted way of
// losing it fails with a finding that names `fleet cluster add`.
func TestDeployKeyFindings(t *testing.T) {
	dir := fleettree.WorkloadsRel("apps-staging") + "/" + fleettree.DeployKeyDir
	kpath := dir + "/" + fleettree.Kustomization
	keyPath := fleettree.DeployKeyRel("apps-staging")
	tests := []struct {
		name  string
		plant func(t *testing.T, root string)
		fail  bool
	}{
		{"committed tree", func(*testing.T, string) {}, false},
		{"empty resources", func(t *testing.T, root string) {
			write(t, root, kpath, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n")
		}, true},
		{"no deploy-key kustomization", func(t *testing.T, root string) {
			if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(dir))); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"sealed into another Secret name", func(t *testing.T, root string) {
			edit(t, root, keyPath, "  name: flux-system\n  namespace: flux-system\nspec:", "  name: deploy-key\n  namespace: flux-system\nspec:")
		}, true},
		{"a plain Secret, not sealed", func(t *testing.T, root string) {
			edit(t, root, keyPath, "kind: SealedSecret", "kind: Secret")
		}, true},
		{"identity missing", func(t *testing.T, root string) {
			edit(t, root, keyPath, "    identity: ", "    identity-old: ")
		}, true},
		{"known_hosts missing", func(t *testing.T, root string) {
			edit(t, root, keyPath, "    known_hosts: ", "    known-hosts: ")
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := repoTree(t)
			tt.plant(t, root)
			tree := &fleettree.Tree{Root: root}
			pol, err := policy.Load(tree.Path(policy.RelPath))
			if err != nil {
				t.Fatal(err)
			}
			fs, _, err := PolicyFindings(tree, pol, policy.Hub{VPCCIDR: "10.0.0.0/16"})
			if err != nil {
				t.Fatal(err)
			}
			var got []Finding
			for _, f := range fs {
				if f.Check == "policy/deploy-key" {
					got = append(got, f)
				}
			}
			if !tt.fail {
				if len(got) > 0 {
					t.Fatalf("unexpected findings: %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one policy/deploy-key finding, got %+v", got)
			}
			if !strings.Contains(got[0].Message, "fleet cluster add apps-staging") || got[0].Object != "apps-staging" {
				t.Errorf("finding does not name the cluster and `fleet cluster add`: %+v", got[0])
			}
		})
	}
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func edit(t *testing.T, root, rel, old, new string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", rel, old)
	}
	write(t, root, rel, strings.Replace(string(b), old, new, 1))
}

// fleet validate refuses a claim whose admin comes from an account the
// fleet policy does not list (default: the hub's), and passes the committed
// claim, whose admin is in the hub's account.
func TestAdminAccountFindings(t *testing.T) {
	claim := fleettree.ClaimRel("apps-staging")
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, root string)
		want  int
	}{
		{"committed tree", func(*testing.T, string) {}, 0},
		{"admin of another account", func(t *testing.T, root string) {
			edit(t, root, claim, "arn:aws:iam::111122223333:role/platform-admins", "arn:aws:iam::999988887777:role/platform-admins")
		}, 1},
		{"that account listed in the policy", func(t *testing.T, root string) {
			edit(t, root, claim, "arn:aws:iam::111122223333:role/platform-admins", "arn:aws:iam::999988887777:role/platform-admins")
			edit(t, root, policy.RelPath, "adminAccounts: []", `adminAccounts: ["999988887777"]`)
		}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := repoTree(t)
			tt.plant(t, root)
			tree := &fleettree.Tree{Root: root}
			pol, err := policy.Load(tree.Path(policy.RelPath))
			if err != nil {
				t.Fatal(err)
			}
			fs, _, err := PolicyFindings(tree, pol, policy.Hub{VPCCIDR: "10.0.0.0/16", AccountID: "111122223333"})
			if err != nil {
				t.Fatal(err)
			}
			var got []Finding
			for _, f := range fs {
				if f.Check == "policy/admin-account" {
					got = append(got, f)
				}
			}
			if len(got) != tt.want {
				t.Fatalf("got %+v, want %d policy/admin-account findings", got, tt.want)
			}
			for _, f := range got {
				if !strings.Contains(f.Message, "999988887777") || !strings.Contains(f.Message, "spec.adminAccounts") {
					t.Errorf("finding does not name the account and the policy setting: %+v", f)
				}
			}
		})
	}
}
