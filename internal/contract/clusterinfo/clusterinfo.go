// Package clusterinfo defines the hub's cluster-info ConfigMap: the variables
// Flux substitutes into the system tree (postBuild.substituteFrom). The Pulumi
// program fills it, the offline proof builds the tree with it, and fleet
// renders spokes with it; the names exist only here.
package clusterinfo

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// ConfigMap coordinates on the hub.
const (
	Name      = "cluster-info"
	Namespace = "flux-system"
)

// Variable names, as the manifests write them (${NAME}).
const (
	AccountID              = "ACCOUNT_ID"
	Region                 = "AWS_REGION"
	Partition              = "AWS_PARTITION"
	HubName                = "HUB_CLUSTER_NAME"
	HubVPCCIDR             = "HUB_VPC_CIDR"
	HubEgressCIDRs         = "HUB_EGRESS_CIDRS" // the hub's NAT egress, allowed on every spoke's public endpoint
	OIDCProviderARN        = "HUB_OIDC_PROVIDER_ARN"
	OIDCIssuer             = "HUB_OIDC_ISSUER"
	CrossplaneRoleARN      = "CROSSPLANE_ROLE_ARN"
	ExternalSecretsRoleARN = "ESO_ROLE_ARN"
	FluxRoleARN            = "FLUX_ROLE_ARN"
	SpokeRolePrefix        = "SPOKE_ROLE_PREFIX"
	SpokeBoundaryARN       = "SPOKE_PERMISSIONS_BOUNDARY_ARN"
	SealingSecretName      = "SEALING_SECRET_NAME"
	SealingSecretARN       = "SEALING_SECRET_ARN"
	SealingKMSKeyARN       = "SEALING_KMS_KEY_ARN"
	// The Secrets the Sealed Secrets controller loads keys from, one name
	// per key id (internal/contract/sealingkey): a rotation creates new Secrets,
	// which the controller's key informer registers (it has no UpdateFunc).
	SealingActiveKeySecret   = "SEALING_ACTIVE_KEY_SECRET"
	SealingPreviousKeySecret = "SEALING_PREVIOUS_KEY_SECRET"
	GitURL                   = "GIT_URL"
	GitBranch                = "GIT_BRANCH"
	SystemPath               = "GITOPS_SYSTEM_PATH"
	FluxVersion              = "FLUX_VERSION"
	FluxOperatorVersion      = "FLUX_OPERATOR_VERSION"
	// LogRetentionDays is the retention of the spokes' control-plane log
	// groups (the hub's logRetentionDays setting).
	LogRetentionDays = "LOG_RETENTION_DAYS"
	// FunctionRegistry is the OCI repository the hub's Crossplane pulls
	// <registry>/function-workload-cluster:<version> from (the hub's
	// functionRegistry setting).
	FunctionRegistry = "FUNCTION_REGISTRY"
	// SpokeZoneIDs are, for each region spokes may use (the hub's
	// spokeRegions setting), the IDs of the availability zones a spoke's
	// subnets go into, as the hub's account sees them: standard zones EKS
	// accepts for cluster subnets, in AWS's order (FormatZoneIDs).
	SpokeZoneIDs = "SPOKE_ZONE_IDS"
	// SpokeAddonVersions are, for each region spokes may use, each
	// Kubernetes version the fleet accepts and each EKS managed add-on
	// (versions.EKSAddons), EKS's default add-on version there, as the
	// program read it at its last pulumi up (FormatAddonVersions).
	SpokeAddonVersions = "SPOKE_ADDON_VERSIONS"
	// SpokeAddonWaves move the add-ons of the spokes they list ahead of
	// SPOKE_ADDON_VERSIONS (the hub's spokeAddonWaves setting), so that a
	// new add-on version reaches a few spokes first (FormatAddonWaves).
	SpokeAddonWaves = "SPOKE_ADDON_WAVES"
	// SpokeAccounts are the AWS accounts, other than the hub's, that may
	// hold spokes (the hub's spokeAccounts setting): the only ones whose
	// account role the hub's Crossplane may assume, and so the only ones a
	// claim's spec.account may name (FormatAccounts).
	SpokeAccounts = "SPOKE_ACCOUNTS"
)

