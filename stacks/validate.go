package stacks

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/crypto/ssh"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/publiccidr"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
)

var (
	dnsLabel   = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	regionRE   = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	instanceRE = regexp.MustCompile(`^[a-z][a-z0-9-]*\.[a-z0-9]+$`)
	// An IAM role or user ARN, with an optional path (EKS access entries
	// accept role paths, e.g. IAM Identity Center's
	// role/aws-reserved/sso.amazonaws.com/<region>/AWSReservedSSO_...).
	principalRE = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:(role|user)/([\x21-\x2e\x30-\x7e]+/)*[A-Za-z0-9+=,.@_-]{1,64}$`)
	hubNameRE   = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	// Tag keys and values: letters, digits, spaces and _ . : / = + - @
	// (the set IAM, KMS and Secrets Manager accept).
	tagCharsRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$`)
	branchRE   = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)
	// The program appends "-" and 8 hex characters (sealingkeys.SuffixBytes):
	// the name must leave room for them within Secrets Manager's 512.
	secretNameRE = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z0-9/_+=.@-]{1,%d}$`, hubiam.MaxSealingSecretNameLength))
)

// Limits of the settings.
const (
	MinAvailabilityZones = 2
	MaxAvailabilityZones = 3
	MinVPCPrefix         = 16
	MaxVPCPrefix         = 20
	MaxNodes             = 100
	MinRecoveryWindow    = 7
	MaxRecoveryWindow    = 30
	// Flux controller workers: upstream's default (4) is the floor; above
	// 200 the controllers' API client rate limits, not workers, bound them.
	MinFluxConcurrency = 4
	MaxFluxConcurrency = 200
	MaxSealingKeyIDLen = 32
	// MaxTags is AWS's limit of tags per resource, the program's own
	// (ProgramTagKeys) included.
	MaxTags            = 50
	MaxTagKeyLen       = 128
	MaxTagValueLen     = 256
	MaxPrincipalARNLen = 2048
)

// Tag keys the program sets itself on every resource (Name only on some);
// a stack may not set them.
const (
	HubTagKey   = "eks-fleet/hub"
	StackTagKey = "eks-fleet/stack"
	NameTagKey  = "Name"
)

// ProgramTagKeys are the tag keys the program adds to the stack's tags.
func ProgramTagKeys() []string { return []string{HubTagKey, StackTagKey, NameTagKey} }

// MaxUserTags is how many tags a stack may set.
func MaxUserTags() int { return MaxTags - len(ProgramTagKeys()) }

// LogRetentionDays are the retention values CloudWatch Logs accepts.
var LogRetentionDays = workloadcluster.LogRetentionDays

// Validate checks every setting and returns one error per problem, each an
// *Error naming the field, the bad value and what is allowed. An empty
// result means the stack can be deployed.
func Validate(c Config) []error {
	var v validator
	v.region(c.Region)
	v.hubName(c.HubName)
	v.vpcCIDR(c.VPCCIDR)
	if c.AvailabilityZones < MinAvailabilityZones || c.AvailabilityZones > MaxAvailabilityZones {
		v.add(AvailabilityZonesKey, strconv.Itoa(c.AvailabilityZones), fmt.Sprintf("%d or %d", MinAvailabilityZones, MaxAvailabilityZones))
	}
	if c.NATMode != workloadcluster.NATSingle && c.NATMode != workloadcluster.NATPerAZ {
		v.add(NATModeKey, c.NATMode, workloadcluster.NATSingle+", "+workloadcluster.NATPerAZ)
	}
	if !versions.IsSupportedKubernetes(c.KubernetesVersion) {
		v.add(KubernetesVersionKey, c.KubernetesVersion, strings.Join(versions.Kubernetes(), ", "))
	}
	v.nodes(c.Nodes)
	v.publicAccess(c.PublicAccessCIDRs)
	v.admins(c.AdminPrincipalARNs)
	v.git(c.Git)
	v.sealing(c)
	v.fluxConcurrency(c.FluxConcurrency)
	v.tags(c.Tags)
	if !slices.Contains(LogRetentionDays, c.LogRetentionDays) {
		days := make([]string, len(LogRetentionDays))
		for i, d := range LogRetentionDays {
			days[i] = strconv.Itoa(d)
		}
		v.add(LogRetentionDaysKey, strconv.Itoa(c.LogRetentionDays), "a CloudWatch Logs retention: one of "+strings.Join(days, ", "))
	}
	v.functionRegistry(c.FunctionRegistry)
	v.spokeRegions(c.Region, c.SpokeRegions)
	v.addonPins(c)
	v.addonWaves(c)
	v.spokeAccounts(c.SpokeAccounts)
	return v.errs
}

// eksbuildRE is the form of an EKS add-on version (DescribeAddonVersions).
var eksbuildRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$`)

