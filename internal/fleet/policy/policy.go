// Package policy is the fleet policy kept in the system tree
// (gitops-system/workload-clusters/fleet-policy.yaml): what a cluster
// request may ask for and still be approved without a human. The same
// checks run in `fleet cluster add` (before anything is written) and in
// `fleet validate` (on any tree, in CI).
package policy

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/cidralloc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// File coordinates.
const (
	APIVersion = "policy.eksfleet.io/v1alpha1"
	Kind       = "FleetPolicy"
	// RelPath is the policy file's path below the tree (manifests/).
	RelPath = "gitops-system/workload-clusters/fleet-policy.yaml"
)

// Document is the policy file.
type Document struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec Policy `json:"spec"`
}

// Policy is what the fleet allows.
type Policy struct {
	// Regions a spoke may live in.
	Regions []string `json:"regions"`
	// KubernetesVersions narrows internal/contract/versions; empty means all of them.
	KubernetesVersions []string `json:"kubernetesVersions,omitempty"`
	// InstanceTypes the node group may use.
	InstanceTypes []string `json:"instanceTypes"`
	// MaxNodes caps nodes.max of every claim.
	MaxNodes int `json:"maxNodes"`
	// CIDR says where spoke VPCs come from and how big they are.
	CIDR CIDRPolicy `json:"cidr"`
	// ReservedCIDRs may not overlap any spoke: the hub's VPC and any
	// network peered with the fleet.
	ReservedCIDRs []string `json:"reservedCidrs,omitempty"`
	// Names are the spoke naming rules.
	Names NamePolicy `json:"names"`
	// AutoApprove limits what a request may change and still be merged
	// without review.
	AutoApprove AutoApprovePolicy `json:"autoApprove"`
	// AdminAccounts are the AWS accounts whose principals may be spoke
	// admins (spec.adminPrincipalArns). Empty: only the hub's own account
	// (cluster-info ACCOUNT_ID). A claim's admins become cluster-admin of
	// its spoke and are trusted by its admin role, so an account outside
	// this list would hand a spoke to whoever controls that account.
	AdminAccounts []string `json:"adminAccounts,omitempty"`
	// Quotas are what the fleet may use of the account's per-region
	// quotas; a cluster that would pass them fails validation before it
	// is merged, instead of failing half-created in AWS.
	Quotas QuotaPolicy `json:"quotas,omitempty"`
	// Accounts are the AWS accounts other than the hub's a claim may name
	// (spec.account), each as its spoke-account stack outputs it
	// (fleetPolicyAccount). fleet account add writes an entry and the
	// hub's ProviderConfig for it (internal/fleet/accounts); the hub stack must list
	// the account too (eks-fleet:spokeAccounts), or its Crossplane cannot
	// assume the account's role. Empty: spokes live in the hub's account.
	Accounts []spokeaccounts.Account `json:"accounts,omitempty"`
	// Teams own clusters: a claim names its team in the label
	// workloadcluster.TeamLabel (fleet cluster add --team), and the pull
	// request gate auto-approves an edit of a claim only when its author
	// is a member of the owning team as the base branch lists it. Empty:
	// no claim is auto-approved.
	Teams map[string]Team `json:"teams,omitempty"`
}

// Team is a team of the fleet: its members are Git host logins (the pull
// request author the gate is given).
type Team struct {
	Members []string `json:"members"`
}

// TeamNames are the policy's teams, sorted.
func (p *Policy) TeamNames() []string { return slices.Sorted(maps.Keys(p.Teams)) }

// IsMember reports whether login is a member of team (logins compare
// without regard to case, as Git hosts treat them).
func (p *Policy) IsMember(team, login string) bool {
	t, ok := p.Teams[team]
	return ok && login != "" && slices.ContainsFunc(t.Members, func(m string) bool { return strings.EqualFold(m, login) })
}

