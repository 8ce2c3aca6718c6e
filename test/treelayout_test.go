package test

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
)

// TestProofTreeLayouts: the proof places the tree where GITOPS_SYSTEM_PATH
// says it sits in the repository, whatever the directory is called: the
// repository's <repo>/manifests, a checkout under another name, and
// gitops-system split into a repository of its own (GITOPS_SYSTEM_PATH
// "gitops-system", the tree at the repository root) prove the same objects
// with no finding; a GITOPS_SYSTEM_PATH naming no directory of the tree
// fails before anything is built.
func TestProofTreeLayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the proof three times")
	}
	ctx := context.Background()
	// copyTo copies the tree to dir; the example spoke's app Kustomization
	// names its path from the repository root (as `fleet app add --path`
	// takes it), so it moves with the layout.
	copyTo := func(dir, prefix string) string {
		dst := filepath.Join(t.TempDir(), dir)
		if err := treeedit.CopyTree(filepath.Join("..", "manifests"), dst); err != nil {
			t.Fatal(err)
		}
		app := filepath.Join(dst, "gitops-workloads", "clusters", "apps-staging", "payment-app.yaml")
		b, err := os.ReadFile(app)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("path: ./manifests/apps/"), []byte("path: ./"+path.Join(prefix, "apps")+"/"))
		if err := os.WriteFile(app, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	cases := []struct {
		name, tree, systemPath string
	}{
		{"repository layout", filepath.Join("..", "manifests"), "manifests/gitops-system"},
		{"checkout under another name", copyTo("checkout-4711", "manifests"), "manifests/gitops-system"},
		{"split-out gitops-system repository", copyTo("platform-repo", ""), "gitops-system"},
		{"nested path in a monorepo", copyTo("fleet", "deploy/fleet"), "deploy/fleet/gitops-system"},
	}
	objects := -1
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info := clusterinfo.Example()
			info.SystemPath = c.systemPath
			rep, err := proof.Run(ctx, proof.Options{Tree: c.tree, ClusterInfo: info, SkipSealing: true})
			if err != nil {
				t.Fatalf("proof.Run: %v", err)
			}
			for _, f := range rep.Findings {
				t.Errorf("finding: %s", f)
			}
			if rep.Claims == 0 {
				t.Fatal("no claim rendered: the tree was not found where GITOPS_SYSTEM_PATH puts it")
			}
			if objects >= 0 && rep.Objects != objects {
				t.Errorf("%d objects, the repository layout gives %d", rep.Objects, objects)
			}
			objects = rep.Objects
		})
	}
	t.Run("system path naming no directory", func(t *testing.T) {
		info := clusterinfo.Example()
		info.SystemPath = "manifests/platform"
		if _, err := proof.Run(ctx, proof.Options{Tree: filepath.Join("..", "manifests"), ClusterInfo: info, SkipSealing: true}); err == nil {
			t.Fatal("proof.Run accepted GITOPS_SYSTEM_PATH manifests/platform for a tree without a platform directory")
		}
	})
}
