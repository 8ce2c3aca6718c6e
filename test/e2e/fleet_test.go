package e2e

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// TestHubAddsAndDestroysSpokes runs a second hub, on its own network, as
// the program brings it up but with no claim in its tree, and merges
// claims as teams' pull requests do: the example claim with its deploy
// key, its spoke in the payments team's own account (the stand-in holds
// it as Pulumi.acct-payments.yaml prepared it, and the hub's Crossplane
// reaches it through the account's ProviderConfig), measuring its lead
// time to the spoke's own Flux (leadTime), then another one in the hub's
// account, killing Crossplane and the function while it is created
// (restartMidCreate); runs the payments account's stack program as
// `pulumi destroy --run-program` does, whose delete guard must refuse while
// the spoke is there (accountStackStays); then deletes the program's root
// Kustomization as
// `pulumi destroy` does, with both spokes still composed (destroy). Only
// the example spoke's cluster is played: the hub's bootstrap installs onto
// it, it runs its own Flux and the example app, and its API server is then
// stopped, so that its teardown needs break glass. Its Crossplane runs
// with the tree's own settings, circuit breaker included (the other hubs
// raise it: site.CircuitBreakerBurst), so the suite proves that the hub
// as it ships brings a spoke up and tears it down. It runs beside
// TestHubSyncsTheTree.
func TestHubAddsAndDestroysSpokes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	// The first `pulumi up` is killed while it waits for the FluxInstance;
	// after `pulumi cancel` the next one must bring the hub up.
	example, _ := exampleAccount(t)
	accounts := fleetHubAccounts(t)
	h := startHubWith(t, site.HubOptions{Network: "e2efleet", Prefix: netip.MustParsePrefix("10.206.0.0/16"), KillFirstUp: true, TreeCircuitBreaker: true,
		Edit: fleetHubTree(example), Config: withFleetHubAccounts(accounts), SpokeAccounts: accounts, Deployers: fleetHubDeployers(),
		EKS: []site.EKSOptions{{Spoke: claimName, PodCIDR: netip.MustParsePrefix("10.206.32.1/20"), Account: clusterinfo.ExampleSpokeAccount}}})
	t.Logf("pulumi up killed %s into the FluxInstance's create: %v", site.KillAfter, h.KilledUp.Steps)
	t.Logf("pulumi up after pulumi cancel: %v", h.FirstUp.Steps)
	if !h.FirstUp.Changed() {
		t.Fatal("the pulumi up after the kill changed nothing: the killed one was not stopped midway")
	}
	if err := check.HubSynced(ctx, h, manifests, hubSyncBound); err != nil {
		t.Fatal(err)
	}
	t.Logf("hub synced after %s", time.Since(start))
	runChain(t, newSpokeScenarios(h))
}
