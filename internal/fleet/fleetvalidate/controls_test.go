package fleetvalidate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// repoTree copies the repository's claims folder (policy, claims,
// kustomization) and the claims' workloads folders into a temp tree.
func repoTree(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "manifests")
	root := filepath.Join(t.TempDir(), "manifests")
	entries, err := os.ReadDir(filepath.Join(src, fleettree.ClaimsDir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, fleettree.ClaimsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, fleettree.ClaimsDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, fleettree.ClaimsDir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wl := fleettree.WorkloadsRel("apps-staging")
	if err := treeedit.CopyTree(filepath.Join(src, filepath.FromSlash(wl)), filepath.Join(root, filepath.FromSlash(wl))); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestPolicyFindingsClaimControls(t *testing.T) {
	const claim = "gitops-system/workload-clusters/apps-staging.yaml"
	tests := []struct {
		name   string
		add    string // appended to the claim's spec
		want   []string
		noneOf []string
	}{
		{"repository claim", "", nil, []string{"policy/delete-policy", "policy/composition", "api/parse"}},
		{"foreground delete", "  compositeDeletePolicy: Foreground\n", nil, []string{"policy/delete-policy", "api/parse"}},
		{"background delete", "  compositeDeletePolicy: Background\n", []string{"policy/delete-policy"}, []string{"api/parse"}},
		{"platform composition", "  compositionRef:\n    name: workload-cluster-eks\n", nil, []string{"policy/composition", "api/parse"}},
		{"other composition", "  compositionRef:\n    name: cheap\n", []string{"policy/composition"}, []string{"api/parse"}},
		{"composition selector", "  compositionSelector:\n    matchLabels:\n      provider: aws\n", []string{"policy/composition"}, []string{"api/parse"}},
		{"other revision", "  compositionRevisionRef:\n    name: cheap-abc\n", []string{"policy/composition"}, []string{"api/parse"}},
		{"background and another unknown field", "  compositeDeletePolicy: Background\n  bogus: 1\n", []string{"api/parse"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := repoTree(t)
			p := filepath.Join(root, filepath.FromSlash(claim))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, append(b, tt.add...), 0o644); err != nil {
				t.Fatal(err)
			}
			tree, err := fleettree.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			pol, err := policy.Load(tree.Path(policy.RelPath))
			if err != nil {
				t.Fatal(err)
			}
			fs, claims, err := PolicyFindings(tree, pol, policy.Hub{VPCCIDR: "10.0.0.0/16"})
			if err != nil {
				t.Fatal(err)
			}
			checks := map[string]Finding{}
			var all []string
			for _, f := range fs {
				checks[f.Check] = f
				all = append(all, f.Check+": "+f.Message)
			}
			for _, w := range tt.want {
				f, ok := checks[w]
				if !ok {
					t.Errorf("no %s finding; got %q", w, all)
					continue
				}
				if f.File != claim {
					t.Errorf("%s finding names file %q, want %s", w, f.File, claim)
				}
			}
			for _, n := range tt.noneOf {
				if _, ok := checks[n]; ok {
					t.Errorf("unexpected %s finding: %q", n, all)
				}
			}
			// A claim whose only extra fields are Crossplane's is still
			// read (its other rules apply, fleet commands see it).
			wantClaims := 1
			if strings.Contains(tt.add, "bogus") {
				wantClaims = 0
			}
			if len(claims) != wantClaims {
				t.Errorf("%d claims read, want %d", len(claims), wantClaims)
			}
		})
	}
}