// addonPins: pinned add-on versions name every spoke region and no other,
// only Kubernetes versions the fleet accepts (at least one per region), and
// for each of those every managed add-on the spokes run, in EKS's version
// form. A Kubernetes version left out of a region is one spokes there
// cannot be created at, as when EKS does not offer it there yet.
func (v *validator) addonPins(c Config) {
	if c.SpokeAddonVersions == nil {
		return
	}
	regions := c.SpokeRegionList()
	for _, r := range slices.Sorted(maps.Keys(c.SpokeAddonVersions)) {
		if !slices.Contains(regions, r) {
			v.add(SpokeAddonVersionsKey, r, "the spoke regions ("+strings.Join(regions, ", ")+"), each pinned")
		}
	}
	for _, r := range regions {
		byK8s, ok := c.SpokeAddonVersions[r]
		if !ok || len(byK8s) == 0 {
			v.add(SpokeAddonVersionsKey, r+": none", "add-on versions for every spoke region, for at least one of the Kubernetes versions "+strings.Join(versions.Kubernetes(), ", "))
			continue
		}
		for _, k8s := range slices.Sorted(maps.Keys(byK8s)) {
			if !slices.Contains(versions.Kubernetes(), k8s) {
				v.add(SpokeAddonVersionsKey, r+" "+k8s, "Kubernetes versions the fleet accepts: "+strings.Join(versions.Kubernetes(), ", "))
				continue
			}
			addons := byK8s[k8s]
			for _, a := range versions.EKSAddons() {
				switch ver, ok := addons[a]; {
				case !ok:
					v.add(SpokeAddonVersionsKey, r+" "+k8s+" "+a+": none", "a version of every managed add-on ("+strings.Join(versions.EKSAddons(), ", ")+") for each pinned Kubernetes version")
				case !eksbuildRE.MatchString(ver):
					v.add(SpokeAddonVersionsKey, r+" "+k8s+" "+a+": "+ver, "an EKS add-on version such as v1.20.4-eksbuild.1")
				}
			}
			for _, a := range slices.Sorted(maps.Keys(addons)) {
				if !slices.Contains(versions.EKSAddons(), a) {
					v.add(SpokeAddonVersionsKey, r+" "+k8s+" "+a, "the managed add-ons the spokes run: "+strings.Join(versions.EKSAddons(), ", "))
				}
			}
		}
	}
}

