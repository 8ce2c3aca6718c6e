package test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
)

// TestProofSpokeAccount: a claim in a spoke account of the tree's policy
// passes the proof `fleet validate` and `fleet cluster add` run: its roles
// carry that account's boundary, which the account role allows, and its
// kubeconfig names its cluster in that account. (Before, the proof wanted
// the hub account's boundary on every role, so `fleet cluster add
// --account` refused every such claim it wrote.)
func TestProofSpokeAccount(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "manifests")
	if err := treeedit.CopyTree(filepath.Join("..", "manifests"), tree); err != nil {
		t.Fatal(err)
	}
	claims := filepath.Join(tree, "gitops-system", "workload-clusters")
	b, err := os.ReadFile(filepath.Join(claims, "apps-staging.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// the example claim, in the example spoke account
	claim := strings.Replace(string(b), "\nspec:\n", "\nspec:\n  account: \""+clusterinfo.ExampleSpokeAccount+"\"\n", 1)
	if !strings.Contains(claim, "account: \""+clusterinfo.ExampleSpokeAccount) {
		t.Fatalf("the example claim changed shape:\n%s", claim)
	}
	if err := os.WriteFile(filepath.Join(claims, "apps-staging.yaml"), []byte(claim), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := proof.Run(context.Background(), proof.Options{Tree: tree, ClusterInfo: clusterinfo.Example(), SkipSealing: true, Claims: []string{"apps-staging"}, KeepRendered: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("finding: %s", f)
	}
	if rep.Claims != 1 {
		t.Fatalf("%d claims rendered, want 1", rep.Claims)
	}
}
