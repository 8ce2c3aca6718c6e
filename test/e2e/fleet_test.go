package e2e

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/testsupport/e2e"
)

// TestHubAddsAndDestroysSpokes runs a second hub, on its own network, as
// the program brings it up, and with the example claim composed merges
// new claims as teams' pull requests do, measuring the lead time of one
// (leadTime) and killing Crossplane and the function while another is
// created (restartMidCreate); then deletes the program's root
// Kustomization as `pulumi destroy` does, with the three spokes still
// composed (destroy). Only the example spoke's cluster is played: its
// bootstrap installs the hub-side releases onto it, its key resealed for
// this hub, it runs its own Flux and the example app, and its API server is
// then stopped, so that its teardown needs break glass. It runs beside
// TestHubSyncsTheTree.
func TestHubAddsAndDestroysSpokes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	h := startHub(t, "e2efleet", "10.206.0.0/16", nil, e2e.EKSOptions{Spoke: claimName, PodCIDR: netip.MustParsePrefix("10.206.32.1/20")})
	if err := hubSynced(ctx, h, 8*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("hub synced after %s", time.Since(start))
	// The example claim composed and its hub-side releases installed
	// onto its spoke first, so that the lead time is measured on a hub at
	// rest.
	if err := claimComposed(ctx, h, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	var state string
	err := e2e.Poll(ctx, 6*time.Minute, func() (bool, error) {
		ok, s, err := stepsReady(ctx, h, claimName, "flux-operator")
		state = s
		return ok, err
	})
	if err != nil {
		t.Fatalf("the example spoke's hub-side steps: %v\n%s", err, state)
	}
	t.Logf("example claim composed and its hub-side releases installed after %s", time.Since(start))
	t.Run("lead time of a new spoke", func(t *testing.T) { leadTime(t, h) })
	t.Run("Crossplane and the function restarted mid-create", func(t *testing.T) { restartMidCreate(t, h, leadTimeClaim) })
	// The example spoke then runs its workloads, so that its remote
	// steps' finalizers need it when it is unreachable.
	t.Run("the example spoke runs its workloads", func(t *testing.T) { spokeWorkloadsRun(t, h) })
	t.Run("pulumi destroy's root Kustomization goes after every spoke, with break glass for an unreachable one", func(t *testing.T) {
		h.EKS[claimName].Cluster.Proc("kube-apiserver").Stop(10 * time.Second)
		if _, err := h.EKS[claimName].Cluster.Kube.Discovery().ServerVersion(); err == nil {
			t.Fatal("the example spoke's API server still answers")
		}
		destroy(t, h, claimName)
	})
}
