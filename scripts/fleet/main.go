// Command fleet edits and checks the GitOps tree of an EKS fleet; see
// `fleet --help`. All logic lives in internal/fleetcmd.
//
// FLEET_CPUPROFILE=FILE and FLEET_MEMPROFILE=FILE write Go CPU and heap
// profiles of the run (for `go tool pprof -top`); see docs/performance.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"

	"github.com/gitops-fleet/eks-fleet/internal/fleetcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	stopProfile := startProfiles()
	code := fleetcmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
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
