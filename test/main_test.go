// Package test holds the offline proof of the GitOps system tree
// (internal/proof) run on the repository's manifests/, the tests that plant
// one error per check and show the proof catches it, and the benchmark.
//
//	go test ./test -run 'TestProof|TestPlanted|TestSealing|TestRenderClaim|TestUpstream'
//	go test ./test -run '^$' -bench BenchmarkProof -benchtime 5x
//
// Needs the Go module proxy only: the pinned upstream modules (CRDs) are
// fetched with `go mod download`, and the composition functions are built
// from internal/build/tools/functions/* into the user cache on first use.
package test

import (
	"os"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

// TestMain stops the composition function processes the renders started.
func TestMain(m *testing.M) {
	code := m.Run()
	xrender.Shutdown()
	os.Exit(code)
}
