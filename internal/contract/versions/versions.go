// Package versions is the one place that pins the Kubernetes versions the
// fleet allows and the releases of the tools it installs. The Pulumi program,
// the manifests' tests and the fleet CLI all read it, so a version changes in
// exactly one line.
package versions

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultKubernetes is the EKS version a new cluster gets when none is set.
const DefaultKubernetes = "1.35"

// kubernetes lists the EKS versions the fleet accepts, oldest first.
var kubernetes = []string{"1.34", "1.35", "1.36"}

// Kubernetes returns the accepted EKS versions, oldest first.
func Kubernetes() []string { return slices.Clone(kubernetes) }

// IsSupportedKubernetes reports whether v is an accepted EKS version.
func IsSupportedKubernetes(v string) bool { return slices.Contains(kubernetes, v) }

// ValidateKubernetes returns an error naming the allowed versions when v is
// not one of them.
func ValidateKubernetes(v string) error {
	if IsSupportedKubernetes(v) {
		return nil
	}
	return fmt.Errorf("unsupported Kubernetes version %q: allowed %s", v, strings.Join(kubernetes, ", "))
}

// ParseMinor splits "1.35" into (1, 35).
func ParseMinor(v string) (major, minor int, err error) {
	a, b, ok := strings.Cut(v, ".")
	if !ok {
		return 0, 0, fmt.Errorf("version %q is not of the form MAJOR.MINOR", v)
	}
	if major, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("version %q: bad major: %w", v, err)
	}
	if minor, err = strconv.Atoi(b); err != nil {
		return 0, 0, fmt.Errorf("version %q: bad minor: %w", v, err)
	}
	return major, minor, nil
}

// NextKubernetes is the accepted EKS version after v, if there is one.
func NextKubernetes(v string) (string, bool) {
	i := slices.Index(kubernetes, v)
	if i < 0 || i+1 >= len(kubernetes) {
		return "", false
	}
	return kubernetes[i+1], true
}

// Before reports whether Kubernetes version a is older than b (both
// MAJOR.MINOR; an unparsable version is never older nor newer).
func Before(a, b string) bool {
	aMaj, aMin, errA := ParseMinor(a)
	bMaj, bMin, errB := ParseMinor(b)
	if errA != nil || errB != nil {
		return false
	}
	return aMaj < bMaj || (aMaj == bMaj && aMin < bMin)
}

// NextMinor is the minor version after v ("1.35" -> "1.36"), whether or
// not the fleet accepts it; v itself when it does not parse.
func NextMinor(v string) string {
	major, minor, err := ParseMinor(v)
	if err != nil {
		return v
	}
	return fmt.Sprintf("%d.%d", major, minor+1)
}

// CheckUpgrade enforces the EKS rule that a control plane moves one minor
// version at a time and never down.
func CheckUpgrade(from, to string) error {
	if err := ValidateKubernetes(to); err != nil {
		return err
	}
	fMaj, fMin, err := ParseMinor(from)
	if err != nil {
		return err
	}
	tMaj, tMin, err := ParseMinor(to)
	if err != nil {
		return err
	}
	switch {
	case fMaj == tMaj && tMin == fMin:
		return fmt.Errorf("cluster is already at version %s", from)
	case tMaj < fMaj || (tMaj == fMaj && tMin < fMin):
		return fmt.Errorf("downgrade from %s to %s is not possible on EKS", from, to)
	case tMaj != fMaj || tMin != fMin+1:
		return fmt.Errorf("upgrade from %s to %s skips a minor version: EKS upgrades one minor version at a time (next: %d.%d)", from, to, fMaj, fMin+1)
	}
	return nil
}

// EKSAddons are the EKS managed add-ons every spoke runs, in the order the
// composition lists them. Their versions are not pinned here: the hub's
// program reads EKS's default version of each for every accepted
// Kubernetes version (DescribeAddonVersions) at each pulumi up and writes
// them to cluster-info, and a spoke moves to the versions of its nodes'
// Kubernetes version once its nodes run it.
var eksAddons = []string{"vpc-cni", "kube-proxy", "coredns"}

// EKSAddons returns the managed add-ons every spoke runs.
func EKSAddons() []string { return slices.Clone(eksAddons) }

