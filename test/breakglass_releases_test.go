package test

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
)

// TestBreakGlassReleasesAreTheTrees builds each bootstrap step's folder as
// Flux builds it and requires that every HelmRelease a hub-side step
// applies is the one its Release names (${CLUSTER_NAME}-<Release>, in the
// bootstrap namespace), so that `fleet cluster break-glass` suspends each
// release that would wait for an unreachable spoke, and that a remote
// step names none (its objects live on the spoke).
func TestBreakGlassReleasesAreTheTrees(t *testing.T) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, s := range compose.BootstrapSteps() {
		if s.Path == "" {
			continue
		}
		rm, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("..", "manifests", "gitops-system", filepath.FromSlash(s.Path)))
		if err != nil {
			t.Fatalf("step %s: build %s: %v", s.Part, s.Path, err)
		}
		var got []string
		for _, r := range rm.Resources() {
			if r.GetKind() == "HelmRelease" && strings.HasPrefix(r.GetApiVersion(), "helm.toolkit.fluxcd.io/") {
				got = append(got, r.GetNamespace()+"/"+r.GetName())
			}
		}
		sort.Strings(got)
		var want []string
		if !s.Remote {
			want = []string{compose.BootstrapNamespace + "/${CLUSTER_NAME}-" + s.Release}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("step %s (%s, remote %t): HelmReleases %v, want %v (Step.Release %q)", s.Part, s.Path, s.Remote, got, want, s.Release)
		}
		if s.Remote && s.Release != "" {
			t.Errorf("remote step %s names a hub-side release %q", s.Part, s.Release)
		}
	}
}
