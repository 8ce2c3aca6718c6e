// Package serviceaccounts names the Kubernetes service accounts that AWS IAM
// roles trust through IRSA. The Pulumi program builds trust policies from
// these, the manifests create the accounts, and a test proves the two agree.
package serviceaccounts

import "fmt"

// ServiceAccount identifies a service account, or every service account
// whose name starts with Name when Prefix is set.
type ServiceAccount struct {
	Namespace string
	Name      string
	// Prefix makes Name a prefix: Crossplane names a provider's service
	// account after its revision, which changes with every upgrade.
	Prefix bool
}

// Subject is the IRSA token subject, with a trailing * for a prefix.
func (s ServiceAccount) Subject() string {
	sub := fmt.Sprintf("system:serviceaccount:%s:%s", s.Namespace, s.Name)
	if s.Prefix {
		sub += "*"
	}
	return sub
}

// Matches reports whether the account namespace/name is covered by s.
func (s ServiceAccount) Matches(namespace, name string) bool {
	if namespace != s.Namespace {
		return false
	}
	if s.Prefix {
		return len(name) >= len(s.Name) && name[:len(s.Name)] == s.Name
	}
	return name == s.Name
}

// The service accounts of the hub.
var (
	// HubCrossplaneAWS covers the provider-aws-* family's revisions in
	// crossplane-system (provider-aws-ec2-<hash>, provider-aws-eks-<hash>, ...).
	HubCrossplaneAWS = ServiceAccount{Namespace: "crossplane-system", Name: "provider-aws-", Prefix: true}
	// HubExternalSecrets is the External Secrets Operator's controller.
	HubExternalSecrets = ServiceAccount{Namespace: "external-secrets", Name: "external-secrets"}
	// HubKustomizeController is Flux's kustomize-controller, which reaches
	// the spokes through kubeConfig.configMapRef with provider aws.
	HubKustomizeController = ServiceAccount{Namespace: "flux-system", Name: "kustomize-controller"}
	// HubHelmController is Flux's helm-controller: the spoke bootstrap's
	// HelmReleases live on the hub and install onto the spoke through
	// kubeConfig.configMapRef with provider aws, as Kustomizations do.
	HubHelmController = ServiceAccount{Namespace: "flux-system", Name: "helm-controller"}
)

// HubFluxControllers are the hub's Flux controllers that apply onto spokes.
// They share the Flux IRSA role (FLUX_ROLE_ARN), which every spoke's EKS
// access entry names. It returns a new slice on each call.
func HubFluxControllers() []ServiceAccount {
	return []ServiceAccount{HubKustomizeController, HubHelmController}
}

// The service accounts each spoke creates; the WorkloadCluster composition
// makes an IRSA role for each.
var (
	SpokeCrossplaneAWS       = ServiceAccount{Namespace: "crossplane-system", Name: "provider-aws-", Prefix: true}
	SpokeLoadBalancerControl = ServiceAccount{Namespace: "kube-system", Name: "aws-load-balancer-controller"}
)
