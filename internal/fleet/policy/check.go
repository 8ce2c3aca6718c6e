package policy

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/publiccidr"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/cidralloc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// Rule families: an "api" violation is a value the WorkloadCluster API (or
// AWS behind it) would reject; a "policy" violation is a value the API
// accepts but this fleet does not allow without review.
const (
	FamilyAPI    = "api"
	FamilyPolicy = "policy"
	FamilyFleet  = "fleet"
)

// Violation is one failed rule.
type Violation struct {
	Family  string // FamilyAPI, FamilyPolicy or FamilyFleet
	Rule    string // short id, e.g. "name", "cidr-overlap"
	Cluster string
	File    string // set by callers that know the file
	Field   string // e.g. spec.nodes.max
	Message string // names the bad value and what is allowed
}

func (v Violation) Error() string {
	var b strings.Builder
	if v.File != "" {
		b.WriteString(v.File + ": ")
	}
	if v.Cluster != "" {
		b.WriteString("cluster " + v.Cluster + ": ")
	}
	if v.Field != "" {
		b.WriteString(v.Field + ": ")
	}
	b.WriteString(v.Message)
	return b.String()
}

// Limits of the WorkloadCluster API (its XRD's OpenAPI and CEL rules).
const (
	APIMinPrefix   = 16
	APIMaxPrefix   = 18
	APIMaxNodes    = 100
	APIMaxTypes    = 5
	APIMaxPublic   = 37 // EKS's 40, less the hub's NAT egress the Composition adds (<= 3)
	APIMaxAdmins   = 10
	APIMaxTagValue = 256
)

var (
	accountRE = regexp.MustCompile(`^[0-9]{12}$`)
	// loginRE is a Git host login (GitHub's form: letters, digits and
	// single hyphens, at most 39 characters).
	loginRE    = regexp.MustCompile(`^[A-Za-z0-9](-?[A-Za-z0-9]){0,38}$`)
	arnRE      = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]+$`)
	tagKeyRE   = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,128}$`)
	tagValueRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)
	// dockerBridge is the range the XRD keeps spoke VPCs out of (Docker's
	// default bridge on nodes).
	dockerBridge = netip.MustParsePrefix("172.17.0.0/16")
)

// CheckName applies the name rules of the API and of the policy.
func (p *Policy) CheckName(name string) []Violation {
	var out []Violation
	add := func(fam, msg string, a ...any) {
		out = append(out, Violation{Family: fam, Rule: "name", Cluster: name, Field: "metadata.name", Message: fmt.Sprintf(msg, a...)})
	}
	switch {
	case name == "":
		add(FamilyAPI, "is empty: a cluster needs a name (lower-case letters, digits and '-', starting with a letter)")
	case !dnsLabelRE.MatchString(name):
		add(FamilyAPI, "%q is not allowed: use lower-case letters, digits and '-', start with a letter and end with a letter or digit", name)
	}
	if len(name) > workloadcluster.MaxNameLength {
		add(FamilyAPI, "%q is %d characters: at most %d (derived IAM role names must fit in 64)", name, len(name), workloadcluster.MaxNameLength)
	} else if len(name) > p.MaxNameLength() {
		add(FamilyPolicy, "%q is %d characters: the fleet policy allows at most %d", name, len(name), p.MaxNameLength())
	}
	if slices.Contains(p.Names.Reserved, name) {
		add(FamilyPolicy, "%q is reserved: reserved names are %s", name, strings.Join(p.Names.Reserved, ", "))
	}
	return out
}

