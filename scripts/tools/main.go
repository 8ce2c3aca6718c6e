// Command tools builds the upstream programs the tests run (etcd, the
// Kubernetes control plane, kwok, Flux's controllers, Crossplane, External
// Secrets, Sealed Secrets, the pinned composition functions) into the
// binary cache, and prints where each is. The tests build what they need
// themselves; run this to build everything ahead (binaries.Parallel at a
// time), or to see the paths. CI runs it beside the tests (.ci/run).
// -prune first removes from the binary cache what earlier pins and killed
// builds left (binaries.Prune): CI runs it, as its machines may keep their
// caches from run to run.
//
//	go run ./scripts/tools [-prune] [NAME...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
)

func main() {
	prune := flag.Bool("prune", false, "first remove the cached binaries of earlier pins and what killed builds left")
	flag.Parse()
	want := map[string]bool{}
	for _, a := range flag.Args() {
		want[a] = true
	}
	var unknown []string
	for n := range want {
		found := false
		for _, t := range binaries.All() {
			found = found || t.Name == n
		}
		if !found {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		fmt.Fprintf(os.Stderr, "unknown tools %v; known:", unknown)
		for _, t := range binaries.All() {
			fmt.Fprintf(os.Stderr, " %s", t.Name)
		}
		fmt.Fprintln(os.Stderr)
		os.Exit(2)
	}
	if *prune {
		removed, err := binaries.Prune(binaries.CacheDir(), binaries.All())
		for _, r := range removed {
			fmt.Printf("pruned\t%s\n", r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "prune the binary cache:", err)
			os.Exit(1)
		}
	}
	var tools []binaries.Tool
	for _, t := range binaries.All() {
		if len(want) == 0 || want[t.Name] {
			tools = append(tools, t)
		}
	}
	paths, err := binaries.BuildAll(context.Background(), binaries.Parallel, tools...)
	for _, t := range tools {
		if p, ok := paths[t.Name]; ok {
			fmt.Printf("%s\t%s\n", t.Name, p)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
