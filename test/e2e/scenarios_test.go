package e2e

import (
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
)

// scenario is one step of a chain that runs in order on one hub, as a
// subtest named name. leaves says what it leaves for the steps after it; a
// gate stops the chain when it fails, because what comes after needs what
// it makes.
type scenario struct {
	name   string
	run    func(t *testing.T)
	leaves string
	gate   bool
}

// runChain runs chain in order as subtests of t; a failed gate ends it.
func runChain(t *testing.T, chain []scenario) {
	for i, s := range chain {
		if !t.Run(s.name, s.run) && s.gate {
			t.Logf("%q failed and the %d scenarios after it need what it leaves (%s): not run", s.name, len(chain)-i-1, s.leaves)
			return
		}
	}
}

// exampleClaimScenarios run in order on TestHubSyncsTheTree's hub once the
// example claim is composed (claimComposes). The spoke's own tools, which
// run once its deploy key opens, would weigh on the timings of the
// scenarios before the bootstrap, so it comes after them.
func exampleClaimScenarios(h *site.Hub, clock *stepClock) []scenario {
	return []scenario{
		{name: "a composed spoke at rest writes nothing", run: func(t *testing.T) { atRest(t, h) }},
		{name: "natMode per-az reroutes", run: func(t *testing.T) { natPerAZ(t, h) }, leaves: "natMode per-az: a NAT gateway per zone"},
		{name: "a used resource is not deleted", run: func(t *testing.T) { usageProtects(t, h) }},
		{name: "the observed cluster losing its status deletes nothing", run: func(t *testing.T) { statusLoss(t, h) }},
		{name: "AWS failing a call transiently, then for good", run: func(t *testing.T) { awsFaults(t, h) }, leaves: "the node group's max at 7"},
		{name: "a Kubernetes upgrade: control plane, nodes, then add-ons", run: func(t *testing.T) { upgrade(t, h) }, leaves: "Kubernetes one minor up"},
		{name: "an instanceTypes change replaces the node group", run: func(t *testing.T) { instanceTypesReplaced(t, h) }, leaves: "m7i nodes in the second node group slot"},
		{name: "the hub's bootstrap reaches the spoke", run: func(t *testing.T) { spokeBootstrap(t, h, clock) }, gate: true,
			leaves: "the deploy key resealed for this hub; the spoke runs its own Flux, its tools and the example app"},
		{name: "a sealing-key rotation reaches every running controller", run: func(t *testing.T) { rotation(t, h) }, leaves: "a new active sealing key"},
		{name: "a commit reaches the spoke while the hub's API server is stopped", run: func(t *testing.T) { hubDown(t, h) }},
		{name: "the claim's teardown leaves nothing in the account but a protected table", run: func(t *testing.T) { teardown(t, h) }, leaves: "no claim"},
	}
}

// newSpokeScenarios run in order on TestHubAddsAndDestroysSpokes' hub,
// whose tree starts with no claim.
func newSpokeScenarios(h *site.Hub) []scenario {
	return []scenario{
		{name: "lead time of a new spoke", run: func(t *testing.T) { leadTime(t, h) }, gate: true,
			leaves: "the example claim merged; its spoke runs its own Flux"},
		{name: "claims in accounts the hub cannot reach make nothing", run: func(t *testing.T) { unreachableAccounts(t, h) }},
		{name: "Crossplane and the function restarted mid-create", run: func(t *testing.T) { restartMidCreate(t, h, claimName) },
			leaves: "a second claim composed, its spoke not played"},
		// The example spoke then runs its workloads, so that its remote
		// steps' finalizers need it when it is unreachable.
		{name: "the example spoke runs its workloads", run: func(t *testing.T) { spokeWorkloadsRun(t, h) }, leaves: "the app's workloads applied on the spoke"},
		{name: "an app's AWS resources in the payments account go with its claim", run: func(t *testing.T) { appInfraLeavesItsAccount(t, h) }},
		{name: "the payments account's stack stays while its spoke is there", run: func(t *testing.T) { accountStackStays(t, h) }},
		{name: "the hub's pulumi up reads its account: its spoke's passes, another team's launch template stops it", run: func(t *testing.T) { hubUpReadsItsAccount(t, h) }},
		{name: "a spoke that waits for good keeps the time its wait began", run: func(t *testing.T) { waitKeepsItsStart(t, h, restartedClaim) }},
		{name: "pulumi destroy's root Kustomization goes after every spoke, with break glass for an unreachable one", run: func(t *testing.T) {
			h.EKS[claimName].Cluster.Proc("kube-apiserver").Stop(10 * time.Second)
			if _, err := h.EKS[claimName].Cluster.Kube.Discovery().ServerVersion(); err == nil {
				t.Fatal("the example spoke's API server still answers")
			}
			destroy(t, h, claimName)
			accountStackGoes(t, h)
		}, leaves: "no root Kustomization, no spoke"},
	}
}