// CheckClaim returns every rule one claim breaks on its own.
func (p *Policy) CheckClaim(c *workloadcluster.Claim) []Violation {
	name := c.Metadata.Name
	out := p.CheckName(name)
	add := func(fam, rule, field, msg string, a ...any) {
		out = append(out, Violation{Family: fam, Rule: rule, Cluster: name, Field: field, Message: fmt.Sprintf(msg, a...)})
	}
	if c.APIVersion != workloadcluster.APIVersion || c.Kind != workloadcluster.ClaimKind {
		add(FamilyAPI, "kind", "apiVersion/kind", "%q/%q: want %s/%s", c.APIVersion, c.Kind, workloadcluster.APIVersion, workloadcluster.ClaimKind)
	}
	if c.Metadata.Namespace != workloadcluster.ClaimNamespace {
		add(FamilyAPI, "namespace", "metadata.namespace", "%q: claims live in namespace %q", c.Metadata.Namespace, workloadcluster.ClaimNamespace)
	}
	if team, ok := c.Metadata.Labels[workloadcluster.TeamLabel]; ok && !slices.Contains(p.TeamNames(), team) {
		add(FamilyPolicy, "team", "metadata.labels."+workloadcluster.TeamLabel, "%q is not a team of the fleet policy: teams %s (spec.teams)", team, strings.Join(p.TeamNames(), ", "))
	}
	s := c.Spec
	// Account.
	switch {
	case s.Account == "":
	case !accountRE.MatchString(s.Account):
		add(FamilyAPI, "account", "spec.account", "%q is not an AWS account ID (12 digits)", s.Account)
	case !slices.Contains(p.AccountIDs(), s.Account):
		known := "none: spokes live in the hub's account"
		if len(p.Accounts) > 0 {
			known = strings.Join(p.AccountIDs(), ", ")
		}
		add(FamilyPolicy, "account", "spec.account", "%q is not a spoke account of the fleet policy: accounts %s (spec.accounts; fleet account add)", s.Account, known)
	}
	// Region.
	switch {
	case !regionRE.MatchString(s.Region):
		add(FamilyAPI, "region", "spec.region", "%q is not an AWS region name (e.g. eu-west-1); allowed: %s", s.Region, strings.Join(p.Regions, ", "))
	case !slices.Contains(p.Regions, s.Region):
		add(FamilyPolicy, "region", "spec.region", "%q is not allowed: allowed %s", s.Region, strings.Join(p.Regions, ", "))
	}
	// Version.
	switch {
	case !versions.IsSupportedKubernetes(s.KubernetesVersion):
		add(FamilyAPI, "version", "spec.kubernetesVersion", "%q is not supported: allowed %s", s.KubernetesVersion, strings.Join(versions.Kubernetes(), ", "))
	case !slices.Contains(p.Versions(), s.KubernetesVersion):
		add(FamilyPolicy, "version", "spec.kubernetesVersion", "%q is not allowed by the fleet policy: allowed %s", s.KubernetesVersion, strings.Join(p.Versions(), ", "))
	}
	// CIDR.
	if pr, err := cidralloc.Parse(s.VPCCIDR); err != nil {
		add(FamilyAPI, "cidr", "spec.vpcCidr", "%v", err)
	} else {
		if pr.Bits() < APIMinPrefix || pr.Bits() > APIMaxPrefix {
			add(FamilyAPI, "cidr", "spec.vpcCidr", "%q: the API allows prefix lengths /%d to /%d", s.VPCCIDR, APIMinPrefix, APIMaxPrefix)
		} else if pr.Overlaps(dockerBridge) {
			add(FamilyAPI, "cidr", "spec.vpcCidr", "%q overlaps %s (Docker's bridge network), which the API refuses", s.VPCCIDR, dockerBridge)
		} else if pr.Bits() < p.CIDR.MinPrefixLength || pr.Bits() > p.CIDR.MaxPrefixLength {
			add(FamilyPolicy, "cidr", "spec.vpcCidr", "%q: the fleet policy allows prefix lengths /%d to /%d", s.VPCCIDR, p.CIDR.MinPrefixLength, p.CIDR.MaxPrefixLength)
		}
		inPool := false
		for _, pool := range p.Pools() {
			if pool.Bits() <= pr.Bits() && pool.Contains(pr.Addr()) {
				inPool = true
			}
		}
		if !inPool {
			add(FamilyPolicy, "cidr", "spec.vpcCidr", "%q is outside the fleet's pools %s", s.VPCCIDR, strings.Join(p.CIDR.Pools, ", "))
		}
	}
	if s.AvailabilityZones < workloadcluster.MinAvailabilityZones || s.AvailabilityZones > workloadcluster.MaxAvailabilityZones {
		add(FamilyAPI, "azs", "spec.availabilityZones", "%d: allowed %d or %d (EKS needs subnets in at least two AZs)",
			s.AvailabilityZones, workloadcluster.MinAvailabilityZones, workloadcluster.MaxAvailabilityZones)
	}
	if s.NATMode != workloadcluster.NATSingle && s.NATMode != workloadcluster.NATPerAZ {
		add(FamilyAPI, "nat", "spec.natMode", "%q: allowed %s, %s", s.NATMode, workloadcluster.NATSingle, workloadcluster.NATPerAZ)
	}
	// Nodes.
	n := s.Nodes
	if len(n.InstanceTypes) == 0 || len(n.InstanceTypes) > APIMaxTypes {
		add(FamilyAPI, "instance-types", "spec.nodes.instanceTypes", "has %d entries: list 1 to %d of %s", len(n.InstanceTypes), APIMaxTypes, strings.Join(p.InstanceTypes, ", "))
	}
	seen := map[string]bool{}
	for _, t := range n.InstanceTypes {
		switch {
		case seen[t]:
			add(FamilyAPI, "instance-types", "spec.nodes.instanceTypes", "%q is listed twice", t)
		case !instanceTypeRE.MatchString(t):
			add(FamilyAPI, "instance-types", "spec.nodes.instanceTypes", "%q is not an EC2 instance type; allowed %s", t, strings.Join(p.InstanceTypes, ", "))
		case !slices.Contains(p.InstanceTypes, t):
			add(FamilyPolicy, "instance-types", "spec.nodes.instanceTypes", "%q is not allowed: allowed %s", t, strings.Join(p.InstanceTypes, ", "))
		}
		seen[t] = true
	}
	if n.Min < 1 || n.Max > APIMaxNodes || n.Min > n.Desired || n.Desired > n.Max {
		add(FamilyAPI, "nodes", "spec.nodes", "min %d, desired %d, max %d: need 1 <= min <= desired <= max <= %d", n.Min, n.Desired, n.Max, APIMaxNodes)
	}
	if n.Max > p.MaxNodes {
		add(FamilyPolicy, "max-nodes", "spec.nodes.max", "%d exceeds the fleet policy's maxNodes %d", n.Max, p.MaxNodes)
	}
	// The same rules as the hub's endpoint (internal/contract/publiccidr): at most
	// APIMaxPublic entries, none wider than /8, together never the whole
	// internet (0.0.0.0/1 + 128.0.0.0/1 is refused like 0.0.0.0/0).
	if err := publiccidr.ValidateN("spec.publicAccessCidrs", s.PublicAccessCIDRs, APIMaxPublic); err != nil {
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, e := range errs {
			msg, _ := strings.CutPrefix(e.Error(), "spec.publicAccessCidrs")
			add(FamilyAPI, "public-access", "spec.publicAccessCidrs", "%s", strings.TrimLeft(msg, ": "))
		}
	}
	if len(s.AdminPrincipalARNs) > APIMaxAdmins {
		add(FamilyAPI, "admins", "spec.adminPrincipalArns", "has %d entries: at most %d", len(s.AdminPrincipalARNs), APIMaxAdmins)
	}
	for _, a := range s.AdminPrincipalARNs {
		if !arnRE.MatchString(a) {
			add(FamilyAPI, "admins", "spec.adminPrincipalArns", "%q is not an IAM role or user ARN (arn:aws:iam::<12-digit account>:role/<name>)", a)
		}
	}
	if err := spokeiam.CheckAdminTrust(s.AdminPrincipalARNs); err != nil {
		add(FamilyAPI, "admins", "spec.adminPrincipalArns", "%v", err)
	}
	keys := make([]string, 0, len(s.Tags))
	for k := range s.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := s.Tags[k]
		if err := fence.CheckUserTagKey(k); err != nil {
			add(FamilyAPI, "tags", "spec.tags", "%v", err)
			continue
		}
		switch {
		case !tagKeyRE.MatchString(k):
			add(FamilyAPI, "tags", "spec.tags", "key %q: 1-128 letters, digits, spaces and _ . : / = + - @", k)
		case len(v) > APIMaxTagValue || !tagValueRE.MatchString(v):
			add(FamilyAPI, "tags", "spec.tags", "value of %q: at most %d letters, digits, spaces and _ . : / = + - @", k, APIMaxTagValue)
		}
	}
	return out
}