// Pinned releases of what the fleet installs. Each is checked by a test
// against the manifests that install it and against the upstream module the
// offline proof reads its CRDs from.
const (
	// Flux is the Flux distribution the Flux Operator installs on the hub
	// and on every spoke: the newest whose controllers the real-controller
	// suite can build from the module proxy (docs/design.md says why it
	// is not 2.10 or a later 2.9).
	Flux = "2.9.2"
	// FluxOperator is the flux-operator Helm chart (and module) version; its
	// module embeds the manifests of Flux, whose images must be the
	// controller releases below (test/upstream_test.go).
	FluxOperator = "0.59.0"
	// KustomizeController, SourceController and HelmController are the
	// controller releases that Flux ships.
	KustomizeController = "1.9.3"
	SourceController    = "1.9.3"
	HelmController      = "1.6.2"
	// Crossplane is the Crossplane Helm chart and core release.
	Crossplane = "2.4.0"
	// ProviderAWS is the release of the provider-upjet-aws family.
	ProviderAWS = "2.7.0"
	// FunctionPatchAndTransform and FunctionAutoReady are the composition
	// functions' releases.
	FunctionPatchAndTransform = "0.10.7"
	FunctionAutoReady         = "0.7.0"
	// ExternalSecrets is the External Secrets Operator chart and release.
	ExternalSecrets = "0.20.4"
	// SealedSecrets is the Sealed Secrets controller release (the image
	// tag the HelmReleases pin).
	SealedSecrets = "0.36.6"
	// SealedSecretsChart is the sealed-secrets Helm chart: the one in the
	// controller release's source tree (helm/sealed-secrets/Chart.yaml of
	// the module), whose CRD the offline proof validates against. Upstream
	// releases charts separately, so its appVersion may lag SealedSecrets;
	// the HelmReleases then set image.tag to SealedSecrets.
	SealedSecretsChart = "2.18.4"
	// AWSLoadBalancerControllerChart is the eks-charts
	// aws-load-balancer-controller chart each spoke installs, and
	// AWSLoadBalancerController the controller release it runs (its
	// appVersion, without the v). The spoke's LBC IAM policy in the
	// WorkloadCluster Composition follows this release.
	AWSLoadBalancerControllerChart = "1.14.0"
	AWSLoadBalancerController      = "2.14.0"
)

// Releases the real-controller suite (test/e2e) runs that the fleet does
// not install itself: EKS runs the API servers and kubelets.
const (
	// KubernetesRelease is the Kubernetes release of the suite's hub and
	// spoke API servers, controller manager and scheduler: a patch release
	// of DefaultKubernetes.
	KubernetesRelease = "1.35.4"
	// Etcd is the etcd release KubernetesRelease requires.
	Etcd = "3.6.5"
	// Kwok plays the kubelets of the suite's nodes.
	Kwok = "0.7.0"
	// PulumiCLI is the Pulumi CLI (engine) the suite runs the program's
	// Kubernetes half through (github.com/pulumi/pulumi/pkg/v3): the
	// release of the program's SDK (go.mod's pulumi/sdk/v3, held equal by
	// TestEngineIsTheSDKRelease). Users run `pulumi up` with their own
	// CLI. Not the newest (3.274.1 is served): the provider plugin below
	// does not compile against pkg/v3 after about 3.220 (pkg/gen/schema.go,
	// codegen/schema.ResourceSpec became a pointer), and one module builds
	// both so that the engine they share compiles once.
	PulumiCLI = "3.220.0"
	// PulumiKubernetesProvider is the Kubernetes provider plugin the suite's
	// engine loads (github.com/pulumi/pulumi-kubernetes/provider/v4): the
	// module proxy serves the provider's module at this pseudo-version
	// only, a commit of 15 Jan 2026 between the tags; the program's SDK
	// (pulumi-kubernetes/sdk/v4 in go.mod) registers the same resources.
	PulumiKubernetesProvider = "4.0.0-20260115033456-f47bc2d6f199"
)

// WorkloadClusterFunction is the release of the hub's composition function
// (functions/workload-cluster) that the hub installs and the release workflow
// publishes as <registry>/function-workload-cluster:<version>.
const WorkloadClusterFunction = "v0.10.0"

// WorkloadClusterFunctionPackage is the package (repository) name of the
// function under a registry: <registry>/<name>:<WorkloadClusterFunction>.
const WorkloadClusterFunctionPackage = "function-workload-cluster"

// FunctionRegistry is where this project publishes the function (the
// release workflow's ghcr.io/<owner>/<repo>) and so the default of the hub's
// functionRegistry setting.
const FunctionRegistry = "ghcr.io/gitops-fleet/eks-fleet"
