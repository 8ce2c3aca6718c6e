package e2e

import (
	"context"
	"testing"
	"time"
)

// TestHubAddsAndDestroysSpokes runs a second hub, on its own network, as
// the program brings it up (no spoke cluster is played on it), and with
// the example claim composed merges new claims as teams' pull requests
// do, measuring the lead time of one (leadTime) and killing Crossplane and
// the function while another is created (restartMidCreate); then deletes
// the program's root Kustomization as `pulumi destroy` does, with the
// three spokes still composed (destroy). It runs beside
// TestHubSyncsTheTree, whose hub plays the example spoke's cluster.
func TestHubAddsAndDestroysSpokes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	h := startHub(t, "e2efleet", "10.206.0.0/16", nil)
	if err := hubSynced(ctx, h, 8*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("hub synced after %s", time.Since(start))
	// The example claim composed first, so that the lead time is
	// measured on a hub at rest.
	if err := claimComposed(ctx, h, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("example claim composed after %s", time.Since(start))
	t.Run("lead time of a new spoke", func(t *testing.T) { leadTime(t, h) })
	t.Run("Crossplane and the function restarted mid-create", func(t *testing.T) { restartMidCreate(t, h, leadTimeClaim) })
	t.Run("pulumi destroy's root Kustomization goes after every spoke", func(t *testing.T) { destroy(t, h) })
}