// Member is one cluster of the fleet as the fleet-wide checks see it.
type Member struct {
	Name   string
	File   string
	CIDR   string
	Admins []string // spec.adminPrincipalArns
	Region string
	// AZs is spec.availabilityZones.
	AZs int
	// ElasticIPs its NAT gateways take (workloadcluster.Spec.ElasticIPs).
	ElasticIPs int
	// KubernetesVersion is spec.kubernetesVersion.
	KubernetesVersion string
	// Account is spec.account ("" the hub's).
	Account string
}

// MemberOf is the fleet-wide view of a claim in file.
func MemberOf(c *workloadcluster.Claim, file string) Member {
	return Member{Name: c.Metadata.Name, File: file, CIDR: c.Spec.VPCCIDR, Admins: c.Spec.AdminPrincipalARNs,
		Region: c.Spec.Region, AZs: c.Spec.AvailabilityZones, ElasticIPs: c.Spec.ElasticIPs(), KubernetesVersion: c.Spec.KubernetesVersion,
		Account: c.Spec.Account}
}

// Hub is what the fleet-wide checks need to know of the hub (cluster-info).
type Hub struct {
	VPCCIDR   string // HUB_VPC_CIDR (may be empty)
	AccountID string // ACCOUNT_ID: the default admin account
	Region    string // REGION: where the hub's VPC counts against the quotas
	// ElasticIPs of the hub's NAT gateways (HUB_EGRESS_CIDRS).
	ElasticIPs int
	// ZoneIDs are the zones the hub looked up per spoke region
	// (SPOKE_ZONE_IDS); nil when cluster-info does not say.
	ZoneIDs map[string][]string
	// AddonVersions are the EKS add-on versions the hub looked up per
	// spoke region and Kubernetes version (SPOKE_ADDON_VERSIONS); nil when
	// cluster-info does not say.
	AddonVersions clusterinfo.AddonVersions
	// SpokeAccounts are the accounts the hub's Crossplane may reach
	// (SPOKE_ACCOUNTS); nil when cluster-info does not say.
	SpokeAccounts []string
}

