package test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

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
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "Route"},
		{Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "RouteTableAssociation"},
		{Group: "eks.aws.upbound.io", Version: "v1beta1", Kind: "Cluster"},
		{Group: "eks.aws.upbound.io", Version: "v1beta1", Kind: "NodeGroup"},
		{Group: "eks.aws.upbound.io", Version: "v1beta1", Kind: "AccessEntry"},
		{Group: "eks.aws.upbound.io", Version: "v1beta1", Kind: "AccessPolicyAssociation"},
		{Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "Role"},
		{Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "RolePolicyAttachment"},
		{Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "RolePolicy"},
		{Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "OpenIDConnectProvider"},
		{Group: "aws.upbound.io", Version: "v1beta1", Kind: "ProviderConfig"},
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