// addonWaves: a wave moves some spokes ahead of the pinned versions, so
// the pins are set; each wave has a unique DNS-label name, lists at least
// one cluster name, each cluster in one wave only, and pins at least one
// add-on version, each for a spoke region, an accepted Kubernetes version
// and a managed add-on, in EKS's version form. A wave need not pin every
// add-on, Kubernetes version or region: the rest stays at the pins.
func (v *validator) addonWaves(c Config) {
	if len(c.SpokeAddonWaves) == 0 {
		return
	}
	if c.SpokeAddonVersions == nil {
		v.add(SpokeAddonWavesKey, clusterinfo.FormatAddonWaves(c.SpokeAddonWaves),
			"waves with "+FullKey(SpokeAddonVersionsKey)+" set: a wave moves its clusters ahead of the pinned versions, and unpinned versions move every spoke at each up")
		return
	}
	regions := c.SpokeRegionList()
	names := map[string]bool{}
	inWave := map[string]string{}
	for i, w := range c.SpokeAddonWaves {
		at := fmt.Sprintf("wave %d", i+1)
		switch {
		case !dnsLabel.MatchString(w.Name) || len(w.Name) > 63:
			v.add(SpokeAddonWavesKey, at+" name: "+w.Name, "a DNS label (lowercase letters, digits, '-'), e.g. canary")
		case names[w.Name]:
			v.add(SpokeAddonWavesKey, at+" name: "+w.Name, "a name used by one wave only")
		default:
			at = "wave " + w.Name
		}
		names[w.Name] = true
		if len(w.Clusters) == 0 {
			v.add(SpokeAddonWavesKey, at+" clusters: none", "at least one cluster (a WorkloadCluster claim's name)")
		}
		for _, cl := range w.Clusters {
			switch prev, ok := inWave[cl]; {
			case !dnsLabel.MatchString(cl) || len(cl) > workloadcluster.MaxNameLength:
				v.add(SpokeAddonWavesKey, at+" cluster "+cl, fmt.Sprintf("a WorkloadCluster claim's name: a DNS label of at most %d characters", workloadcluster.MaxNameLength))
			case ok:
				v.add(SpokeAddonWavesKey, at+" cluster "+cl, "a cluster in one wave only (it is in "+prev+" too)")
			default:
				inWave[cl] = at
			}
		}
		pinned, before := 0, len(v.errs)
		for _, r := range slices.Sorted(maps.Keys(w.Versions)) {
			if !slices.Contains(regions, r) {
				v.add(SpokeAddonWavesKey, at+" "+r, "the spoke regions ("+strings.Join(regions, ", ")+")")
				continue
			}
			for _, k8s := range slices.Sorted(maps.Keys(w.Versions[r])) {
				if !slices.Contains(versions.Kubernetes(), k8s) {
					v.add(SpokeAddonWavesKey, at+" "+r+" "+k8s, "Kubernetes versions the fleet accepts: "+strings.Join(versions.Kubernetes(), ", "))
					continue
				}
				addons := w.Versions[r][k8s]
				for _, a := range slices.Sorted(maps.Keys(addons)) {
					switch ver := addons[a]; {
					case !slices.Contains(versions.EKSAddons(), a):
						v.add(SpokeAddonWavesKey, at+" "+r+" "+k8s+" "+a, "the managed add-ons the spokes run: "+strings.Join(versions.EKSAddons(), ", "))
					case !eksbuildRE.MatchString(ver):
						v.add(SpokeAddonWavesKey, at+" "+r+" "+k8s+" "+a+": "+ver, "an EKS add-on version such as v1.20.4-eksbuild.1")
					default:
						pinned++
					}
				}
			}
		}
		if pinned == 0 && len(v.errs) == before {
			v.add(SpokeAddonWavesKey, at+" versions: none", "at least one add-on version the wave moves its clusters to, e.g. {\"eu-west-1\": {\"1.35\": {\"vpc-cni\": \"v1.20.5-eksbuild.1\"}}}")
		}
	}
}

// spokeRegions: AWS regions of the hub's partition (one account's roles
// and boundary serve them all), each once.
func (v *validator) spokeRegions(hub string, regions []string) {
	seen := map[string]bool{}
	for _, r := range regions {
		switch {
		case !regionRE.MatchString(r):
			v.add(SpokeRegionsKey, r, "AWS regions such as eu-west-1")
		case hubiam.PartitionOf(r) != hubiam.PartitionOf(hub):
			v.add(SpokeRegionsKey, r, "regions of the hub's partition "+hubiam.PartitionOf(hub))
		case seen[r]:
			v.add(SpokeRegionsKey, r, "each region once")
		}
		seen[r] = true
	}
}

type validator struct{ errs []error }

func (v *validator) add(key, value, allowed string) {
	v.errs = append(v.errs, &Error{Field: FullKey(key), Value: value, Allowed: allowed})
}

func (v *validator) region(r string) {
	if !regionRE.MatchString(r) {
		v.add(RegionKey, r, "an AWS region such as eu-west-1 (set it with: pulumi config set aws:region <region>)")
	} else if err := hubiam.CheckPartition(r, ""); err != nil {
		v.add(RegionKey, r, "a region of partition "+strings.Join(hubiam.SupportedPartitions, " or ")+": "+err.Error())
	}
}