// HubOf is the hub as cluster-info describes it.
func HubOf(info clusterinfo.Values[string]) Hub {
	h := Hub{VPCCIDR: info.HubVPCCIDR, AccountID: info.AccountID, Region: info.Region}
	if cidrs, err := clusterinfo.ParseCIDRs(info.HubEgressCIDRs); err == nil {
		h.ElasticIPs = len(cidrs)
	}
	if zones, err := clusterinfo.ParseZoneIDs(info.SpokeZoneIDs); err == nil {
		h.ZoneIDs = zones
	}
	if addons, err := clusterinfo.ParseAddonVersions(info.SpokeAddonVersions); err == nil {
		h.AddonVersions = addons
	}
	if info.SpokeAccounts != "" {
		if ids, err := clusterinfo.ParseAccounts(info.SpokeAccounts); err == nil {
			h.SpokeAccounts = append([]string{}, ids...)
		}
	}
	return h
}

// checkZones: a spoke goes only where the hub looked up availability
// zones (the composition places subnets by zone ID), and no wider than the
// zones EKS accepts there.
func checkZones(members []Member, hub Hub) []Violation {
	if hub.ZoneIDs == nil {
		return nil
	}
	var out []Violation
	for _, m := range members {
		ids, ok := hub.ZoneIDs[m.Region]
		switch {
		case !ok:
			out = append(out, Violation{Family: FamilyPolicy, Rule: "region-zones", Cluster: m.Name, File: m.File, Field: "spec.region",
				Message: fmt.Sprintf("%q: the hub looked up no availability zones there (cluster-info %s has %s); add the region to the hub stack's eks-fleet:spokeRegions and run pulumi up first",
					m.Region, clusterinfo.SpokeZoneIDs, strings.Join(slices.Sorted(maps.Keys(hub.ZoneIDs)), ", "))})
		case m.AZs > len(ids):
			out = append(out, Violation{Family: FamilyAPI, Rule: "region-zones", Cluster: m.Name, File: m.File, Field: "spec.availabilityZones",
				Message: fmt.Sprintf("%d: %s has %d zones EKS accepts for cluster subnets (%s); allowed: 2 to %d there", m.AZs, m.Region, len(ids), strings.Join(ids, ", "), len(ids))})
		case hub.AddonVersions != nil && len(hub.AddonVersions[m.Region][m.KubernetesVersion]) == 0:
			out = append(out, Violation{Family: FamilyPolicy, Rule: "region-addons", Cluster: m.Name, File: m.File, Field: "spec.kubernetesVersion",
				Message: fmt.Sprintf("%q: the hub looked up no EKS add-on versions for it in %s (cluster-info %s has %s there); run pulumi up on the hub with this release first",
					m.KubernetesVersion, m.Region, clusterinfo.SpokeAddonVersions, strings.Join(slices.Sorted(maps.Keys(hub.AddonVersions[m.Region])), ", "))})
		}
	}
	return out
}