// QuotaPolicy bounds what the fleet's VPCs use in each region. Zero means
// AWS's default.
type QuotaPolicy struct {
	// VPCsPerRegion the fleet may create in one region (the hub's VPC
	// counts in its region). Default DefaultVPCsPerRegion.
	VPCsPerRegion int `json:"vpcsPerRegion,omitempty"`
	// ElasticIPsPerRegion the fleet's NAT gateways may take in one region
	// (one per spoke with natMode single, one per zone with per-az; the
	// hub's, cluster-info HUB_EGRESS_CIDRS, in its region). Default
	// DefaultElasticIPsPerRegion.
	ElasticIPsPerRegion int `json:"elasticIPsPerRegion,omitempty"`
}

// AWS's default quotas: Amazon VPC "VPCs per Region" is 5, one of them
// taken by the default VPC every region starts with; EC2 "EC2-VPC Elastic
// IPs" is 5 per region.
const (
	DefaultVPCsPerRegion       = 4
	DefaultElasticIPsPerRegion = 5
)

// VPCsPerRegion is spec.quotas.vpcsPerRegion or its default.
func (p *Policy) VPCsPerRegion() int {
	if p.Quotas.VPCsPerRegion > 0 {
		return p.Quotas.VPCsPerRegion
	}
	return DefaultVPCsPerRegion
}

// ElasticIPsPerRegion is spec.quotas.elasticIPsPerRegion or its default.
func (p *Policy) ElasticIPsPerRegion() int {
	if p.Quotas.ElasticIPsPerRegion > 0 {
		return p.Quotas.ElasticIPsPerRegion
	}
	return DefaultElasticIPsPerRegion
}

// CIDRPolicy bounds spoke VPC CIDRs.
type CIDRPolicy struct {
	// Pools are the ranges `fleet cluster add` picks free blocks from.
	Pools []string `json:"pools"`
	// PrefixLength is the size of a block picked without --cidr.
	PrefixLength int `json:"prefixLength"`
	// MinPrefixLength and MaxPrefixLength bound a requested block
	// (/16 is the largest VPC AWS allows).
	MinPrefixLength int `json:"minPrefixLength"`
	MaxPrefixLength int `json:"maxPrefixLength"`
}

// NamePolicy holds the spoke name rules beyond the DNS-label form.
type NamePolicy struct {
	MaxLength int      `json:"maxLength,omitempty"`
	Reserved  []string `json:"reserved,omitempty"`
}

// AutoApprovePolicy says which pull requests may be merged by CI alone.
type AutoApprovePolicy struct {
	// Paths (below the tree, with trailing /) a request may touch.
	Paths []string `json:"paths"`
	// MaxNodes caps nodes.max of an auto-approved claim (0: MaxNodes).
	MaxNodes int `json:"maxNodes,omitempty"`
}

// Load reads and checks a policy file.
func Load(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading fleet policy: %w", err)
	}
	return Parse(b, path)
}

// Parse decodes and checks a policy document; name is used in errors.
func Parse(b []byte, name string) (*Policy, error) {
	var d Document
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if d.APIVersion != APIVersion || d.Kind != Kind {
		return nil, fmt.Errorf("%s: apiVersion/kind %q/%q: want %s/%s", name, d.APIVersion, d.Kind, APIVersion, Kind)
	}
	p := d.Spec
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}

