package test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

func runProof(t testing.TB, tree string) *proof.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := proof.Run(ctx, proof.Options{Tree: tree, ClusterInfo: clusterinfo.Example()})
	if err != nil {
		t.Fatalf("proof.Run(%s): %v", tree, err)
	}
	return rep
}

// TestProof runs the offline proof (checks a-e) on the repository's tree
// and fails listing every finding.
func TestProof(t *testing.T) {
	rep := runProof(t, "../manifests")
	for _, f := range rep.Findings {
		t.Error(f.String())
	}
	if rep.Claims == 0 {
		t.Error("no WorkloadCluster claim was rendered: workload-clusters/ must hold at least the example claim")
	}
	if len(rep.AppClaims) == 0 {
		t.Error("no AppInfrastructure claim was rendered: the app path (payment-app on apps-staging) is not proven")
	}
	t.Logf("%d Kustomizations built, %d objects, %d claims rendered, app claims %v", rep.Kustomizations, rep.Objects, rep.Claims, rep.AppClaims)
	for _, s := range rep.Skipped {
		t.Logf("not built (other source): %s", s)
	}
}

// TestProofFixture runs the proof on the small fixture tree the planted
// error tests mutate: it must pass as is.
func TestProofFixture(t *testing.T) {
	rep := runProof(t, fixture)
	for _, f := range rep.Findings {
		t.Error(f.String())
	}
	if rep.Claims != 2 {
		t.Errorf("claims rendered = %d, want 2", rep.Claims)
	}
	t.Logf("%d Kustomizations built, %d objects, %d claims rendered", rep.Kustomizations, rep.Objects, rep.Claims)
}

// TestRenderClaim: the fleet CLI's entry point renders a claim file of the
// fixture tree into its composite (first) and composed resources.
func TestRenderClaim(t *testing.T) {
	objs, err := xrender.RenderClaim(context.Background(), fixture, fixture+"/gitops-system/workload-clusters/alpha.yaml", clusterinfo.Example())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 || objs[0].GetKind() != "XMiniCluster" {
		t.Fatalf("first object is not the composite: %v", objs)
	}
	if ref, _, _ := unstructured.NestedString(objs[0].Object, "spec", "claimRef", "name"); ref != "alpha" {
		t.Errorf("composite claimRef.name = %q, want alpha", ref)
	}
	want := map[string]string{
		"Role":          "mgmt-spoke-alpha-irsa",
		"ConfigMap":     "alpha-kubeconfig",
		"Kustomization": "alpha-bootstrap",
	}
	for _, o := range objs[1:] {
		if n, ok := want[o.GetKind()]; ok && n == o.GetName() {
			delete(want, o.GetKind())
		}
		if o.GetLabels()["crossplane.io/claim-name"] != "alpha" {
			t.Errorf("%s %s: claim-name label %q", o.GetKind(), o.GetName(), o.GetLabels()["crossplane.io/claim-name"])
		}
	}
	for k, n := range want {
		t.Errorf("not composed: %s %s", k, n)
	}
}
