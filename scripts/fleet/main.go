// Command fleet edits and checks the GitOps tree of an EKS fleet; see
// `fleet --help`. All logic lives in internal/fleet/fleetcmd.
//
// FLEET_CPUPROFILE=FILE and FLEET_MEMPROFILE=FILE write Go CPU and heap
// profiles of the run (for `go tool pprof -top`); see docs/performance.md.
//
// Garbage collection: fleet allocates much and keeps little (validating 100
// clusters allocates gigabytes; what stays live is ~100 MB, ~300-550 MB at
// 1,000 clusters), so it collects at GOGC=400 instead of 100 (about 20%
// less CPU at 100 clusters) under an 800 MiB soft memory limit, which is
// what bounds memory on large fleets: a 1,000-cluster `fleet validate`
// stays under 1 GiB (docs/performance.md). A fleet whose live heap nears
// the limit makes the collector work harder: set GOMEMLIMIT higher. GOGC
// and GOMEMLIMIT, when set, win.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
)

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	stopProfile := startProfiles()
	deps := fleetcmd.DefaultDeps()
	deps.Sandbox = localSandbox{}
	code := fleetcmd.RunWithDeps(ctx, os.Args[1:], os.Stdout, os.Stderr, deps)
	stopProfile()
	stop()
	os.Exit(code)
}

// Collector settings (see the package comment).
const (
	gcPercent   = 400
	memoryLimit = 800 << 20
)

// tuneGC applies gcPercent and memoryLimit unless the environment sets
// GOGC or GOMEMLIMIT.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
}

// startProfiles starts the profiles the environment asks for and returns
// the function that writes them.
func startProfiles() func() {
	var cpu *os.File
	if p := os.Getenv("FLEET_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			cpu = f
		} else {
			fmt.Fprintf(os.Stderr, "fleet: FLEET_CPUPROFILE %s: cannot start the profile\n", p)
		}
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if p := os.Getenv("FLEET_MEMPROFILE"); p != "" {
			f, err := os.Create(p)
			if err != nil {
				fmt.Fprintf(os.Stderr, "fleet: FLEET_MEMPROFILE: %v\n", err)
				return
			}
			runtime.GC()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fmt.Fprintf(os.Stderr, "fleet: FLEET_MEMPROFILE: %v\n", err)
			}
			f.Close()
		}
	}
}
