package test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/proof/apivalidate"
)

// TestUpstreamKinds: every kind the design composes or installs is
// defined, served and not deprecated in the pinned upstream modules (so a
// version bump that drops one fails here, not in a cluster).
func TestUpstreamKinds(t *testing.T) {
	v, err := apivalidate.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "VPC"},
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "Subnet"},
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "InternetGateway"},
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "NATGateway"},
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "EIP"},
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "RouteTable"},
		{Group: "ec2.aws.upbound.io", Version: "v1beta2", Kind: "Route"},
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "RouteTableAssociation"},
		{Group: "eks.aws.upbound.io", Version: "v1beta2", Kind: "Cluster"},
		{Group: "eks.aws.upbound.io", Version: "v1beta2", Kind: "NodeGroup"},
		{Group: "eks.aws.upbound.io", Version: "v1beta1", Kind: "AccessEntry"},
		{Group: "eks.aws.upbound.io", Version: "v1beta1", Kind: "AccessPolicyAssociation"},
		{Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "Role"},
		{Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "RolePolicyAttachment"},
		{Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "RolePolicy"},
		{Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "OpenIDConnectProvider"},
		{Group: "aws.upbound.io", Version: "v1beta1", Kind: "ProviderConfig"},
		{Group: "dynamodb.aws.upbound.io", Version: "v1beta2", Kind: "Table"},
		{Group: "sqs.aws.upbound.io", Version: "v1beta1", Kind: "Queue"},
		{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
		{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"},
		{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepository"},
		{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"},
		{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"},
		{Group: "fluxcd.controlplane.io", Version: "v1", Kind: "FluxInstance"},
		{Group: "apiextensions.crossplane.io", Version: "v1", Kind: "Composition"},
		{Group: "protection.crossplane.io", Version: "v1beta1", Kind: "Usage"},
		{Group: "pkg.crossplane.io", Version: "v1", Kind: "Provider"},
		{Group: "pkg.crossplane.io", Version: "v1", Kind: "Function"},
		{Group: "pkg.crossplane.io", Version: "v1beta1", Kind: "DeploymentRuntimeConfig"},
		{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"},
		{Group: "external-secrets.io", Version: "v1", Kind: "ClusterSecretStore"},
		{Group: "bitnami.com", Version: "v1alpha1", Kind: "SealedSecret"},
	} {
		k := v.Lookup(gvk)
		switch {
		case !k.Known:
			t.Errorf("%s: not defined by any pinned upstream module", gvk)
		case k.Deprecated:
			t.Errorf("%s: %s", gvk, k.Warning)
		default:
			t.Logf("%s: %s", gvk, k.Source)
		}
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "kustomize.toolkit.fluxcd.io", Version: "v1beta2", Kind: "Kustomization"},
		{Group: "external-secrets.io", Version: "v1beta1", Kind: "ExternalSecret"},
		{Group: "apiextensions.crossplane.io", Version: "v1beta1", Kind: "Usage"},
		{Group: "policy", Version: "v1beta1", Kind: "PodDisruptionBudget"},
	} {
		if k := v.Lookup(gvk); !k.Deprecated {
			t.Errorf("%s: want deprecated or not served, got %+v", gvk, k)
		}
	}
}

// TestFluxOperatorShipsPinnedControllers: the flux-operator release the
// hub installs embeds the manifests of the pinned Flux, and those run
// exactly the controller releases the real-controller suite builds.
func TestFluxOperatorShipsPinnedControllers(t *testing.T) {
	dir, err := upstream.Dir(context.Background(), upstream.FluxOperatorModule, "v"+versions.FluxOperator)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"source-controller":    versions.SourceController,
		"kustomize-controller": versions.KustomizeController,
		"helm-controller":      versions.HelmController,
	} {
		p := filepath.Join(dir, "config", "data", "flux", "v"+versions.Flux, name+".yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("flux-operator %s does not embed Flux %s: %v", versions.FluxOperator, versions.Flux, err)
			continue
		}
		img := regexp.MustCompile(`image: fluxcd/` + name + `:v([0-9.]+)`).FindSubmatch(b)
		if img == nil || string(img[1]) != want {
			t.Errorf("Flux %s (flux-operator %s) runs %s %q, want versions %s", versions.Flux, versions.FluxOperator, name, img, want)
		}
	}
}