// Values holds every cluster-info variable. T is string for plain values
// (tests, fleet) and a Pulumi input in the program, so both fill the same
// fields and no variable can be forgotten in one of them.
type Values[T any] struct {
	AccountID                T
	Region                   T
	Partition                T
	HubName                  T
	HubVPCCIDR               T
	HubEgressCIDRs           T // hub NAT public IPs as /32s, a flow sequence (FormatCIDRs)
	OIDCProviderARN          T
	OIDCIssuer               T // issuer without https://, as IAM conditions use it
	CrossplaneRoleARN        T
	ExternalSecretsRoleARN   T
	FluxRoleARN              T
	SpokeRolePrefix          T // every spoke IAM role name starts with it
	SpokeBoundaryARN         T // permissions boundary every spoke role must carry
	SealingSecretName        T
	SealingSecretARN         T
	SealingKMSKeyARN         T
	SealingActiveKeySecret   T
	SealingPreviousKeySecret T
	GitURL                   T
	GitBranch                T
	SystemPath               T // path of gitops-system in the repository, without ./
	FluxVersion              T
	FluxOperatorVersion      T
	LogRetentionDays         T // days, a CloudWatch Logs retention value
	FunctionRegistry         T // OCI repository of the workload-cluster function, e.g. ghcr.io/org/eks-fleet
	SpokeZoneIDs             T // region -> zone IDs, a JSON object (FormatZoneIDs)
	SpokeAddonVersions       T // region -> Kubernetes version -> add-on -> version, a JSON object (FormatAddonVersions)
	SpokeAddonWaves          T // waves of spokes ahead of SpokeAddonVersions, a JSON list (FormatAddonWaves)
	SpokeAccounts            T // account IDs, a JSON list (FormatAccounts)
}

// Map returns the ConfigMap data, keyed by variable name.
func (v Values[T]) Map() map[string]T {
	out := map[string]T{}
	for name, f := range v.fields() {
		out[name] = *f
	}
	return out
}

// FromMap fills Values from ConfigMap data keyed by variable name; every
// variable must be there and nothing else.
func FromMap[T any](data map[string]T) (Values[T], error) {
	var v Values[T]
	fields := v.fields()
	var errs []error
	for name, f := range fields {
		x, ok := data[name]
		if !ok {
			errs = append(errs, fmt.Errorf("cluster-info variable %s is missing", name))
			continue
		}
		*f = x
	}
	for name := range data {
		if _, ok := fields[name]; !ok {
			errs = append(errs, fmt.Errorf("cluster-info has no variable %s", name))
		}
	}
	return v, errors.Join(errs...)
}

// fields are v's fields, by variable name.
func (v *Values[T]) fields() map[string]*T {
	return map[string]*T{
		AccountID:                &v.AccountID,
		Region:                   &v.Region,
		Partition:                &v.Partition,
		HubName:                  &v.HubName,
		HubVPCCIDR:               &v.HubVPCCIDR,
		HubEgressCIDRs:           &v.HubEgressCIDRs,
		OIDCProviderARN:          &v.OIDCProviderARN,
		OIDCIssuer:               &v.OIDCIssuer,
		CrossplaneRoleARN:        &v.CrossplaneRoleARN,
		ExternalSecretsRoleARN:   &v.ExternalSecretsRoleARN,
		FluxRoleARN:              &v.FluxRoleARN,
		SpokeRolePrefix:          &v.SpokeRolePrefix,
		SpokeBoundaryARN:         &v.SpokeBoundaryARN,
		SealingSecretName:        &v.SealingSecretName,
		SealingSecretARN:         &v.SealingSecretARN,
		SealingKMSKeyARN:         &v.SealingKMSKeyARN,
		SealingActiveKeySecret:   &v.SealingActiveKeySecret,
		SealingPreviousKeySecret: &v.SealingPreviousKeySecret,
		GitURL:                   &v.GitURL,
		GitBranch:                &v.GitBranch,
		SystemPath:               &v.SystemPath,
		FluxVersion:              &v.FluxVersion,
		FluxOperatorVersion:      &v.FluxOperatorVersion,
		LogRetentionDays:         &v.LogRetentionDays,
		FunctionRegistry:         &v.FunctionRegistry,
		SpokeZoneIDs:             &v.SpokeZoneIDs,
		SpokeAddonVersions:       &v.SpokeAddonVersions,
		SpokeAddonWaves:          &v.SpokeAddonWaves,
		SpokeAccounts:            &v.SpokeAccounts,
	}
}