func (p *Policy) check() error {
	if len(p.Regions) == 0 {
		return fmt.Errorf("spec.regions is empty: list at least one AWS region")
	}
	for _, r := range p.Regions {
		if !regionRE.MatchString(r) {
			return fmt.Errorf("spec.regions: %q is not an AWS region name (e.g. eu-west-1)", r)
		}
		if err := hubiam.CheckPartition(r, ""); err != nil {
			return fmt.Errorf("spec.regions: %w", err)
		}
	}
	for _, v := range p.KubernetesVersions {
		if err := versions.ValidateKubernetes(v); err != nil {
			return fmt.Errorf("spec.kubernetesVersions may only narrow internal/contract/versions: %w", err)
		}
	}
	if len(p.InstanceTypes) == 0 {
		return fmt.Errorf("spec.instanceTypes is empty: list at least one EC2 instance type")
	}
	for _, t := range p.InstanceTypes {
		if !instanceTypeRE.MatchString(t) {
			return fmt.Errorf("spec.instanceTypes: %q is not an EC2 instance type (e.g. m7i.large)", t)
		}
		// Spoke node groups use the AL2023 x86_64 standard AMI.
		if acc := stacks.Accelerator(t); acc != "" {
			return fmt.Errorf("spec.instanceTypes: %q is a %s instance type: spoke node groups run the AL2023_x86_64_STANDARD AMI; use x86_64 types without accelerators, e.g. m7i.large", t, acc)
		}
		if arch := stacks.Architecture(t); arch != "x86_64" {
			return fmt.Errorf("spec.instanceTypes: %q is %s: spoke node groups run the AL2023_x86_64_STANDARD AMI; use x86_64 types, e.g. m7i.large", t, arch)
		}
	}
	if p.Quotas.VPCsPerRegion < 0 || p.Quotas.ElasticIPsPerRegion < 0 {
		return fmt.Errorf("spec.quotas vpcsPerRegion %d, elasticIPsPerRegion %d: want 0 (AWS's default) or more",
			p.Quotas.VPCsPerRegion, p.Quotas.ElasticIPsPerRegion)
	}
	if p.MaxNodes < 1 || p.MaxNodes > APIMaxNodes {
		return fmt.Errorf("spec.maxNodes %d: must be 1 to %d (the API's limit)", p.MaxNodes, APIMaxNodes)
	}
	c := p.CIDR
	if c.MinPrefixLength < APIMinPrefix || c.MaxPrefixLength > APIMaxPrefix || c.MinPrefixLength > c.MaxPrefixLength {
		return fmt.Errorf("spec.cidr min/maxPrefixLength %d/%d: want %d <= min <= max <= %d (the API's limits)", c.MinPrefixLength, c.MaxPrefixLength, APIMinPrefix, APIMaxPrefix)
	}
	if c.PrefixLength < c.MinPrefixLength || c.PrefixLength > c.MaxPrefixLength {
		return fmt.Errorf("spec.cidr.prefixLength %d: must be between %d and %d", c.PrefixLength, c.MinPrefixLength, c.MaxPrefixLength)
	}
	if len(c.Pools) == 0 {
		return fmt.Errorf("spec.cidr.pools is empty: list at least one range, e.g. 10.0.0.0/8")
	}
	for _, s := range c.Pools {
		if _, err := cidralloc.Parse(s); err != nil {
			return fmt.Errorf("spec.cidr.pools: %w", err)
		}
	}
	for _, s := range p.ReservedCIDRs {
		if _, err := cidralloc.Parse(s); err != nil {
			return fmt.Errorf("spec.reservedCidrs: %w", err)
		}
	}
	if p.Names.MaxLength > workloadcluster.MaxNameLength {
		return fmt.Errorf("spec.names.maxLength %d: may not exceed the API's %d", p.Names.MaxLength, workloadcluster.MaxNameLength)
	}
	for _, a := range p.AdminAccounts {
		if !accountRE.MatchString(a) {
			return fmt.Errorf("spec.adminAccounts: %q is not an AWS account id (12 digits)", a)
		}
	}
	if err := p.checkAccounts(); err != nil {
		return err
	}
	for _, name := range p.TeamNames() {
		if !workloadcluster.TeamNameRE.MatchString(name) {
			return fmt.Errorf("spec.teams: %q is not a team name (a lower-case DNS label of at most 63 characters, e.g. payments)", name)
		}
		if len(p.Teams[name].Members) == 0 {
			return fmt.Errorf("spec.teams.%s.members is empty: list the Git host logins of the team", name)
		}
		for _, m := range p.Teams[name].Members {
			if !loginRE.MatchString(m) {
				return fmt.Errorf("spec.teams.%s.members: %q is not a Git host login (letters, digits and -, at most 39)", name, m)
			}
		}
	}
	for _, path := range p.AutoApprove.Paths {
		if !strings.HasSuffix(path, "/") || strings.HasPrefix(path, "/") {
			return fmt.Errorf("spec.autoApprove.paths: %q must be relative to the tree and end with /", path)
		}
	}
	return nil
}

