package e2e

import "time"

// The suite's time bounds: how long each kind of wait may take before its
// scenario fails. Each is several times what the wait takes on the CI
// machine with the other scenarios beside it (docs/e2e.md, "Figures"), so
// a failure is a fault, not a slow machine; none is a goal (the goals are
// measured, docs/performance.md).
const (
	// settleBound: one controller acting on what it sees at once (an AWS
	// kind released, a sealing key's Secrets moved, a table reported
	// protected, AWS starting a create).
	settleBound = 3 * time.Minute
	// commitBound: a commit reaching where it acts (the hub's Flux, the
	// claim, a spoke's own Flux), AWS taking or refusing it.
	commitBound = 4 * time.Minute
	// composeBound: a claim composed to its last stage, an upgrade's three
	// stages, an app Ready on its spoke.
	composeBound = 5 * time.Minute
	// replaceBound: a commit whose change replaces AWS resources (a
	// spoke's private routes) or that the provider refuses (ForceNew).
	replaceBound = 6 * time.Minute
	// hubSyncBound: every hub Kustomization Ready and every package
	// Healthy, or failing as planted; a spoke's bootstrap chain.
	hubSyncBound = 10 * time.Minute
	// spokeBound: a spoke's whole life on the hub: from merge to its own
	// Flux and its claim Ready, or its bootstrap steps gone after break
	// glass.
	spokeBound = 15 * time.Minute
	// teardownBound: a claim removed to nothing of it left in the account.
	teardownBound = 15 * time.Minute
	// destroyBound: the root Kustomization deleted to every spoke gone.
	destroyBound = 20 * time.Minute
	// restartBound: a process of this machine restarted to serving (the
	// hub's API server ready again).
	restartBound = 90 * time.Second
	// observedBound: what the suite's own watchers already saw, read back
	// (the step clock's record of a step that is Ready).
	observedBound = 10 * time.Second
)

// Bounds of TestSandbox's steps: each `fleet` command as a user runs it
// (the status poll's period with them).
const (
	sandboxUpTimeout        = 15 * time.Minute
	sandboxInterruptWithin  = 2 * time.Minute
	sandboxSpokeTimeout     = 10 * time.Minute
	sandboxTeardownTimeout  = 10 * time.Minute
	sandboxCommandTimeout   = 5 * time.Minute
	sandboxStatusPollPeriod = 5 * time.Second
)