// Names returns every variable name, sorted.
func Names() []string {
	m := Values[struct{}]{}.Map()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// SpokeRolePrefixFor is the name prefix of every IAM role the hub's
// Crossplane may create: distinct per hub so two hubs in one account never
// collide, and never a prefix of the hub's own roles.
func SpokeRolePrefixFor(hubName string) string { return hubName + "-spoke-" }

// SealingSecretNameFor is the default Secrets Manager name of a hub's sealing keys.
func SealingSecretNameFor(hubName string) string {
	return fmt.Sprintf("%s/sealed-secrets-key", hubName)
}

// FormatCIDRs writes CIDRs as the value of HUB_EGRESS_CIDRS: a JSON array
// of strings, which is also a YAML flow sequence, e.g.
// ["198.51.100.10/32","198.51.100.11/32"]. Substituted as a whole YAML
// value it reads as a list; an empty list is [].
func FormatCIDRs(cidrs []string) string {
	if len(cidrs) == 0 {
		return "[]"
	}
	return formatJSON(cidrs)
}

// formatJSON writes v, built of strings, slices and maps (which always
// marshal), as JSON: map keys sorted.
func formatJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("clusterinfo: marshal %v: %v", v, err))
	}
	return string(b)
}

// ParseCIDRs reads a HUB_EGRESS_CIDRS value written by FormatCIDRs.
func ParseCIDRs(v string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("%s %q: want a JSON list of CIDRs such as [\"198.51.100.10/32\"]: %w", HubEgressCIDRs, v, err)
	}
	return out, nil
}

// FormatAccounts writes account IDs as the value of SPOKE_ACCOUNTS: a
// JSON list of strings (also a YAML flow sequence, whose items stay
// strings), sorted, e.g. ["222233334444"]; none is [].
func FormatAccounts(ids []string) string {
	if len(ids) == 0 {
		return "[]"
	}
	return formatJSON(slices.Sorted(slices.Values(ids)))
}

// ParseAccounts reads a SPOKE_ACCOUNTS value written by FormatAccounts.
func ParseAccounts(v string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("%s %q: want a JSON list of AWS account IDs such as [\"222233334444\"]: %w", SpokeAccounts, v, err)
	}
	return out, nil
}

// FormatZoneIDs writes region -> zone IDs as the value of SPOKE_ZONE_IDS: a
// JSON object (keys sorted), which is also a YAML flow mapping, e.g.
// {"eu-west-1":["euw1-az1","euw1-az2","euw1-az3"]}.
func FormatZoneIDs(zones map[string][]string) string {
	if len(zones) == 0 {
		return "{}"
	}
	return formatJSON(zones)
}

// ParseZoneIDs reads a SPOKE_ZONE_IDS value written by FormatZoneIDs.
func ParseZoneIDs(v string) (map[string][]string, error) {
	var out map[string][]string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("%s %q: want a JSON object of regions to zone IDs such as {\"eu-west-1\":[\"euw1-az1\",\"euw1-az2\"]}: %w", SpokeZoneIDs, v, err)
	}
	return out, nil
}

