package kbuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBuildStrictSubstitution(t *testing.T) {
	root := t.TempDir()
	write(t, root, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\ndata:\n  region: ${REGION}\n  who: ${WHO}\n")
	vars := NewVarClient(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "info", Namespace: "flux-system"}, Data: map[string]string{"REGION": "eu-west-1"}})
	for _, tc := range []struct {
		name       string
		substitute map[string]string
		from       bool
		want       string // substring of the error, or of the built data
		wantErr    bool
	}{
		{"all variables set", map[string]string{"WHO": "me"}, true, "eu-west-1/me", false},
		{"inline wins over substituteFrom", map[string]string{"WHO": "me", "REGION": "us-east-1"}, true, "us-east-1/me", false},
		{"missing variable fails in strict mode", nil, true, `"WHO"`, true},
		{"missing substituteFrom ConfigMap", map[string]string{"WHO": "me"}, false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "flux-system"}}
			ks.Spec.Path = "./app"
			ks.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: tc.substitute}
			if tc.from {
				ks.Spec.PostBuild.SubstituteFrom = []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "info"}}
			} else {
				ks.Spec.PostBuild.SubstituteFrom = []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "absent"}}
				tc.wantErr, tc.want = true, "absent"
			}
			objs, err := Build(context.Background(), root, ks, vars)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want error containing %q, got %v", tc.want, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data := objs[0].Object["data"].(map[string]any)
			if got := data["region"].(string) + "/" + data["who"].(string); got != tc.want {
				t.Fatalf("data = %s, want %s", got, tc.want)
			}
			if _, err := os.Stat(filepath.Join(root, "app", "kustomization.yaml")); !os.IsNotExist(err) {
				t.Fatal("generated kustomization.yaml left behind")
			}
		})
	}
}

// TestWalkerWaitsForSources: a Kustomization whose substituteFrom is made
// by another Kustomization built later waits for it, as on a cluster.
func TestWalkerWaitsForSources(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a/ks.yaml", `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: consumer, namespace: flux-system}
spec:
  interval: 1h
  prune: true
  path: ./c
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild:
    substituteFrom: [{kind: ConfigMap, name: made}]
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: producer, namespace: flux-system}
spec:
  interval: 1h
  prune: true
  path: ./b
  sourceRef: {kind: GitRepository, name: flux-system}
`)
	write(t, root, "b/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: made, namespace: flux-system}\ndata: {X: from-b}\n")
	write(t, root, "c/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: out, namespace: default}\ndata:\n  x: ${X}\n")
	w := NewWalker(root, "ssh://example/repo.git")
	w.AddSource(Hub, "flux-system", "flux-system")
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: "flux-system"}}
	ks.Spec.Path = "./a"
	ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system"}
	w.Enqueue(Hub, ks, "test")
	w.Run(context.Background())
	for _, f := range w.Failures {
		t.Errorf("%s: %v", f.Kustomization, f.Err)
	}
	found := false
	for _, b := range w.Results {
		if b.Object.GetName() == "out" {
			found = b.Object.Object["data"].(map[string]any)["x"] == "from-b"
		}
	}
	if !found {
		t.Fatal("consumer was not built with the producer's ConfigMap")
	}
}

// TestWalkerRoundInOrder: Kustomizations of one round build concurrently,
// but the result is the one of building them in queue order: "second"
// reads the ConfigMap that "first", earlier in the same round, replaces,
// and a third Kustomization queued after them sees it too.
func TestWalkerRoundInOrder(t *testing.T) {
	root := t.TempDir()
	ks := func(name, path string) string {
		return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: ` + name + `, namespace: flux-system}
spec:
  interval: 1h
  prune: true
  path: ` + path + `
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild:
    substituteFrom: [{kind: ConfigMap, name: shared}]
`
	}
	write(t, root, "a/ks.yaml", ks("first", "./b")+"---\n"+ks("second", "./c")+"---\n"+ks("third", "./d"))
	write(t, root, "b/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: flux-system}\ndata: {X: new}\n")
	write(t, root, "c/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: out-c, namespace: default}\ndata:\n  x: ${X}\n")
	write(t, root, "d/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: out-d, namespace: default}\ndata:\n  x: ${X}\n")
	w := NewWalker(root, "ssh://example/repo.git")
	w.AddSource(Hub, "flux-system", "flux-system")
	w.AddVars(Hub, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "flux-system"}, Data: map[string]string{"X": "old"}})
	rootKs := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: "flux-system"}}
	rootKs.Spec.Path = "./a"
	rootKs.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system"}
	w.Enqueue(Hub, rootKs, "test")
	w.Run(context.Background())
	for _, f := range w.Failures {
		t.Errorf("%s: %v", f.Kustomization, f.Err)
	}
	got := map[string]any{}
	var order []string
	for _, b := range w.Results {
		if n := b.Object.GetName(); strings.HasPrefix(n, "out-") {
			got[n] = b.Object.Object["data"].(map[string]any)["x"]
			order = append(order, n)
		}
	}
	if got["out-c"] != "new" || got["out-d"] != "new" {
		t.Fatalf("substituted %v, want x=new from the ConfigMap \"first\" replaced", got)
	}
	if strings.Join(order, ",") != "out-c,out-d" {
		t.Fatalf("results in order %v, want queue order out-c,out-d", order)
	}
}
