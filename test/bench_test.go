package test

import (
	"context"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
)

// BenchmarkProof measures the whole offline proof (checks a-e) on the
// repository's tree. The first iteration pays for loading the upstream CRD
// index, starting the function processes and generating the RSA-4096
// sealing key; later iterations show the steady cost of a run.
func BenchmarkProof(b *testing.B) {
	benchmarkProof(b, "../manifests")
}

// BenchmarkProofFixture is the same on the small fixture tree.
func BenchmarkProofFixture(b *testing.B) {
	benchmarkProof(b, fixture)
}

func benchmarkProof(b *testing.B, tree string) {
	ctx := context.Background()
	opts := proof.Options{Tree: tree, ClusterInfo: clusterinfo.Example()}
	b.ReportAllocs()
	objects := 0
	for b.Loop() {
		rep, err := proof.Run(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		objects = rep.Objects
	}
	b.ReportMetric(float64(objects), "objects/op")
}