// CheckFleet finds what only shows across clusters: names used twice, VPC
// blocks overlapping each other, the hub or a reserved range, and admins
// from accounts the fleet does not trust (which depend on the hub's
// account).
func (p *Policy) CheckFleet(members []Member, hub Hub) []Violation {
	hubCIDR := hub.VPCCIDR
	var out []Violation
	for _, m := range members {
		// A spoke's own account, when it has one, is its team's: its
		// principals may be the spoke's admins too.
		allowed := p.AllowedAdminAccounts(hub.AccountID)
		if m.Account != "" && !slices.Contains(allowed, m.Account) {
			allowed = append(slices.Clone(allowed), m.Account)
		}
		for _, a := range m.Admins {
			acct := accountOf(a)
			if !slices.Contains(allowed, acct) {
				out = append(out, Violation{Family: FamilyPolicy, Rule: "admin-account", Cluster: m.Name, File: m.File, Field: "spec.adminPrincipalArns",
					Message: fmt.Sprintf("%q is in account %q; spoke admins may come only from %s (fleet policy spec.adminAccounts, default the hub's account, and the spoke's own spec.account)", a, acct, allowedList(allowed))})
			}
		}
	}
	// Every spoke account of the policy is one the hub's Crossplane may
	// assume into (the hub stack's spokeAccounts): otherwise the claims
	// naming it fail at the composition.
	if hub.SpokeAccounts != nil {
		for i, a := range p.Accounts {
			if !slices.Contains(hub.SpokeAccounts, a.ID) {
				out = append(out, Violation{Family: FamilyPolicy, Rule: "account-hub", File: RelPath, Field: fmt.Sprintf("spec.accounts[%d].id", i),
					Message: fmt.Sprintf("%q: the hub's Crossplane may not assume into it (cluster-info %s has %s); add it to the hub stack's eks-fleet:spokeAccounts and run pulumi up first",
						a.ID, clusterinfo.SpokeAccounts, accountsList(hub.SpokeAccounts))})
			}
		}
	}
	byName := map[string]string{}
	var blocks []cidralloc.Block
	owners := map[string]Member{}
	for _, m := range members {
		if f, ok := byName[m.Name]; ok {
			out = append(out, Violation{Family: FamilyFleet, Rule: "duplicate-name", Cluster: m.Name, File: m.File, Field: "metadata.name",
				Message: fmt.Sprintf("%q is already used by %s", m.Name, f)})
			continue
		}
		byName[m.Name] = m.File
		if pr, err := cidralloc.Parse(m.CIDR); err == nil {
			owner := "cluster " + m.Name
			blocks = append(blocks, cidralloc.Block{Owner: owner, Prefix: pr})
			owners[owner] = m
		}
	}
	for _, r := range p.Reserved(hubCIDR) {
		blocks = append(blocks, r)
	}
	out = append(out, p.checkQuotas(members, hub)...)
	out = append(out, checkZones(members, hub)...)
	// The policy's regions, where claims may go, are regions the hub
	// looked up (its spokeRegions): otherwise a claim the policy admits
	// fails at the composition.
	if hub.ZoneIDs != nil {
		for _, r := range p.Regions {
			if _, ok := hub.ZoneIDs[r]; !ok {
				out = append(out, Violation{Family: FamilyPolicy, Rule: "region-zones", File: RelPath, Field: "spec.regions",
					Message: fmt.Sprintf("%q: the hub looked up no availability zones there (cluster-info %s has %s); add it to the hub stack's eks-fleet:spokeRegions or drop it here",
						r, clusterinfo.SpokeZoneIDs, strings.Join(slices.Sorted(maps.Keys(hub.ZoneIDs)), ", "))})
			}
		}
	}
	for _, o := range cidralloc.FindOverlaps(blocks) {
		a, b := o.A, o.B
		m, ok := owners[b.Owner]
		if !ok {
			a, b = b, a
			m, ok = owners[b.Owner]
		}
		if !ok {
			continue // two reserved ranges: not a cluster's problem
		}
		out = append(out, Violation{Family: FamilyFleet, Rule: "cidr-overlap", Cluster: m.Name, File: m.File, Field: "spec.vpcCidr",
			Message: fmt.Sprintf("%s overlaps %s (%s)", b.Prefix, a.Owner, a.Prefix)})
	}
	return out
}

