package test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/benchtree"
)

// TestProofScope: proof.Options.Claims renders exactly the named claims
// (nil: all, empty: none) while the hub tree, and with it every claim,
// still builds.
func TestProofScope(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the proof three times")
	}
	tree := filepath.Join(t.TempDir(), "manifests")
	if err := benchtree.Generate(filepath.Join("..", "manifests"), tree, 3); err != nil {
		t.Fatal(err)
	}
	named := benchtree.Name(2)
	for _, tc := range []struct {
		name   string
		claims []string
		want   int
	}{
		{"all", nil, 3},
		{"one", []string{named}, 1},
		{"none", []string{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := proof.Run(context.Background(), proof.Options{Tree: tree, ClusterInfo: clusterinfo.Example(), SkipSealing: true, Claims: tc.claims, KeepRendered: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Findings {
				t.Errorf("finding: %s", f)
			}
			if rep.Claims != tc.want {
				t.Fatalf("%d claims rendered, want %d", rep.Claims, tc.want)
			}
			var rendered []string
			for k := range rep.Rendered {
				rendered = append(rendered, k)
			}
			if tc.want == 1 && (len(rendered) != 1 || filepath.Base(rendered[0]) != named) {
				t.Fatalf("rendered %v, want only %s", rendered, named)
			}
			if rep.Kustomizations < 2 {
				t.Fatalf("%d Kustomizations built: the hub tree was not built", rep.Kustomizations)
			}
		})
	}
}