// ExampleZoneIDs are the zone IDs Example gives each region of the example
// fleet policy (standard zones; us-east-1 without use1-az3, which EKS
// refuses).
func ExampleZoneIDs() map[string][]string {
	return map[string][]string{
		"eu-west-1":    {"euw1-az1", "euw1-az2", "euw1-az3"},
		"eu-central-1": {"euc1-az1", "euc1-az2", "euc1-az3"},
		"us-east-1":    {"use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6"},
		"us-east-2":    {"use2-az1", "use2-az2", "use2-az3"},
		"us-west-2":    {"usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"},
	}
}

// AddonVersions are, per region, per Kubernetes version ("1.35") and per
// EKS add-on name ("vpc-cni"), the add-on version a spoke runs there.
type AddonVersions map[string]map[string]map[string]string

// Version returns the version of addon for Kubernetes k8s in region, and
// whether the hub looked one up.
func (a AddonVersions) Version(region, k8s, addon string) (string, bool) {
	v, ok := a[region][k8s][addon]
	return v, ok && v != ""
}

// FormatAddonVersions writes the value of SPOKE_ADDON_VERSIONS: a JSON
// object (keys sorted), which is also a YAML flow mapping, e.g.
// {"eu-west-1":{"1.35":{"coredns":"v1.13.2-eksbuild.1",...}}}.
func FormatAddonVersions(a AddonVersions) string {
	if len(a) == 0 {
		return "{}"
	}
	return formatJSON(a)
}

// ParseAddonVersions reads a SPOKE_ADDON_VERSIONS value written by
// FormatAddonVersions.
func ParseAddonVersions(v string) (AddonVersions, error) {
	var out AddonVersions
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("%s %q: want a JSON object of regions to Kubernetes versions to add-on versions such as {\"eu-west-1\":{\"1.35\":{\"vpc-cni\":\"v1.20.4-eksbuild.1\"}}}: %w", SpokeAddonVersions, v, err)
	}
	return out, nil
}

// AddonWave moves the EKS add-ons of the spokes it lists ahead of
// SPOKE_ADDON_VERSIONS: for each region, Kubernetes version and add-on it
// pins, a listed spoke runs the wave's version; for the rest it runs the
// fleet's. A new add-on version is rolled out by giving it to a wave of a
// few spokes, then to more, and last to SPOKE_ADDON_VERSIONS, the wave then
// dropped: each step an edit of the hub's spokeAddonWaves setting.
type AddonWave struct {
	// Name says what the wave is for ("canary"); a DNS label.
	Name string `json:"name"`
	// Clusters are the spokes (claim names) the wave moves.
	Clusters []string `json:"clusters"`
	// Versions are the add-on versions the wave moves them to, in
	// SPOKE_ADDON_VERSIONS's shape, with only what the wave moves.
	Versions AddonVersions `json:"versions"`
}

// AddonWaves are the hub's waves; a spoke is in at most one.
type AddonWaves []AddonWave

// Version returns the version of addon for Kubernetes k8s in region that a
// wave listing spoke pins; ok is false when no wave lists spoke or its
// wave does not pin that add-on there.
func (w AddonWaves) Version(spoke, region, k8s, addon string) (string, bool) {
	for _, x := range w {
		if slices.Contains(x.Clusters, spoke) {
			return x.Versions.Version(region, k8s, addon)
		}
	}
	return "", false
}

// FormatAddonWaves writes the value of SPOKE_ADDON_WAVES: a JSON list,
// which is also a YAML flow sequence; no wave is [].
func FormatAddonWaves(w AddonWaves) string {
	if len(w) == 0 {
		return "[]"
	}
	return formatJSON(w)
}

// ParseAddonWaves reads a SPOKE_ADDON_WAVES value written by
// FormatAddonWaves.
func ParseAddonWaves(v string) (AddonWaves, error) {
	var out AddonWaves
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("%s %q: want a JSON list of waves such as [{\"name\":\"canary\",\"clusters\":[\"apps-staging\"],\"versions\":{\"eu-west-1\":{\"1.35\":{\"vpc-cni\":\"v1.20.5-eksbuild.1\"}}}}]: %w", SpokeAddonWaves, v, err)
	}
	return out, nil
}

