package site

import (
	"context"
	"slices"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// fluxTools are the Flux controllers the hub and the stand-in EKS run
// (spokes run the first two).
var fluxTools = []binaries.Tool{binaries.SourceController, binaries.KustomizeController, binaries.HelmController}

// podTools are the programs the hub's pods run (PodImages), beside this
// repository's function, which is built from the working tree.
var podTools = []binaries.Tool{binaries.Crossplane, binaries.PatchAndTransform, binaries.AutoReady, binaries.ExternalSecrets, binaries.SealedSecrets}

// engineTools run the program's Kubernetes half (Engine): the Pulumi CLI
// and the Kubernetes provider plugin.
var engineTools = []binaries.Tool{binaries.Pulumi, binaries.PulumiKubernetes}

// Tools are the upstream programs a hub and its spokes run, and the engine
// that brings the hub up, in binaries.All's order (longest cold build
// first).
func Tools() []binaries.Tool {
	want := map[string]bool{}
	for _, t := range slices.Concat(kube.Tools, podTools, fluxTools, engineTools) {
		want[t.Name] = true
	}
	var tools []binaries.Tool
	for _, t := range binaries.All() {
		if want[t.Name] {
			tools = append(tools, t)
			delete(want, t.Name)
		}
	}
	return tools
}

// BuildTools builds every upstream program the suite runs, binaries.Parallel
// at a time, so that on a cold cache the suite's first hub does not wait for
// them one by one. It is a no-op when all are cached.
func BuildTools(ctx context.Context) error {
	_, err := binaries.BuildAll(ctx, binaries.Parallel, Tools()...)
	return err
}
