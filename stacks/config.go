// Package stacks is the hub stack's typed configuration: the settings of a
// Pulumi.<stack>.yaml, their defaults, and one validation that reports every
// bad setting at once (field, bad value, allowed values) before the program
// registers any resource. ParseFile and Validate work without a Pulumi
// engine, so the fleet CLI and CI check a stack file offline.
package stacks

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

// Project is the Pulumi project name (Pulumi.yaml) and so the namespace of
// every setting except aws:region.
const Project = "eks-fleet"

// ProfileKey is the AWS provider's profile setting (optional, read by
// the provider itself): the program's checks of the deploying account read
// the account with the AWS SDK under the same profile.
const ProfileKey = "aws:profile"

// Setting keys, without namespace. RegionKey lives in the aws namespace.
const (
	RegionKey                 = "aws:region"
	HubNameKey                = "hubName"
	VPCCIDRKey                = "vpcCidr"
	AvailabilityZonesKey      = "availabilityZones"
	NATModeKey                = "natMode"
	KubernetesVersionKey      = "kubernetesVersion"
	NodeInstanceTypesKey      = "nodeInstanceTypes"
	NodeMinSizeKey            = "nodeMinSize"
	NodeDesiredSizeKey        = "nodeDesiredSize"
	NodeMaxSizeKey            = "nodeMaxSize"
	PublicAccessCIDRsKey      = "publicAccessCidrs"
	AdminPrincipalARNsKey     = "adminPrincipalArns"
	GitURLKey                 = "gitUrl"
	GitBranchKey              = "gitBranch"
	GitPathKey                = "gitPath"
	GitKnownHostsKey          = "gitKnownHosts"
	SealingSecretNameKey      = "sealingSecretName"
	SealingRecoveryWindowKey  = "sealingSecretRecoveryWindowDays"
	SealingKeyIDsKey          = "sealingKeyIds"
	TagsKey                   = "tags"
	FluxConcurrencyKey        = "fluxConcurrency"
	LogRetentionDaysKey       = "logRetentionDays"
	FunctionRegistryKey       = "functionRegistry"
	SpokeRegionsKey           = "spokeRegions"
	SpokeAddonVersionsKey     = "spokeAddonVersions"
	SpokeAddonWavesKey        = "spokeAddonWaves"
	SpokeAccountsKey          = "spokeAccounts"
	StackKindKey              = "stackKind"
	HubAccountIDKey           = "hubAccountId"
	ExternalIDKey             = "externalId"
	defaultHubName            = "mgmt"
	defaultVPCCIDR            = "10.0.0.0/16"
	defaultAvailabilityZones  = 3
	defaultNATMode            = workloadcluster.NATSingle
	defaultNodeInstanceType   = "m6i.large"
	defaultNodeMin            = 2
	defaultNodeDesired        = 2
	defaultNodeMax            = 4
	defaultGitBranch          = "main"
	defaultGitPath            = "./manifests/gitops-system/clusters/mgmt"
	defaultRecoveryWindowDays = 7
	defaultSealingKeyID       = "key-1"
	// DefaultFluxConcurrency: workers per hub Flux controller. A spoke's
	// teardown holds one kustomize-controller worker per waiting finalizer
	// for up to its timeout, so 50 spokes plus the hub's own Kustomizations
	// fit without queueing (test/fluxtiming_test.go).
	DefaultFluxConcurrency  = 60
	defaultLogRetentionDays = 90
)

// Keys lists every setting the program reads, in the order Pulumi.yaml
// declares them.
func Keys() []string {
	return []string{
		RegionKey, HubNameKey, VPCCIDRKey, AvailabilityZonesKey, NATModeKey, KubernetesVersionKey,
		NodeInstanceTypesKey, NodeMinSizeKey, NodeDesiredSizeKey, NodeMaxSizeKey,
		PublicAccessCIDRsKey, AdminPrincipalARNsKey,
		GitURLKey, GitBranchKey, GitPathKey, GitKnownHostsKey,
		SealingSecretNameKey, SealingRecoveryWindowKey, SealingKeyIDsKey, TagsKey,
		FluxConcurrencyKey,
		LogRetentionDaysKey,
		FunctionRegistryKey,
		SpokeRegionsKey,
		SpokeAddonVersionsKey,
		SpokeAddonWavesKey,
		SpokeAccountsKey,
		StackKindKey,
		HubAccountIDKey,
		ExternalIDKey,
	}
}