// ExampleAddonVersion is the add-on version offline builds, renders and the
// program's mocks use for addon on Kubernetes k8s: kube-proxy follows the
// Kubernetes version, as EKS's builds of it do; the others are fixed.
// They stand in for what DescribeAddonVersions answers and are not real
// EKS builds.
func ExampleAddonVersion(addon, k8s string) string {
	switch addon {
	case "kube-proxy":
		return "v" + k8s + ".0-eksbuild.1"
	case "coredns":
		return "v1.13.2-eksbuild.1"
	default:
		return "v1.20.4-eksbuild.1"
	}
}

// ExampleAddonVersions are the add-on versions Example gives each region of
// ExampleZoneIDs, for every accepted Kubernetes version.
func ExampleAddonVersions() AddonVersions {
	out := AddonVersions{}
	for region := range ExampleZoneIDs() {
		out[region] = map[string]map[string]string{}
		for _, k8s := range versions.Kubernetes() {
			out[region][k8s] = map[string]string{}
			for _, a := range versions.EKSAddons() {
				out[region][k8s][a] = ExampleAddonVersion(a, k8s)
			}
		}
	}
	return out
}

// Example returns realistic values for offline builds and renders: the
// account is AWS's documentation account.
func Example() Values[string] {
	const (
		account = "111122223333"
		region  = "eu-west-1"
		hub     = "mgmt"
		issuer  = "oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
	)
	return Values[string]{
		AccountID:                account,
		Region:                   region,
		Partition:                "aws",
		HubName:                  hub,
		HubVPCCIDR:               "10.0.0.0/16",
		HubEgressCIDRs:           FormatCIDRs([]string{"198.51.100.10/32", "198.51.100.11/32", "198.51.100.12/32"}),
		OIDCProviderARN:          "arn:aws:iam::" + account + ":oidc-provider/" + issuer,
		OIDCIssuer:               issuer,
		CrossplaneRoleARN:        "arn:aws:iam::" + account + ":role/mgmt-crossplane-aws",
		ExternalSecretsRoleARN:   "arn:aws:iam::" + account + ":role/mgmt-external-secrets",
		FluxRoleARN:              "arn:aws:iam::" + account + ":role/mgmt-flux",
		SpokeRolePrefix:          SpokeRolePrefixFor(hub),
		SpokeBoundaryARN:         "arn:aws:iam::" + account + ":policy/mgmt-spoke-boundary",
		SealingSecretName:        SealingSecretNameFor(hub),
		SealingSecretARN:         "arn:aws:secretsmanager:" + region + ":" + account + ":secret:" + SealingSecretNameFor(hub) + "-AbCdEf",
		SealingKMSKeyARN:         "arn:aws:kms:" + region + ":" + account + ":key/1234abcd-12ab-34cd-56ef-1234567890ab",
		SealingActiveKeySecret:   "sealing-key-key-1",
		SealingPreviousKeySecret: "sealing-key-previous-key-1",
		GitURL:                   "ssh://git@github.com/example-org/eks-fleet.git",
		GitBranch:                "main",
		SystemPath:               "manifests/gitops-system",
		FluxVersion:              versions.Flux,
		FluxOperatorVersion:      versions.FluxOperator,
		LogRetentionDays:         "90",
		FunctionRegistry:         versions.FunctionRegistry,
		SpokeZoneIDs:             FormatZoneIDs(ExampleZoneIDs()),
		SpokeAddonVersions:       FormatAddonVersions(ExampleAddonVersions()),
		SpokeAddonWaves:          FormatAddonWaves(nil),
		SpokeAccounts:            FormatAccounts([]string{ExampleSpokeAccount}),
	}
}

// ExampleSpokeAccount is the spoke account of Example (AWS's second
// documentation account; Pulumi.acct-payments.yaml prepares it).
const ExampleSpokeAccount = "222233334444"
