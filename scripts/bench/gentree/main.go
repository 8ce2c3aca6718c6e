// Command gentree writes an N-cluster tree for scripts/bench/bench.sh:
//
//	go run ./scripts/bench/gentree -n 100 -src manifests -dst /tmp/t/manifests
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gitops-fleet/eks-fleet/internal/testsupport/benchtree"
)

func main() {
	n := flag.Int("n", 100, "number of clusters")
	src := flag.String("src", "manifests", "the repository's manifests/ tree")
	dst := flag.String("dst", "", "where to write the tree (must not exist)")
	flag.Parse()
	if *dst == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: gentree -n N -src manifests -dst DIR")
		os.Exit(2)
	}
	if err := benchtree.Generate(*src, *dst, *n); err != nil {
		fmt.Fprintln(os.Stderr, "gentree:", err)
		os.Exit(1)
	}
}
