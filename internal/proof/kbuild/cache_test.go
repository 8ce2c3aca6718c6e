package kbuild

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// cacheFixture is a spoke-bootstrap-like directory: every spoke builds it
// with its own post-build variables.
func cacheFixture(t *testing.T) string {
	root := t.TempDir()
	write(t, root, "boot/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [static.yaml, disabled.yaml, cm.yaml, deploy.yaml]\n")
	// static.yaml has no '$': its substitution does not depend on the
	// variables. The quoted "yes" and the 0777 change under YAML 1.1 if the
	// round trip Flux makes is skipped or done differently.
	write(t, root, "boot/static.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: agent\n  namespace: boot\n  annotations:\n    flag: \"yes\"\n    mode: \"0777\"\n")
	write(t, root, "boot/disabled.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: literal\n  namespace: boot\n  labels:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  script: echo ${NOT_A_VAR}\n")
	write(t, root, "boot/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: info\n  namespace: boot\ndata:\n  cluster: ${CLUSTER_NAME}\n  region: ${AWS_REGION}\n  replicas: ${quote}${REPLICAS}${quote}\n")
	write(t, root, "boot/deploy.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: agent
  namespace: boot
  labels: {spoke: "${CLUSTER_NAME}"}
spec:
  replicas: ${REPLICAS}
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "example.com/agent:1.0"}]
`)
	return root
}

// spokeKs is the Kustomization a spoke's composition would emit for ./boot:
// the same build, its own variables, kubeConfig and dependencies.
func spokeKs(spoke string, replicas string) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: spoke + "-boot", Namespace: "flux-system"}}
	ks.Spec.Path = "./boot"
	ks.Spec.Prune = true
	ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system"}
	ks.Spec.KubeConfig = &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: spoke + "-kubeconfig"}}
	ks.Spec.DependsOn = []kustomizev1.DependencyReference{{Name: spoke + "-eso"}}
	ks.Spec.NamePrefix = "fleet-"
	ks.Spec.Images = []kustomize.Image{{Name: "example.com/agent", NewTag: "1.1"}}
	ks.Spec.Patches = []kustomize.Patch{{
		Patch:  `[{"op": "add", "path": "/metadata/annotations", "value": {"patched": "yes"}}]`,
		Target: &kustomize.Selector{Kind: "Deployment"},
	}}
	ks.Spec.PostBuild = &kustomizev1.PostBuild{
		Substitute:     map[string]string{"CLUSTER_NAME": spoke, "REPLICAS": replicas, "quote": `"`},
		SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: "cluster-info"}},
	}
	return ks
}

func clusterInfoVars() []*corev1.ConfigMap {
	return []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: "flux-system"}, Data: map[string]string{"AWS_REGION": "eu-west-1"}}}
}

// TestCacheSameAsUncached: two spokes built through one cache produce
// exactly what building each from scratch produces (substitution runs per
// Kustomization on its own copy of the cached build), the second spoke
// is served from the cache, and a spec field that changes the build
// (targetNamespace, patches, namePrefix) is not served the first build.
func TestCacheSameAsUncached(t *testing.T) {
	ctx := context.Background()
	root := cacheFixture(t)
	vars := NewVarClient(clusterInfoVars()[0])
	cache := NewCache()
	spokes := []*kustomizev1.Kustomization{spokeKs("alpha", "2"), spokeKs("beta", "3")}
	var cached [][]*unstructured.Unstructured
	for _, ks := range spokes {
		got, err := cache.Build(ctx, root, ks, vars)
		if err != nil {
			t.Fatalf("%s cached: %v", ks.Name, err)
		}
		cached = append(cached, got)
	}
	// Uncached after cached: a cached result must not change later.
	for i, ks := range spokes {
		want, err := Build(ctx, root, ks, vars)
		if err != nil {
			t.Fatalf("%s uncached: %v", ks.Name, err)
		}
		if !reflect.DeepEqual(cached[i], want) {
			t.Errorf("%s: cached build differs from uncached build:\ncached:   %v\nuncached: %v", ks.Name, cached[i], want)
		}
	}
	if hits, misses := cache.Stats(); hits != 1 || misses != 1 {
		t.Errorf("cache hits/misses = %d/%d, want 1/1 (the second spoke served from the first's build)", hits, misses)
	}
	for i, spoke := range []string{"alpha", "beta"} {
		for _, o := range cached[i] {
			if o.GetKind() == "ConfigMap" && o.GetName() == "fleet-info" {
				if got := o.Object["data"].(map[string]any)["cluster"]; got != spoke {
					t.Errorf("%s: ConfigMap data.cluster = %v, want %s", spoke, got, spoke)
				}
			}
			if o.GetKind() == "Deployment" {
				if o.GetName() != "fleet-agent" || o.GetAnnotations()["patched"] != "yes" {
					t.Errorf("%s: Deployment %s annotations %v: namePrefix or patch not applied", spoke, o.GetName(), o.GetAnnotations())
				}
			}
		}
	}

	// Each build-changing field is a different cache entry.
	for name, edit := range map[string]func(*kustomizev1.Kustomization){
		"targetNamespace": func(ks *kustomizev1.Kustomization) { ks.Spec.TargetNamespace = "other" },
		"namePrefix":      func(ks *kustomizev1.Kustomization) { ks.Spec.NamePrefix = "x-" },
		"patches":         func(ks *kustomizev1.Kustomization) { ks.Spec.Patches = nil },
		"images":          func(ks *kustomizev1.Kustomization) { ks.Spec.Images[0].NewTag = "2.0" },
		"commonMetadata": func(ks *kustomizev1.Kustomization) {
			ks.Spec.CommonMetadata = &kustomizev1.CommonMetadata{Labels: map[string]string{"a": "b"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			ks := spokeKs("gamma", "1")
			edit(ks)
			_, before := cache.Stats()
			got, err := cache.Build(ctx, root, ks, vars)
			if err != nil {
				t.Fatal(err)
			}
			if _, after := cache.Stats(); after != before+1 {
				t.Errorf("a Kustomization with another %s was served a cached build", name)
			}
			want, err := Build(ctx, root, ks, vars)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("cached build differs from uncached build")
			}
		})
	}
}