// checkQuotas counts, account by account and region by region and in the
// members' order, the VPCs and NAT Elastic IPs the fleet uses (the hub's
// first, in its account and region; quotas are per account and region)
// and refuses each cluster that takes either past the policy's quota.
func (p *Policy) checkQuotas(members []Member, hub Hub) []Violation {
	type where struct{ account, region string }
	vpcs, eips := map[where]int{}, map[where]int{}
	if hub.Region != "" {
		w := where{"", hub.Region}
		vpcs[w], eips[w] = 1, hub.ElasticIPs
	}
	var out []Violation
	for _, m := range members {
		if m.Region == "" {
			continue
		}
		w := where{m.Account, m.Region}
		in := m.Region
		if m.Account != "" {
			in += " of account " + m.Account
		}
		vpcs[w]++
		eips[w] += m.ElasticIPs
		raise := "raise the account's quota in AWS first, then spec.quotas in the fleet policy, or use another region"
		if n, q := vpcs[w], p.VPCsPerRegion(); n > q {
			out = append(out, Violation{Family: FamilyPolicy, Rule: "region-quota", Cluster: m.Name, File: m.File, Field: "spec.region",
				Message: fmt.Sprintf("%s: the fleet would have %d VPCs in %s, the fleet policy allows %d (spec.quotas.vpcsPerRegion, default %d: AWS's 5 per region less the default VPC); %s",
					m.Name, n, in, q, DefaultVPCsPerRegion, raise)})
		}
		if n, q := eips[w], p.ElasticIPsPerRegion(); n > q && m.ElasticIPs > 0 {
			out = append(out, Violation{Family: FamilyPolicy, Rule: "region-quota", Cluster: m.Name, File: m.File, Field: "spec.natMode",
				Message: fmt.Sprintf("%s: its NAT gateways would bring the fleet's Elastic IPs in %s to %d, the fleet policy allows %d (spec.quotas.elasticIPsPerRegion, default %d as AWS's); natMode single takes one; %s",
					m.Name, in, n, q, DefaultElasticIPsPerRegion, raise)})
		}
	}
	return out
}

