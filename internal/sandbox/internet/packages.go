package internet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"text/template"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/build/xpkgbuild"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// ProviderOrg is where the provider-upjet-aws family publishes.
const ProviderOrg = "crossplane-contrib"

// ProviderPackage builds the provider-upjet-aws package for service (ec2,
// eks, ...; "config" is provider-family-aws) at the pinned release as
// upstream's build does (cluster/images/provider-aws/Makefile): the
// metadata from package/crossplane.yaml.tmpl, the service's CRDs from
// package/crds (the family's: group aws) with the conversion webhook
// package/kustomize/webhook.yaml adds. The image holds no controller: the
// AWS stand-in plays it.
func ProviderPackage(ctx context.Context, service string) (v1.Image, error) {
	dir, err := upstream.Dir(ctx, upstream.ProviderAWSModule, "v"+versions.ProviderAWS)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.ParseFiles(filepath.Join(dir, "package", "crossplane.yaml.tmpl"))
	if err != nil {
		return nil, err
	}
	name, group := "provider-aws-"+service, service
	if service == "config" {
		name, group = "provider-family-aws", "aws"
	}
	var meta bytes.Buffer
	if err := tmpl.Execute(&meta, map[string]string{
		"Name": name, "Service": service, "ProviderName": "aws", "ProviderAuthGroup": "aws",
		"XpkgRegOrg": "xpkg.crossplane.io/" + ProviderOrg, "DepConstraint": ">= 0.0.0",
	}); err != nil {
		return nil, err
	}
	crds, err := readYAMLFiles(filepath.Join(dir, "package", "crds"), group+".aws.upbound.io_", group+".aws.m.upbound.io_")
	if err != nil {
		return nil, err
	}
	if service == "config" {
		if crds, err = readYAMLFiles(filepath.Join(dir, "package", "crds"), "aws.upbound.io_", "aws.m.upbound.io_"); err != nil {
			return nil, err
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("provider-upjet-aws %s has no CRDs for %s", versions.ProviderAWS, service)
	}
	for i, c := range crds {
		if crds[i], err = withConversionWebhook(c); err != nil {
			return nil, err
		}
	}
	return PackageImage(meta.Bytes(), crds)
}

// FunctionPackage builds an upstream function's package from its module:
// package/crossplane.yaml and the input CRDs under package/input.
func FunctionPackage(ctx context.Context, module, version string) (v1.Image, error) {
	dir, err := upstream.Dir(ctx, module, version)
	if err != nil {
		return nil, err
	}
	meta, err := os.ReadFile(filepath.Join(dir, "package", "crossplane.yaml"))
	if err != nil {
		return nil, err
	}
	var objs [][]byte
	if _, err := os.Stat(filepath.Join(dir, "package", "input")); err == nil {
		if objs, err = readYAMLFiles(filepath.Join(dir, "package", "input")); err != nil {
			return nil, err
		}
	}
	return PackageImage(meta, objs)
}

// WorkloadClusterPackage builds this project's function package as its
// release does (internal/build/xpkgbuild), for this machine's architecture
// only: the sandbox runs the function here, so a second architecture would
// compile the function's dependencies again for nothing.
func WorkloadClusterPackage(ctx context.Context, repoRoot string) (v1.ImageIndex, error) {
	return xpkgbuild.Build(ctx, xpkgbuild.Options{
		ModuleDir:   repoRoot,
		MainPackage: "./functions/workload-cluster",
		Metadata:    filepath.Join(repoRoot, "functions", "workload-cluster", "package", "crossplane.yaml"),
		Platforms:   []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}},
	})
}
