// Command xpkg builds the workload-cluster composition function package
// offline and writes it as an OCI image layout, or pushes it as
// <registry>/function-workload-cluster:<version> (the release workflow).
//
//	go run ./scripts/xpkg -out _out/xpkg
//	go run ./scripts/xpkg -push ghcr.io/gitops-fleet/eks-fleet
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gitops-fleet/eks-fleet/internal/build/xpkgbuild"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// packageName is the repository name under the registry.
const packageName = versions.WorkloadClusterFunctionPackage

func main() {
	out := flag.String("out", "", "write the package as an OCI image layout to this directory")
	push := flag.String("push", "", "push to <registry>/"+packageName+":<version> (registry, e.g. ghcr.io/org/eks-fleet)")
	version := flag.String("version", versions.WorkloadClusterFunction, "tag to push; must equal internal/contract/versions.WorkloadClusterFunction")
	flag.Parse()
	if err := run(context.Background(), *out, *push, *version); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out, push, version string) error {
	if out == "" && push == "" {
		return fmt.Errorf("give -out DIR and/or -push REGISTRY")
	}
	if version != versions.WorkloadClusterFunction {
		return fmt.Errorf("-version %q differs from internal/contract/versions.WorkloadClusterFunction %q: bump the constant, not the tag", version, versions.WorkloadClusterFunction)
	}
	var ref name.Reference
	if push != "" {
		r, err := name.NewTag(push+"/"+packageName+":"+version, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("-push %q is not an OCI registry/repository reference: %w", push, err)
		}
		ref = r
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	idx, err := xpkgbuild.Build(ctx, xpkgbuild.Options{
		ModuleDir:   wd,
		MainPackage: "./functions/workload-cluster",
		Metadata:    "functions/workload-cluster/package/crossplane.yaml",
	})
	if err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	if out != "" {
		if err := xpkgbuild.WriteLayout(out, idx); err != nil {
			return err
		}
		fmt.Printf("wrote %s (%s)\n", out, d)
	}
	if ref != nil {
		if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Printf("pushed %s@%s\n", ref, d)
	}
	return nil
}
