package test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

// TestBuildCacheTwoSpokes: the proof builds each spoke's bootstrap
// Kustomizations (spoke-bootstrap/*, spoke-tools, workloads) through a
// build cache, so the second spoke reuses the first one's kustomize
// builds. Walking the repository's tree with two spokes through the cache
// must give exactly what building every Kustomization from scratch gives:
// the same objects, byte for byte after substitution, in the same order,
// with the same failures.
func TestBuildCacheTwoSpokes(t *testing.T) {
	ctx := context.Background()
	info := clusterinfo.Example()
	work := t.TempDir()
	if err := kbuild.CopySource("../manifests", work); err != nil {
		t.Fatal(err)
	}

	// The hub, then two spokes: the example claim and a second one.
	cached := kbuild.NewWalker(work, info.GitURL)
	xrender.SeedHub(cached, info)
	cached.Run(ctx)
	var defs []*unstructured.Unstructured
	var claim *unstructured.Unstructured
	for _, b := range cached.Results {
		defs = append(defs, b.Object)
		if b.Cluster == kbuild.Hub && b.Object.GetKind() == workloadcluster.ClaimKind && claim == nil {
			claim = b.Object
		}
	}
	if claim == nil {
		t.Fatal("the tree applies no WorkloadCluster claim")
	}
	second := claim.DeepCopy()
	second.SetName("y" + claim.GetName()[1:])
	var composed [][]*unstructured.Unstructured
	for _, c := range []*unstructured.Unstructured{claim, second} {
		res, err := xrender.Render(ctx, c, defs, info)
		if err != nil {
			t.Fatalf("render %s: %v", c.GetName(), err)
		}
		composed = append(composed, res.Composed)
	}
	addSpokes := func(w *kbuild.Walker) {
		for i, c := range []*unstructured.Unstructured{claim, second} {
			w.AddObjects(kbuild.Hub, "Composition for "+c.GetName(), composed[i])
		}
		w.Run(ctx)
	}
	_, missesHub := cached.Cache.Stats()
	addSpokes(cached)
	hits, misses := cached.Cache.Stats()

	uncached := kbuild.NewWalker(work, info.GitURL)
	uncached.Cache = nil
	xrender.SeedHub(uncached, info)
	uncached.Run(ctx)
	addSpokes(uncached)

	spokeKs := 0
	for _, k := range cached.Kustomizations {
		if strings.Contains(k.Origin, "Composition for "+second.GetName()) || strings.Contains(k.Cluster, second.GetName()) {
			spokeKs++
		}
	}
	if spokeKs < 5 {
		t.Fatalf("the second spoke has %d Kustomizations; want its bootstrap ones", spokeKs)
	}
	// The second spoke's Kustomizations build paths the first one built;
	// only its own workloads folder is new.
	if hits < spokeKs-3 {
		t.Errorf("cache hits = %d for %d Kustomizations of the second spoke (misses %d, %d of them for the hub)", hits, spokeKs, misses, missesHub)
	}
	t.Logf("%d objects; cache: %d hits, %d misses (%d for the hub)", len(cached.Results), hits, misses, missesHub)

	if len(cached.Results) != len(uncached.Results) {
		t.Fatalf("cached walk built %d objects, uncached %d", len(cached.Results), len(uncached.Results))
	}
	mentions := map[string]int{}
	for i, c := range cached.Results {
		u := uncached.Results[i]
		where := c.Origin + ": " + c.Object.GetKind() + " " + c.Object.GetNamespace() + "/" + c.Object.GetName()
		if c.Origin != u.Origin || c.Cluster != u.Cluster || c.Path != u.Path {
			t.Errorf("object %d: cached %s on %s, uncached %s: %s on %s", i, where, c.Cluster, u.Origin, u.Object.GetName(), u.Cluster)
			continue
		}
		if !reflect.DeepEqual(c.Object.Object, u.Object.Object) {
			t.Errorf("%s differs:\ncached:   %v\nuncached: %v", where, c.Object.Object, u.Object.Object)
		}
		for _, spoke := range []string{claim.GetName(), second.GetName()} {
			if strings.Contains(c.Cluster, spoke) {
				mentions[spoke]++
			}
		}
	}
	for _, spoke := range []string{claim.GetName(), second.GetName()} {
		if mentions[spoke] == 0 {
			t.Errorf("nothing was built onto spoke %s", spoke)
		}
	}
	if got, want := failureList(cached.Failures), failureList(uncached.Failures); !reflect.DeepEqual(got, want) {
		t.Errorf("failures differ:\ncached:   %v\nuncached: %v", got, want)
	}
	if !reflect.DeepEqual(cached.Skipped, uncached.Skipped) {
		t.Errorf("skipped differ:\ncached:   %v\nuncached: %v", cached.Skipped, uncached.Skipped)
	}
}

func failureList(fs []kbuild.Failure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kustomization+": "+f.Err.Error())
	}
	return out
}
