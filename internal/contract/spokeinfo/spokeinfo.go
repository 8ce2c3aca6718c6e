// Package spokeinfo names the variables a spoke is built with, as
// internal/contract/clusterinfo does for the hub:
//
//   - the bootstrap variables the WorkloadCluster Composition sets in
//     postBuild.substitute of every hub Kustomization that bootstraps a
//     spoke from gitops-system/spoke-bootstrap/ (next to substituteFrom
//     cluster-info);
//   - the keys of the spoke-info ConfigMap (flux-system, on the spoke) that
//     spoke-bootstrap/flux writes, which the spoke's own Flux substitutes
//     into spoke-tools/, gitops-workloads/clusters/<spoke>/ and the apps.
//
// The names exist only here; test/facts_test.go holds the manifests to them.
package spokeinfo

import (
	"sort"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
)

// ConfigMap coordinates on the spoke.
const (
	Name      = "spoke-info"
	Namespace = "flux-system"
)

// Bootstrap variables: set by the Composition (postBuild.substitute) from
// the claim and what AWS reports for it, and also carried by spoke-info.
const (
	ClusterName       = "CLUSTER_NAME"     // the spoke's name: the claim's name
	EKSClusterName    = "EKS_CLUSTER_NAME" // <hub>-<spoke>
	Region            = "SPOKE_REGION"
	VPCID             = "SPOKE_VPC_ID"
	OIDCIssuer        = "SPOKE_OIDC_ISSUER" // without https://, as IAM conditions use it
	CrossplaneRoleARN = "SPOKE_CROSSPLANE_ROLE_ARN"
	LBCRoleARN        = "SPOKE_LBC_ROLE_ARN"
	AppRolePrefix     = "SPOKE_APP_ROLE_PREFIX" // ${SPOKE_ROLE_PREFIX}<spoke>_ (spokeiam.AppRolePrefix)
	// Quote is a double quote. Flux substitutes after kustomize has dropped
	// the quotes written in YAML, so a value that may read as a number or
	// boolean (an account ID, a name such as "no", a version such as 2.10)
	// is written ${quote}${VAR}${quote}, as kustomize-controller documents
	// ("Post build substitution of numbers and booleans").
	Quote = "quote"
)

// QuoteValue is the value of Quote.
const QuoteValue = `"`

// Further spoke-info keys. Those from the hub's cluster-info keep its names.
const (
	SpokeName       = "SPOKE_NAME" // same value as CLUSTER_NAME
	OIDCProviderARN = "SPOKE_OIDC_PROVIDER_ARN"
	HubName         = clusterinfo.HubName
	AccountID       = clusterinfo.AccountID
	Partition       = clusterinfo.Partition
	SpokeRolePrefix = clusterinfo.SpokeRolePrefix
	BoundaryARN     = clusterinfo.SpokeBoundaryARN
	SystemPath      = clusterinfo.SystemPath
)

// Bootstrap holds the variables the Composition substitutes, Quote aside
// (its value is always QuoteValue).
type Bootstrap[T any] struct {
	ClusterName       T
	EKSClusterName    T
	Region            T
	VPCID             T
	OIDCIssuer        T
	CrossplaneRoleARN T
	LBCRoleARN        T
	AppRolePrefix     T
}

// Map returns the variables keyed by name, Quote aside.
func (b Bootstrap[T]) Map() map[string]T {
	return map[string]T{
		ClusterName:       b.ClusterName,
		EKSClusterName:    b.EKSClusterName,
		Region:            b.Region,
		VPCID:             b.VPCID,
		OIDCIssuer:        b.OIDCIssuer,
		CrossplaneRoleARN: b.CrossplaneRoleARN,
		LBCRoleARN:        b.LBCRoleARN,
		AppRolePrefix:     b.AppRolePrefix,
	}
}

// AccountNames are the cluster-info names the Composition also sets in
// postBuild.substitute for a spoke in another account than the hub's (an
// in-line value overrides substituteFrom's, fluxcd/pkg/kustomize v1.35.3
// kustomize_varsub.go:121-133): the spoke's account, and its boundary
// there, which the spoke's Crossplane puts on every role it mints.
func AccountNames() []string { return []string{AccountID, BoundaryARN} }

// BootstrapNames returns every name the Composition sets in
// postBuild.substitute, Quote included, sorted.
func BootstrapNames() []string {
	return append(keys(Bootstrap[struct{}]{}.Map()), Quote)
}

// Values holds every spoke-info key.
type Values[T any] struct {
	ClusterName       T
	SpokeName         T
	EKSClusterName    T
	HubName           T
	AccountID         T
	Partition         T
	Region            T
	VPCID             T
	OIDCIssuer        T
	OIDCProviderARN   T
	CrossplaneRoleARN T
	LBCRoleARN        T
	SpokeRolePrefix   T
	AppRolePrefix     T
	BoundaryARN       T
	SystemPath        T
}

// Map returns the ConfigMap data, keyed by variable name.
func (v Values[T]) Map() map[string]T {
	return map[string]T{
		ClusterName:       v.ClusterName,
		SpokeName:         v.SpokeName,
		EKSClusterName:    v.EKSClusterName,
		HubName:           v.HubName,
		AccountID:         v.AccountID,
		Partition:         v.Partition,
		Region:            v.Region,
		VPCID:             v.VPCID,
		OIDCIssuer:        v.OIDCIssuer,
		OIDCProviderARN:   v.OIDCProviderARN,
		CrossplaneRoleARN: v.CrossplaneRoleARN,
		LBCRoleARN:        v.LBCRoleARN,
		SpokeRolePrefix:   v.SpokeRolePrefix,
		AppRolePrefix:     v.AppRolePrefix,
		BoundaryARN:       v.BoundaryARN,
		SystemPath:        v.SystemPath,
	}
}

// Names returns every spoke-info key, sorted.
func Names() []string { return keys(Values[struct{}]{}.Map()) }

func keys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m)+1)
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