func (v *validator) hubName(n string) {
	// No '-': no hub's names are then a prefix of another hub's, and
	// <hub>-<spoke> never equals another hub's name. The length bound keeps
	// every derived name (roles, policies, node group prefix, log group)
	// within AWS's limits.
	if len(n) > workloadcluster.MaxHubNameLength || !hubNameRE.MatchString(n) {
		v.add(HubNameKey, n, fmt.Sprintf("1 to %d lower-case letters and digits, starting with a letter (no '-'), e.g. mgmt or prod", workloadcluster.MaxHubNameLength))
	}
}

func (v *validator) vpcCIDR(s string) {
	allowed := fmt.Sprintf("a private IPv4 CIDR (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16) or shared address space (100.64.0.0/10, which EKS supports) with prefix /%d to /%d, e.g. 10.0.0.0/16", MinVPCPrefix, MaxVPCPrefix)
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() || p.Masked() != p || !(p.Addr().IsPrivate() || cgnat.Contains(p.Addr())) || p.Bits() < MinVPCPrefix || p.Bits() > MaxVPCPrefix {
		v.add(VPCCIDRKey, s, allowed)
	}
}

func (v *validator) nodes(n workloadcluster.Nodes) {
	if len(n.InstanceTypes) == 0 {
		v.add(NodeInstanceTypesKey, "[]", "at least one EC2 instance type, e.g. [m6i.large]")
	}
	arch := ""
	for _, t := range n.InstanceTypes {
		if !instanceRE.MatchString(t) {
			v.add(NodeInstanceTypesKey, t, "EC2 instance types such as m6i.large")
			continue
		}
		if acc := Accelerator(t); acc != "" {
			v.add(NodeInstanceTypesKey, t, "a "+acc+" instance type: the hub's system nodes run the AL2023 standard AMI, which has no "+acc+" drivers; use general-purpose, compute- or memory-optimised types (e.g. m7i.large, c7i.large, r7i.large, m7g.large)")
			continue
		}
		a := Architecture(t)
		if arch != "" && a != arch {
			v.add(NodeInstanceTypesKey, strings.Join(n.InstanceTypes, ","), "instance types of one CPU architecture (one AL2023 AMI type per node group)")
			break
		}
		arch = a
	}
	if n.Min < 1 || n.Min > MaxNodes {
		v.add(NodeMinSizeKey, strconv.Itoa(n.Min), fmt.Sprintf("1 to %d", MaxNodes))
	}
	if n.Max < 1 || n.Max > MaxNodes || n.Max < n.Min {
		v.add(NodeMaxSizeKey, strconv.Itoa(n.Max), fmt.Sprintf("%d to %d (at least %s)", max(n.Min, 1), MaxNodes, NodeMinSizeKey))
	}
	if n.Desired < n.Min || n.Desired > n.Max {
		v.add(NodeDesiredSizeKey, strconv.Itoa(n.Desired), fmt.Sprintf("between %s (%d) and %s (%d)", NodeMinSizeKey, n.Min, NodeMaxSizeKey, n.Max))
	}
}

// Architecture is the CPU architecture of an EC2 instance type: arm64 for
// Graviton families (a "g" right after the generation digit: m7g, c6gn,
// t4g) and Graviton1 (a1), x86_64 otherwise.
func Architecture(instanceType string) string {
	family, _, _ := strings.Cut(instanceType, ".")
	if family == "a1" {
		return "arm64"
	}
	for i := 0; i < len(family)-1; i++ {
		if family[i] >= '0' && family[i] <= '9' {
			if family[i+1] == 'g' {
				return "arm64"
			}
			break
		}
	}
	return "x86_64"
}

var acceleratedFamily = regexp.MustCompile(`^(p|g|gr|inf|trn|dl|vt|f)[0-9]`)

// Accelerator names the accelerator of an EC2 instance type whose AMI the
// standard AL2023 AMI types do not serve ("" for none): NVIDIA GPUs (p*,
// g*, gr*), AWS Inferentia and Trainium (inf*, trn*: the Neuron AMI), and
// Gaudi, video and FPGA accelerators (dl*, vt*, f*).
func Accelerator(instanceType string) string {
	family, _, _ := strings.Cut(instanceType, ".")
	m := acceleratedFamily.FindStringSubmatch(family)
	if m == nil {
		return ""
	}
	switch m[1] {
	case "p", "g", "gr":
		return "GPU (NVIDIA)"
	case "inf", "trn":
		return "Inferentia/Trainium (Neuron)"
	}
	return "accelerator (" + m[1] + ")"
}

