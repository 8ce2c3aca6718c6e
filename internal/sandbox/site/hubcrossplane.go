package site

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/internet"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// Function modules as the functions publish their packages.
const (
	patchAndTransformModule = "github.com/crossplane-contrib/function-patch-and-transform"
	autoReadyModule         = "github.com/crossplane-contrib/function-auto-ready"
)

// providerPackage matches a provider-upjet-aws service package the tree
// names (the hub's and the spokes' Provider objects).
var providerPackage = regexp.MustCompile(`package: *[^ ]*/` + regexp.QuoteMeta(internet.ProviderOrg) + `/provider-aws-([a-z0-9]+):v`)

// ProviderServices lists the AWS provider services the Provider objects
// under dir install (for the whole tree: the hub's
// infrastructure/crossplane-packages and the spokes'
// spoke-tools/crossplane-packages), and "config", the family package they
// depend on.
func ProviderServices(dir string) ([]string, error) {
	found := map[string]bool{"config": true}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range providerPackage.FindAllStringSubmatch(string(b), -1) {
			found[m[1]] = true
		}
		return nil
	})
	out := make([]string, 0, len(found))
	for s := range found {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, err
}

// ServePackages pushes, to the stand-in registries, the packages the hub's
// and the spokes' Crossplane install: the provider family at the pinned
// release (metadata and CRDs from the module; the AWS stand-in plays their
// controllers), the pinned upstream functions, and this project's function
// built as its release builds it.
func ServePackages(ctx context.Context, in *internet.Internet, repoRoot string) (xpkg, ghcr *internet.Registry, err error) {
	if xpkg, err = internet.NewRegistry(in, "xpkg.crossplane.io"); err != nil {
		return nil, nil, err
	}
	if ghcr, err = internet.NewRegistry(in, "ghcr.io"); err != nil {
		return nil, nil, err
	}
	services, err := ProviderServices(filepath.Join(repoRoot, "manifests"))
	if err != nil {
		return nil, nil, err
	}
	for _, svc := range services {
		img, err := internet.ProviderPackage(ctx, svc)
		if err != nil {
			return nil, nil, fmt.Errorf("provider package %s: %w", svc, err)
		}
		name := "provider-aws-" + svc
		if svc == "config" {
			name = "provider-family-aws"
		}
		if err := xpkg.Push(internet.ProviderOrg+"/"+name, "v"+versions.ProviderAWS, img); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range []struct{ name, module, version string }{
		{"function-patch-and-transform", patchAndTransformModule, versions.FunctionPatchAndTransform},
		{"function-auto-ready", autoReadyModule, versions.FunctionAutoReady},
	} {
		img, err := internet.FunctionPackage(ctx, f.module, "v"+f.version)
		if err != nil {
			return nil, nil, fmt.Errorf("function package %s: %w", f.name, err)
		}
		if err := xpkg.Push("crossplane-contrib/"+f.name, "v"+f.version, img); err != nil {
			return nil, nil, err
		}
	}
	idx, err := internet.WorkloadClusterPackage(ctx, repoRoot)
	if err != nil {
		return nil, nil, err
	}
	repo := internet.RepositoryPath(versions.FunctionRegistry) + "/" + versions.WorkloadClusterFunctionPackage
	if err := ghcr.PushIndex(repo, versions.WorkloadClusterFunction, idx); err != nil {
		return nil, nil, err
	}
	return xpkg, ghcr, nil
}

// PodImages are the programs the hub's pods run: Crossplane core and its
// RBAC manager, the pinned functions and this project's function (built
// from the repository into dir), External Secrets and the Sealed Secrets
// controller.
func PodImages(ctx context.Context, repoRoot, dir string) (map[string]kube.Image, error) {
	fn := filepath.Join(dir, "function-workload-cluster")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", fn, "./functions/workload-cluster")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the function: %v\n%s", err, out)
	}
	xp, err := upstream.Dir(ctx, upstream.CrossplaneModule, "v"+versions.Crossplane)
	if err != nil {
		return nil, err
	}
	// The image's filesystem (cluster/images/crossplane/Dockerfile copies
	// cluster/crds and cluster/webhookconfigurations to /).
	xpFiles := map[string]string{"/crds": filepath.Join(xp, "cluster", "crds"), "/webhookconfigurations": filepath.Join(xp, "cluster", "webhookconfigurations")}
	return map[string]kube.Image{
		"xpkg.crossplane.io/crossplane/crossplane":                                {Tool: binaries.Crossplane, Tags: []string{"v" + versions.Crossplane}, Files: xpFiles},
		"xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform":      {Tool: binaries.PatchAndTransform, Tags: []string{"v" + versions.FunctionPatchAndTransform}},
		"xpkg.crossplane.io/crossplane-contrib/function-auto-ready":               {Tool: binaries.AutoReady, Tags: []string{"v" + versions.FunctionAutoReady}},
		versions.FunctionRegistry + "/" + versions.WorkloadClusterFunctionPackage: {Path: fn, Tags: []string{versions.WorkloadClusterFunction}},
		// One binary for the controller, its webhook and cert-controller
		// (subcommands, as the chart's Deployments run them).
		"oci.external-secrets.io/external-secrets/external-secrets": {Tool: binaries.ExternalSecrets, Tags: []string{"v" + versions.ExternalSecrets}},
		"bitnami/sealed-secrets-controller":                         {Tool: binaries.SealedSecrets, Tags: []string{versions.SealedSecrets}},
	}, nil
}
