package kbuild

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	generator "github.com/fluxcd/pkg/kustomize"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSecureBuildMatchesFlux: every kustomization of the repository's tree
// builds to the same YAML with secureBuild as with Flux's SecureBuild, in
// either order (Flux's build resets the global schema, secureBuild parses
// it again lazily).
func TestSecureBuildMatchesFlux(t *testing.T) {
	root := t.TempDir()
	if err := CopySource(filepath.Join("..", "..", "..", "manifests"), root); err != nil {
		t.Fatal(err)
	}
	if usesOpenAPI(root) {
		t.Fatal("the repository's tree has an openapi field: secureBuild would always take Flux's path")
	}
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if len(dirs) < 10 {
		t.Fatalf("only %d kustomizations found", len(dirs))
	}
	for _, dir := range dirs {
		ours, oerr := secureBuild(root, dir)
		flux, ferr := generator.SecureBuild(root, dir, false)
		if (oerr == nil) != (ferr == nil) {
			t.Errorf("%s: secureBuild error %v, Flux %v", dir, oerr, ferr)
			continue
		}
		if oerr != nil {
			continue
		}
		a, err := ours.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		b, err := flux.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%s: secureBuild and Flux's SecureBuild differ", dir)
		}
	}
}

// TestUsesOpenAPI: a kustomization with an openapi field sends every build
// under its root through Flux's function.
func TestUsesOpenAPI(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a/kustomization.yaml", "resources: []\n# openapi: in a comment does not count\n")
	if usesOpenAPI(root) {
		t.Fatal("no openapi field, but usesOpenAPI is true")
	}
	root2 := t.TempDir()
	write(t, root2, "a/kustomization.yaml", "resources: []\n")
	write(t, root2, "b/c/kustomization.yaml", "openapi:\n  path: schema.json\nresources: []\n")
	if !usesOpenAPI(root2) {
		t.Fatal("b/c has an openapi field, but usesOpenAPI is false")
	}
}

// TestPostBuildIDCollision: substitution that gives two resources the same
// id fails, as kustomize-controller's m.Replace does.
func TestPostBuildIDCollision(t *testing.T) {
	root := t.TempDir()
	write(t, root, "app/kustomization.yaml", "resources: [a.yaml, b.yaml]\n")
	write(t, root, "app/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${N}\n  namespace: x\n")
	write(t, root, "app/b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-1\n  namespace: x\n")
	for _, tc := range []struct {
		n       string
		wantErr bool
	}{{"2", false}, {"1", true}} {
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "flux-system"}}
		ks.Spec.Path = "./app"
		ks.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"N": tc.n}}
		objs, err := Build(context.Background(), root, ks, nil)
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "id matched 2 resources") {
				t.Fatalf("N=%s: want the duplicate id error, got %v (%d objects)", tc.n, err, len(objs))
			}
			continue
		}
		if err != nil || len(objs) != 2 {
			t.Fatalf("N=%s: %v, %d objects", tc.n, err, len(objs))
		}
	}
}

func TestTreePrefixAndCopyTree(t *testing.T) {
	for _, tc := range []struct {
		systemPath, want string
		wantErr          bool
	}{
		{"manifests/gitops-system", "manifests", false},
		{"./manifests/gitops-system/", "manifests", false},
		{"gitops-system", "", false},
		{"deploy/fleet/gitops-system", "deploy/fleet", false},
		{"", "", true},
		{"../gitops-system", "", true},
	} {
		got, err := TreePrefix(tc.systemPath)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("TreePrefix(%q) = %q, %v; want %q, error %t", tc.systemPath, got, err, tc.want, tc.wantErr)
		}
	}
	src := filepath.Join(t.TempDir(), "any-name")
	write(t, src, "gitops-system/k.yaml", "x: 1\n")
	write(t, src, "gitops-workloads/w.yaml", "y: 1\n")
	for _, tc := range []struct{ systemPath, file string }{
		{"manifests/gitops-system", "manifests/gitops-system/k.yaml"},
		{"gitops-system", "gitops-system/k.yaml"},
		{"a/b/gitops-system", "a/b/gitops-workloads/w.yaml"},
	} {
		dst := t.TempDir()
		if _, err := CopyTree(src, dst, tc.systemPath); err != nil {
			t.Fatalf("CopyTree(%s): %v", tc.systemPath, err)
		}
		if _, err := os.Stat(filepath.Join(dst, tc.file)); err != nil {
			t.Errorf("CopyTree(%s): %v", tc.systemPath, err)
		}
	}
	if _, err := CopyTree(src, t.TempDir(), "manifests/platform"); err == nil {
		t.Error("CopyTree accepted a GITOPS_SYSTEM_PATH naming no directory of the tree")
	}
}