// AMIType is the AL2023 managed node group AMI type for the instance types.
func AMIType(instanceTypes []string) string {
	if len(instanceTypes) > 0 && Architecture(instanceTypes[0]) == "arm64" {
		return "AL2023_ARM_64_STANDARD"
	}
	return "AL2023_x86_64_STANDARD"
}

func (v *validator) publicAccess(cidrs []string) {
	if len(cidrs) == 0 {
		v.add(PublicAccessCIDRsKey, "[]", "at least one IPv4 CIDR allowed to reach the public API endpoint (where pulumi and admins run), e.g. [203.0.113.0/24]")
		return
	}
	// The fleet's one check: at most 40 (EKS's limit), canonical IPv4,
	// none and no union covering the internet.
	if err := publiccidr.Validate(FullKey(PublicAccessCIDRsKey), cidrs); err != nil {
		v.add(PublicAccessCIDRsKey, strings.Join(cidrs, ","), fmt.Sprintf("at most %d restricted IPv4 CIDRs (%v)", publiccidr.MaxEKS, err))
	}
}

func (v *validator) admins(arns []string) {
	seen := map[string]bool{}
	for _, a := range arns {
		if len(a) > MaxPrincipalARNLen || !principalRE.MatchString(a) {
			v.add(AdminPrincipalARNsKey, a, "IAM role or user ARNs, optionally with a path, e.g. arn:aws:iam::111122223333:role/platform-admin or arn:aws:iam::111122223333:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Admin_0123456789abcdef")
		}
		if seen[a] {
			v.add(AdminPrincipalARNsKey, a, "each principal once")
		}
		seen[a] = true
	}
}

func (v *validator) git(g Git) {
	u, err := url.Parse(g.URL)
	if err != nil || u.Scheme != "ssh" || u.Host == "" || u.User == nil || u.User.Username() == "" || strings.Trim(u.Path, "/") == "" {
		v.add(GitURLKey, g.URL, "an SSH URL such as ssh://git@github.com/org/repo.git (Flux needs the ssh:// form, not git@host:org/repo)")
	}
	if g.Branch == "" || !branchRE.MatchString(g.Branch) || strings.HasPrefix(g.Branch, "-") || strings.Contains(g.Branch, "..") {
		v.add(GitBranchKey, g.Branch, "a Git branch name such as main")
	}
	v.gitPath(g.Path)
	v.knownHosts(g.KnownHosts, u)
}

func (v *validator) gitPath(p string) {
	allowed := "a path ./<dir>/clusters/<name> inside the repository, e.g. " + defaultGitPath
	if !strings.HasPrefix(p, "./") || strings.Contains(p, "..") || strings.HasSuffix(p, "/") {
		v.add(GitPathKey, p, allowed)
		return
	}
	parts := strings.Split(strings.TrimPrefix(p, "./"), "/")
	if len(parts) < 3 || parts[len(parts)-2] != "clusters" || slices.Contains(parts, "") || slices.Contains(parts, ".") {
		v.add(GitPathKey, p, allowed)
	}
}

func (v *validator) knownHosts(s string, u *url.URL) {
	const allowed = "known_hosts lines for the Git host, e.g. the output of ssh-keyscan <host>"
	if s == secureKnownHosts {
		return // encrypted in the stack file: checked when the program runs
	}
	if strings.TrimSpace(s) == "" {
		v.add(GitKnownHostsKey, s, allowed)
		return
	}
	want := ""
	if u != nil && u.Hostname() != "" {
		want = u.Hostname()
		if port := u.Port(); port != "" && port != "22" {
			want = "[" + want + "]:" + port
		}
	}
	rest := []byte(s)
	found, hashed := false, false
	for {
		_, hosts, _, _, r, err := ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			if !found && !hashed && want != "" {
				v.add(GitKnownHostsKey, firstLine(s), allowed+": no line names "+want)
			}
			return
		}
		if err != nil {
			v.add(GitKnownHostsKey, firstLine(s), allowed+": "+err.Error())
			return
		}
		for _, h := range hosts {
			if h == want {
				found = true
			}
			if strings.HasPrefix(h, "|1|") {
				hashed = true
			}
		}
		rest = r
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(l) > 60 {
		l = l[:60] + "..."
	}
	return l
}