func accountsList(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// Reserved returns the ranges no spoke may overlap: the policy's reserved
// blocks and the hub's VPC.
func (p *Policy) Reserved(hubCIDR string) []cidralloc.Block {
	var out []cidralloc.Block
	seen := map[netip.Prefix]bool{}
	if pr, err := cidralloc.Parse(hubCIDR); err == nil {
		out = append(out, cidralloc.Block{Owner: "the hub's VPC", Prefix: pr})
		seen[pr] = true
	}
	for _, s := range p.ReservedCIDRs {
		if pr, err := cidralloc.Parse(s); err == nil && !seen[pr] {
			out = append(out, cidralloc.Block{Owner: "reserved range", Prefix: pr})
			seen[pr] = true
		}
	}
	return out
}

// accountOf is the account id field of an ARN ("" when it has none).
func accountOf(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 {
		return ""
	}
	return parts[4]
}

func allowedList(accounts []string) string {
	if len(accounts) == 0 {
		return "no account (cluster-info ACCOUNT_ID is unknown and spec.adminAccounts is empty)"
	}
	return "account " + strings.Join(accounts, ", ")
}

// CheckTransition finds changes to an existing claim that the API refuses
// on update (its CEL transition rules): region, vpcCidr and
// availabilityZones are immutable, natMode only goes from single to per-az,
// kubernetesVersion moves up one minor version at a time. The offline
// schema check cannot see these: it has no old object.
func CheckTransition(old, cur *workloadcluster.Claim) []Violation {
	var out []Violation
	name := cur.Metadata.Name
	add := func(rule, field, msg string, a ...any) {
		out = append(out, Violation{Family: FamilyAPI, Rule: rule, Cluster: name, Field: field, Message: fmt.Sprintf(msg, a...)})
	}
	o, c := old.Spec, cur.Spec
	if o.Account != c.Account {
		add("immutable", "spec.account", "changed from %q to %q: account is immutable (remove the cluster and add a new one)", o.Account, c.Account)
	}
	if o.Region != c.Region {
		add("immutable", "spec.region", "changed from %q to %q: region is immutable (remove the cluster and add a new one)", o.Region, c.Region)
	}
	if o.VPCCIDR != c.VPCCIDR {
		add("immutable", "spec.vpcCidr", "changed from %q to %q: vpcCidr is immutable", o.VPCCIDR, c.VPCCIDR)
	}
	if o.AvailabilityZones != c.AvailabilityZones {
		add("immutable", "spec.availabilityZones", "changed from %d to %d: availabilityZones is immutable", o.AvailabilityZones, c.AvailabilityZones)
	}
	if o.NATMode != c.NATMode && !(o.NATMode == workloadcluster.NATSingle && c.NATMode == workloadcluster.NATPerAZ) {
		add("nat-transition", "spec.natMode", "changed from %q to %q: natMode may only change from %s to %s", o.NATMode, c.NATMode, workloadcluster.NATSingle, workloadcluster.NATPerAZ)
	}
	if o.KubernetesVersion != c.KubernetesVersion && versions.IsSupportedKubernetes(c.KubernetesVersion) {
		if err := versions.CheckUpgrade(o.KubernetesVersion, c.KubernetesVersion); err != nil {
			add("upgrade", "spec.kubernetesVersion", "%v (use fleet cluster upgrade)", err)
		}
	}
	return out
}