// Config is the hub stack's settings.
type Config struct {
	Region            string
	HubName           string
	VPCCIDR           string
	AvailabilityZones int
	NATMode           string // workloadcluster.NATSingle or NATPerAZ
	KubernetesVersion string
	Nodes             workloadcluster.Nodes
	// PublicAccessCIDRs may reach the public API endpoint; the private
	// endpoint is always on.
	PublicAccessCIDRs []string
	// AdminPrincipalARNs get an EKS access entry with the cluster admin policy.
	AdminPrincipalARNs []string
	Git                Git
	Sealing            Sealing
	Tags               map[string]string
	// FluxConcurrency is --concurrent of the hub's kustomize-controller,
	// helm-controller and source-controller.
	FluxConcurrency int
	// LogRetentionDays is the retention of the control-plane log groups
	// (/aws/eks/<cluster>/cluster) of the hub and, through cluster-info, of
	// every spoke.
	LogRetentionDays int
	// FunctionRegistry is the OCI repository the hub's Crossplane pulls
	// the workload-cluster composition function from
	// (<registry>/function-workload-cluster:<version>), carried to the
	// Function manifest through cluster-info FUNCTION_REGISTRY.
	FunctionRegistry string
	// SpokeRegions are the regions spokes may be created in; the program
	// looks up each one's availability zone IDs for the composition
	// (cluster-info SPOKE_ZONE_IDS). Empty means the hub's region.
	SpokeRegions []string
	// SpokeAddonVersions, when set, pins the EKS add-on versions every
	// spoke runs (region -> Kubernetes version -> add-on -> version, as
	// the stack output spokeAddonVersions shows them): the program writes
	// them to cluster-info as they are instead of looking up EKS's
	// defaults at every pulumi up, so an up changes no spoke's add-ons
	// unless this setting changes. Empty: looked up at every up.
	SpokeAddonVersions clusterinfo.AddonVersions
	// SpokeAddonWaves move the add-ons of the spokes each lists ahead of
	// SpokeAddonVersions (cluster-info SPOKE_ADDON_WAVES), so that a new
	// add-on version reaches a few spokes before the rest: each step of a
	// rollout is an edit of this setting. Empty: every spoke runs
	// SpokeAddonVersions.
	SpokeAddonWaves clusterinfo.AddonWaves
	// SpokeAccounts are the AWS accounts, other than the hub's, that may
	// hold spokes: each prepared by a spoke-account stack
	// (AccountConfig). The hub's Crossplane may assume their account
	// roles and no other role.
	SpokeAccounts []string
}

// SpokeRegionList is SpokeRegions, or the hub's region when none is set.
func (c Config) SpokeRegionList() []string {
	if len(c.SpokeRegions) == 0 {
		return []string{c.Region}
	}
	return slices.Clone(c.SpokeRegions)
}

// Git is where the hub's Flux reads the system tree.
type Git struct {
	URL        string // ssh://git@host/org/repo.git
	Branch     string
	Path       string // the hub's entry directory, ./.../clusters/<name>
	KnownHosts string // known_hosts lines of the Git host
}

// Sealing is the Sealed Secrets key material kept in Secrets Manager.
type Sealing struct {
	SecretName         string
	RecoveryWindowDays int // 0 deletes at once, else 7-30
	// KeyIDs names the sealing keys, oldest first. The last is the active
	// key (new SealedSecrets are sealed with it), the one before it the
	// previous key (still unseals). Earlier ids keep their keys in Pulumi
	// state only; the controller no longer loads them. Rotate by appending
	// an id; drop an id only when nothing sealed with it remains.
	KeyIDs []string
}

// Defaults returns the settings a stack gets when it sets nothing but the
// required ones (region, gitUrl, gitKnownHosts).
func Defaults() Config {
	return Config{
		HubName:           defaultHubName,
		VPCCIDR:           defaultVPCCIDR,
		AvailabilityZones: defaultAvailabilityZones,
		NATMode:           defaultNATMode,
		KubernetesVersion: versions.DefaultKubernetes,
		Nodes: workloadcluster.Nodes{
			InstanceTypes: []string{defaultNodeInstanceType},
			Min:           defaultNodeMin, Desired: defaultNodeDesired, Max: defaultNodeMax,
		},
		Git:     Git{Branch: defaultGitBranch, Path: defaultGitPath},
		Sealing: Sealing{RecoveryWindowDays: defaultRecoveryWindowDays, KeyIDs: []string{defaultSealingKeyID}},
		Tags:    map[string]string{},

		FluxConcurrency:  DefaultFluxConcurrency,
		LogRetentionDays: defaultLogRetentionDays,
		FunctionRegistry: versions.FunctionRegistry,
	}
}

// SealingSecretName is the configured name or the default for the hub.
func (c Config) SealingSecretName() string {
	if c.Sealing.SecretName != "" {
		return c.Sealing.SecretName
	}
	return clusterinfo.SealingSecretNameFor(c.HubName)
}

// ActiveKeyID is the id of the key new SealedSecrets are sealed with.
func (c Config) ActiveKeyID() string { return c.Sealing.KeyIDs[len(c.Sealing.KeyIDs)-1] }

// PreviousKeyID is the id of the key before the active one, "" if none.
func (c Config) PreviousKeyID() string {
	if n := len(c.Sealing.KeyIDs); n > 1 {
		return c.Sealing.KeyIDs[n-2]
	}
	return ""
}

// SystemPath is GITOPS_SYSTEM_PATH: the gitops-system directory that holds
// the hub's entry directory, without "./" (gitPath minus /clusters/<name>).
func (c Config) SystemPath() string {
	p := path.Clean(strings.TrimPrefix(c.Git.Path, "./"))
	return path.Dir(path.Dir(p))
}

// Error is one bad setting.
type Error struct {
	Field   string // setting key, e.g. "eks-fleet:natMode"
	Value   string // the value as given
	Allowed string // what would be accepted
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: invalid value %q: allowed %s", e.Field, e.Value, e.Allowed)
}

// FullKey is a setting's key as written in Pulumi.<stack>.yaml.
func FullKey(key string) string {
	if strings.Contains(key, ":") {
		return key
	}
	return Project + ":" + key
}