// AllowedAdminAccounts returns the accounts whose principals may be spoke
// admins: spec.adminAccounts, or the hub's account when it is empty.
func (p *Policy) AllowedAdminAccounts(hubAccount string) []string {
	if len(p.AdminAccounts) > 0 {
		return p.AdminAccounts
	}
	if hubAccount == "" {
		return nil
	}
	return []string{hubAccount}
}

// Versions returns the Kubernetes versions the policy allows.
func (p *Policy) Versions() []string {
	if len(p.KubernetesVersions) == 0 {
		return versions.Kubernetes()
	}
	return slices.Clone(p.KubernetesVersions)
}

// DefaultVersion is the version a new cluster gets: the fleet default if
// the policy allows it, else the newest allowed.
func (p *Policy) DefaultVersion() string {
	vs := p.Versions()
	if slices.Contains(vs, versions.DefaultKubernetes) {
		return versions.DefaultKubernetes
	}
	return vs[len(vs)-1]
}

// Pools returns the parsed CIDR pools.
func (p *Policy) Pools() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(p.CIDR.Pools))
	for _, s := range p.CIDR.Pools {
		pr, _ := cidralloc.Parse(s) // checked by Load
		out = append(out, pr)
	}
	return out
}

// MaxNameLength is the effective name limit.
func (p *Policy) MaxNameLength() int {
	if p.Names.MaxLength > 0 {
		return p.Names.MaxLength
	}
	return workloadcluster.MaxNameLength
}

// AutoApproveMaxNodes is the effective node cap for auto-approval.
func (p *Policy) AutoApproveMaxNodes() int {
	if p.AutoApprove.MaxNodes > 0 {
		return p.AutoApprove.MaxNodes
	}
	return p.MaxNodes
}

var (
	regionRE       = regexp.MustCompile(`^[a-z]{2}(-gov)?-[a-z]+-[0-9]$`)
	instanceTypeRE = regexp.MustCompile(`^[a-z][a-z0-9-]*[0-9][a-z0-9-]*\.[0-9a-z]+$`)
	// dnsLabelRE is the RFC 1123 label Kubernetes names and EKS cluster
	// names share (EKS also allows upper case and _, Kubernetes does not).
	dnsLabelRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
)

// accountRoleRE is an account role's ARN: the role hubiam.AccountRoleName
// names for a hub (hubName's form), in its account.
var accountRoleRE = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::([0-9]{12}):role/[a-z][a-z0-9]*` + regexp.QuoteMeta(hubiam.AccountRoleName("")) + `$`)

// checkAccounts: each entry as a spoke-account stack outputs it, each
// account once.
func (p *Policy) checkAccounts() error {
	seen := map[string]bool{}
	for i, a := range p.Accounts {
		at := fmt.Sprintf("spec.accounts[%d]", i)
		if !accountRE.MatchString(a.ID) {
			return fmt.Errorf("%s.id %q: not an AWS account ID (12 digits)", at, a.ID)
		}
		if seen[a.ID] {
			return fmt.Errorf("%s.id %q: listed twice", at, a.ID)
		}
		seen[a.ID] = true
		if m := accountRoleRE.FindStringSubmatch(a.RoleARN); m == nil || m[2] != a.ID {
			return fmt.Errorf("%s.roleArn %q: want the account role arn:aws:iam::%s:role/<hub>-crossplane-account (the spoke-account stack's output crossplaneAccountRoleArn)", at, a.RoleARN, a.ID)
		}
		if err := hubiam.CheckExternalID(a.ExternalID); err != nil {
			return fmt.Errorf("%s.externalId: %w (the spoke-account stack's output externalId)", at, err)
		}
	}
	return nil
}

// AccountIDs are the policy's spoke accounts.
func (p *Policy) AccountIDs() []string {
	out := make([]string, len(p.Accounts))
	for i, a := range p.Accounts {
		out[i] = a.ID
	}
	return out
}

// Account is the policy's entry for account id.
func (p *Policy) Account(id string) (spokeaccounts.Account, bool) {
	i := slices.IndexFunc(p.Accounts, func(a spokeaccounts.Account) bool { return a.ID == id })
	if i < 0 {
		return spokeaccounts.Account{}, false
	}
	return p.Accounts[i], true
}