func (v *validator) fluxConcurrency(n int) {
	if n < MinFluxConcurrency || n > MaxFluxConcurrency {
		v.add(FluxConcurrencyKey, strconv.Itoa(n), fmt.Sprintf("%d to %d workers per Flux controller (default %d)", MinFluxConcurrency, MaxFluxConcurrency, DefaultFluxConcurrency))
	}
}

func (v *validator) sealing(c Config) {
	if c.Sealing.SecretName != "" && !secretNameRE.MatchString(c.Sealing.SecretName) {
		v.add(SealingSecretNameKey, c.Sealing.SecretName, fmt.Sprintf("a Secrets Manager name: letters, digits and /_+=.@-, at most %d characters (the program appends a 9-character suffix; AWS allows 512)", hubiam.MaxSealingSecretNameLength))
	}
	if w := c.Sealing.RecoveryWindowDays; w != 0 && (w < MinRecoveryWindow || w > MaxRecoveryWindow) {
		v.add(SealingRecoveryWindowKey, strconv.Itoa(w), fmt.Sprintf("0 (delete at once) or %d to %d days", MinRecoveryWindow, MaxRecoveryWindow))
	}
	if len(c.Sealing.KeyIDs) == 0 {
		v.add(SealingKeyIDsKey, "[]", "at least one key id; the last is the active key")
	}
	seen := map[string]bool{}
	for _, id := range c.Sealing.KeyIDs {
		if len(id) > MaxSealingKeyIDLen || !dnsLabel.MatchString(id) {
			v.add(SealingKeyIDsKey, id, fmt.Sprintf("DNS labels of at most %d characters, e.g. key-2026-01", MaxSealingKeyIDLen))
		}
		if seen[id] {
			v.add(SealingKeyIDsKey, id, "each key id once")
		}
		seen[id] = true
	}
}

func (v *validator) tags(t map[string]string) {
	if len(t) > MaxUserTags() {
		v.add(TagsKey, strconv.Itoa(len(t))+" tags", fmt.Sprintf("at most %d tags (AWS allows %d per resource and the program adds %s)", MaxUserTags(), MaxTags, strings.Join(ProgramTagKeys(), ", ")))
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	const chars = "letters, digits, spaces and _ . : / = + - @"
	for _, k := range keys {
		val := t[k]
		switch {
		case k == "" || utf8.RuneCountInString(k) > MaxTagKeyLen || !tagCharsRE.MatchString(k):
			v.add(TagsKey, k, fmt.Sprintf("tag keys of 1 to %d characters: %s", MaxTagKeyLen, chars))
		case fence.CheckUserTagKey(k) != nil:
			v.add(TagsKey, k, "tag keys under none of the reserved prefixes "+strings.Join(fence.ReservedTagPrefixList(), ", ")+
				" (any case; AWS, the fleet and the spokes' controllers write them and the spokes' permissions fence reads them)")
		case slices.Contains(ProgramTagKeys(), k):
			v.add(TagsKey, k, "tag keys other than "+strings.Join(ProgramTagKeys(), ", ")+" (set by the program)")
		case utf8.RuneCountInString(val) > MaxTagValueLen || !tagCharsRE.MatchString(val):
			v.add(TagsKey, k+"="+val, fmt.Sprintf("tag values of at most %d characters: %s", MaxTagValueLen, chars))
		}
	}
}

// cgnat is the shared address space EKS accepts for VPCs besides RFC 1918.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// functionRegistry: an OCI repository with an explicit registry host and
// no tag or digest (the Function manifest appends
// /function-workload-cluster:<version>).
func (v *validator) functionRegistry(r string) {
	last := r[strings.LastIndex(r, "/")+1:]
	_, err := name.NewRepository(r+"/"+versions.WorkloadClusterFunctionPackage, name.StrictValidation)
	if err != nil || r == "" || strings.ContainsAny(r, "@ ") || strings.Contains(r, "://") || strings.Contains(last, ":") && strings.Contains(r, "/") {
		v.add(FunctionRegistryKey, r, "an OCI repository with a registry host, lowercase, without tag or digest, e.g. "+versions.FunctionRegistry+" (where the release workflow publishes)")
	}
}