// TestCacheStrictErrorPerKustomization: a variable missing for one spoke
// fails that spoke's build only, as substitution runs per Kustomization.
func TestCacheStrictErrorPerKustomization(t *testing.T) {
	ctx := context.Background()
	root := cacheFixture(t)
	vars := NewVarClient(clusterInfoVars()[0])
	cache := NewCache()
	if _, err := cache.Build(ctx, root, spokeKs("alpha", "2"), vars); err != nil {
		t.Fatal(err)
	}
	bad := spokeKs("beta", "3")
	delete(bad.Spec.PostBuild.Substitute, "REPLICAS")
	_, err := cache.Build(ctx, root, bad, vars)
	if err == nil || !strings.Contains(err.Error(), "REPLICAS") {
		t.Fatalf("want strict substitution error naming REPLICAS, got %v", err)
	}
	if _, err := cache.Build(ctx, root, spokeKs("gamma", "1"), vars); err != nil {
		t.Fatalf("a later spoke: %v", err)
	}
	if hits, misses := cache.Stats(); hits != 2 || misses != 1 {
		t.Errorf("cache hits/misses = %d/%d, want 2/1", hits, misses)
	}
}

// TestCacheSameAsUncachedEdges: the cached build's shortcut for resources
// whose result does not depend on the variables gives what Flux's code
// gives, results and errors, for every way substitution can go: none, no
// variables, the Always strategy, a variable name Flux refuses, a missing
// substituteFrom object, a missing variable.
func TestCacheSameAsUncachedEdges(t *testing.T) {
	ctx := context.Background()
	root := cacheFixture(t)
	vars := NewVarClient(clusterInfoVars()[0])
	for name, edit := range map[string]func(*kustomizev1.Kustomization){
		"substitution": func(*kustomizev1.Kustomization) {},
		"no postBuild": func(ks *kustomizev1.Kustomization) { ks.Spec.PostBuild = nil },
		"no variables": func(ks *kustomizev1.Kustomization) { ks.Spec.PostBuild = &kustomizev1.PostBuild{} },
		"always": func(ks *kustomizev1.Kustomization) {
			ks.Spec.PostBuild = &kustomizev1.PostBuild{}
			ks.Spec.PostBuild.SubstituteStrategy = kustomizev1.SubstituteStrategyAlways
		},
		"bad var name": func(ks *kustomizev1.Kustomization) { ks.Spec.PostBuild.Substitute["bad-name"] = "x" },
		"missing from": func(ks *kustomizev1.Kustomization) { ks.Spec.PostBuild.SubstituteFrom[0].Name = "absent" },
		"missing var":  func(ks *kustomizev1.Kustomization) { delete(ks.Spec.PostBuild.Substitute, "REPLICAS") },
	} {
		t.Run(name, func(t *testing.T) {
			cache := NewCache()
			for _, spoke := range []string{"alpha", "beta"} {
				ks := spokeKs(spoke, "2")
				edit(ks)
				got, gotErr := cache.Build(ctx, root, ks, vars)
				want, wantErr := Build(ctx, root, ks, vars)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: cached error %v, uncached error %v", spoke, gotErr, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: cached build differs from uncached build:\ncached:   %v\nuncached: %v", spoke, got, want)
				}
			}
		})
	}
}

// TestCacheSharesStaticObjects: every spoke gets the same object for a
// resource whose substitution does not depend on the variables (memory and
// validation then cost once), and its own object for one that does.
func TestCacheSharesStaticObjects(t *testing.T) {
	ctx := context.Background()
	root := cacheFixture(t)
	vars := NewVarClient(clusterInfoVars()[0])
	cache := NewCache()
	a, err := cache.Build(ctx, root, spokeKs("alpha", "2"), vars)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cache.Build(ctx, root, spokeKs("beta", "3"), vars)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d and %d objects", len(a), len(b))
	}
	for i := range a {
		shared := a[i] == b[i]
		static := a[i].GetKind() == "ServiceAccount" || a[i].GetName() == "fleet-literal"
		if shared != static {
			t.Errorf("%s %s: shared between spokes = %t, want %t", a[i].GetKind(), a[i].GetName(), shared, static)
		}
	}
}
