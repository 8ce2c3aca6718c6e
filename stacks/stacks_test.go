package stacks

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

const knownHosts = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"

func valid() Values {
	return Values{
		"aws:region":                   "eu-west-1",
		"eks-fleet:gitUrl":             "ssh://git@github.com/example-org/eks-fleet.git",
		"eks-fleet:gitKnownHosts":      knownHosts,
		"eks-fleet:publicAccessCidrs":  `["203.0.113.0/24"]`,
		"eks-fleet:adminPrincipalArns": `["arn:aws:iam::111122223333:role/platform-admin"]`,
	}
}

// pins are valid pinned add-on versions for regions at the default
// Kubernetes version.
func pins(regions ...string) string {
	a := clusterinfo.AddonVersions{}
	for _, r := range regions {
		a[r] = map[string]map[string]string{versions.DefaultKubernetes: {}}
		for _, addon := range versions.EKSAddons() {
			a[r][versions.DefaultKubernetes][addon] = "v1.2.3-eksbuild.4"
		}
	}
	return clusterinfo.FormatAddonVersions(a)
}

func TestDefaultsWithRequiredSettingsAreValid(t *testing.T) {
	c, errs := FromValues(valid())
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	if c.HubName != "mgmt" || c.KubernetesVersion != versions.DefaultKubernetes || c.NATMode != "single" || c.AvailabilityZones != 3 {
		t.Errorf("defaults not applied: %+v", c)
	}
	if got := c.SealingSecretName(); got != "mgmt/sealed-secrets-key" {
		t.Errorf("default sealing secret name %q", got)
	}
	if got := c.SystemPath(); got != "manifests/gitops-system" {
		t.Errorf("SystemPath %q", got)
	}
	if c.ActiveKeyID() != "key-1" || c.PreviousKeyID() != "" {
		t.Errorf("key ids: active %q previous %q", c.ActiveKeyID(), c.PreviousKeyID())
	}
}

func TestEachBadSettingIsNamed(t *testing.T) {
	cases := []struct {
		key, value string
		want       []string // substrings of the one error
	}{
		{"aws:region", "Europe", []string{"aws:region", `"Europe"`, "eu-west-1"}},
		{"eks-fleet:nodeInstanceTypes", `["p5.48xlarge"]`, []string{"eks-fleet:nodeInstanceTypes", "p5.48xlarge", "GPU (NVIDIA)", "m7i.large"}},
		{"eks-fleet:nodeInstanceTypes", `["g5g.xlarge"]`, []string{"g5g.xlarge", "GPU (NVIDIA)"}},
		{"eks-fleet:nodeInstanceTypes", `["inf2.xlarge"]`, []string{"inf2.xlarge", "Neuron"}},
		{"eks-fleet:nodeInstanceTypes", `["trn1.2xlarge"]`, []string{"trn1.2xlarge", "Neuron"}},
		{"aws:region", "cn-north-1", []string{"aws:region", `"cn-north-1"`, "aws-cn", "aws, aws-us-gov"}},
		{"aws:region", "us-iso-east-1", []string{"aws:region", "aws-iso"}},
		{"eks-fleet:hubName", "this-hub-name-is-far-too-long", []string{"eks-fleet:hubName", "1 to 20"}},
		{"eks-fleet:hubName", "Hub", []string{"eks-fleet:hubName", `"Hub"`, "lower-case letters and digits"}},
		{"eks-fleet:hubName", "mgmt-eu", []string{"eks-fleet:hubName", `"mgmt-eu"`, "no '-'"}},
		{"eks-fleet:hubName", "abcdefghijklmnopqrstu", []string{"eks-fleet:hubName", "1 to 20"}},
		{"eks-fleet:vpcCidr", "10.0.0.0/8", []string{"eks-fleet:vpcCidr", "/16 to /20"}},
		{"eks-fleet:vpcCidr", "8.8.0.0/16", []string{"eks-fleet:vpcCidr", "private IPv4"}},
		{"eks-fleet:vpcCidr", "100.128.0.0/16", []string{"eks-fleet:vpcCidr", "100.64.0.0/10"}},
		{"eks-fleet:vpcCidr", "10.0.0.1/16", []string{"eks-fleet:vpcCidr", `"10.0.0.1/16"`}},
		{"eks-fleet:availabilityZones", "1", []string{"eks-fleet:availabilityZones", `"1"`, "2 or 3"}},
		{"eks-fleet:availabilityZones", "three", []string{"eks-fleet:availabilityZones", `"three"`, "an integer"}},
		{"eks-fleet:natMode", "per-zone", []string{"eks-fleet:natMode", `"per-zone"`, "single, per-az"}},
		{"eks-fleet:kubernetesVersion", "1.33", []string{"eks-fleet:kubernetesVersion", `"1.33"`, strings.Join(versions.Kubernetes(), ", ")}},
		{"eks-fleet:nodeInstanceTypes", `[]`, []string{"eks-fleet:nodeInstanceTypes", "at least one"}},
		{"eks-fleet:nodeInstanceTypes", `["m6i.large","m7g.large"]`, []string{"eks-fleet:nodeInstanceTypes", "one CPU architecture"}},
		{"eks-fleet:nodeInstanceTypes", `"m6i.large"`, []string{"eks-fleet:nodeInstanceTypes", "a list of strings"}},
		{"eks-fleet:nodeMinSize", "0", []string{"eks-fleet:nodeMinSize", `"0"`, "1 to 100"}},
		{"eks-fleet:nodeDesiredSize", "9", []string{"eks-fleet:nodeDesiredSize", `"9"`, "between"}},
		{"eks-fleet:nodeMaxSize", "101", []string{"eks-fleet:nodeMaxSize", `"101"`, "2 to 100"}},
		{"eks-fleet:publicAccessCidrs", `["0.0.0.0/0"]`, []string{"eks-fleet:publicAccessCidrs", "restricted", "wider than /8"}},
		{"eks-fleet:publicAccessCidrs", `["203.0.113.7/24"]`, []string{"eks-fleet:publicAccessCidrs", "canonical"}},
		{"eks-fleet:publicAccessCidrs", `[]`, []string{"eks-fleet:publicAccessCidrs", "at least one"}},
		{"eks-fleet:adminPrincipalArns", `["arn:aws:iam::111122223333:role/a//b"]`, []string{"eks-fleet:adminPrincipalArns", "optionally with a path"}},
		{"eks-fleet:adminPrincipalArns", `["arn:aws:iam::111122223333:role/sso/"]`, []string{"eks-fleet:adminPrincipalArns", "optionally with a path"}},
		{"eks-fleet:publicAccessCidrs", `["0.0.0.0/1","128.0.0.0/1"]`, []string{"eks-fleet:publicAccessCidrs", "restricted"}},
		{"eks-fleet:publicAccessCidrs", fortyOneCIDRs(), []string{"eks-fleet:publicAccessCidrs", "at most 40"}},
		{"eks-fleet:tags", `{"team":"berlin (de)"}`, []string{"eks-fleet:tags", "letters, digits, spaces"}},
		{"eks-fleet:tags", `{"team#":"x"}`, []string{"eks-fleet:tags", "tag keys of 1 to 128"}},
		{"eks-fleet:tags", `{"eks-fleet/hub":"other"}`, []string{"eks-fleet:tags", "set by the program"}},
		{"eks-fleet:tags", `{"Name":"x"}`, []string{"eks-fleet:tags", "set by the program"}},
		{"eks-fleet:tags", manyTags(48), []string{"eks-fleet:tags", "at most 47 tags"}},
		{"eks-fleet:tags", `{"k":"` + strings.Repeat("v", 257) + `"}`, []string{"eks-fleet:tags", "at most 256"}},
		{"eks-fleet:logRetentionDays", "91", []string{"eks-fleet:logRetentionDays", `"91"`, "90", "3653"}},
		{"eks-fleet:functionRegistry", "", []string{"eks-fleet:functionRegistry", "registry host", versions.FunctionRegistry}},
		{"eks-fleet:functionRegistry", "gitops-fleet/eks-fleet", []string{"eks-fleet:functionRegistry", "registry host"}},
		{"eks-fleet:functionRegistry", "ghcr.io/Org/eks-fleet", []string{"eks-fleet:functionRegistry", "lowercase"}},
		{"eks-fleet:functionRegistry", "ghcr.io/org/eks-fleet:v0.1.0", []string{"eks-fleet:functionRegistry", "without tag or digest"}},
		{"eks-fleet:functionRegistry", "ghcr.io/org/eks-fleet@sha256:0123", []string{"eks-fleet:functionRegistry", "without tag or digest"}},
		{"eks-fleet:functionRegistry", "https://ghcr.io/org/eks-fleet", []string{"eks-fleet:functionRegistry"}},
		{"eks-fleet:adminPrincipalArns", `["platform-admin"]`, []string{"eks-fleet:adminPrincipalArns", `"platform-admin"`}},
		{"eks-fleet:gitUrl", "https://github.com/org/repo.git", []string{"eks-fleet:gitUrl", "ssh://"}},
		{"eks-fleet:gitUrl", "git@github.com:org/repo.git", []string{"eks-fleet:gitUrl", "ssh://"}},
		{"eks-fleet:gitBranch", "", []string{"eks-fleet:gitBranch"}},
		{"eks-fleet:gitBranch", "a..b", []string{"eks-fleet:gitBranch", `"a..b"`}},
		{"eks-fleet:gitPath", "manifests/gitops-system/clusters/mgmt", []string{"eks-fleet:gitPath", "./<dir>/clusters/<name>"}},
		{"eks-fleet:gitPath", "./manifests/gitops-system/mgmt", []string{"eks-fleet:gitPath"}},
		{"eks-fleet:gitPath", "./../clusters/mgmt", []string{"eks-fleet:gitPath"}},
		{"eks-fleet:gitKnownHosts", "", []string{"eks-fleet:gitKnownHosts"}},
		{"eks-fleet:gitKnownHosts", "gitlab.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl", []string{"eks-fleet:gitKnownHosts", "no line names github.com"}},
		{"eks-fleet:gitKnownHosts", "github.com not-a-key", []string{"eks-fleet:gitKnownHosts"}},
		{"eks-fleet:sealingSecretName", "bad name!", []string{"eks-fleet:sealingSecretName", `"bad name!"`}},
		{"eks-fleet:sealingSecretName", strings.Repeat("s", 504), []string{"eks-fleet:sealingSecretName", "at most 503 characters", "AWS allows 512"}},
		{"eks-fleet:sealingSecretRecoveryWindowDays", "31", []string{"eks-fleet:sealingSecretRecoveryWindowDays", `"31"`, "0 (delete at once) or 7 to 30"}},
		{"eks-fleet:fluxConcurrency", "3", []string{"eks-fleet:fluxConcurrency", `"3"`, "4 to 200 workers per Flux controller"}},
		{"eks-fleet:fluxConcurrency", "201", []string{"eks-fleet:fluxConcurrency", `"201"`, "4 to 200"}},
		{"eks-fleet:fluxConcurrency", "many", []string{"eks-fleet:fluxConcurrency", "4 to 200"}},
		{"eks-fleet:sealingKeyIds", `[]`, []string{"eks-fleet:sealingKeyIds", "at least one"}},
		{"eks-fleet:sealingKeyIds", `["key-1","key-1"]`, []string{"eks-fleet:sealingKeyIds", "each key id once"}},
		{"eks-fleet:sealingKeyIds", `["Key_1"]`, []string{"eks-fleet:sealingKeyIds", `"Key_1"`}},
		{"eks-fleet:tags", `{"aws:owner":"x"}`, []string{"eks-fleet:tags", "reserved"}},
		// A hub resource tagged with a key the spokes' boundary trusts,
		// valued as a spoke's cluster, would be that spoke's to change.
		{"eks-fleet:tags", `{"elbv2.k8s.aws/cluster":"mgmt-a"}`, []string{"eks-fleet:tags", `"elbv2.k8s.aws/cluster"`, "elbv2.k8s.aws/", "reserved"}},
		{"eks-fleet:tags", `{"EKS:cluster-name":"mgmt-a"}`, []string{"eks-fleet:tags", `"EKS:cluster-name"`, "eks:", "any case"}},
		{"eks-fleet:tags", `{"cluster.k8s.amazonaws.com/name":"mgmt-a"}`, []string{"eks-fleet:tags", "cluster.k8s.amazonaws.com/"}},
		{"eks-fleet:tags", `["x"]`, []string{"eks-fleet:tags", "a map of strings"}},
		{"eks-fleet:natmode", "single", []string{"eks-fleet:natmode", "a known setting"}},
		// T4-M3: pinned add-on versions, as the stack output shows them.
		{"eks-fleet:spokeAddonVersions", `["v1"]`, []string{"eks-fleet:spokeAddonVersions", "a map of region to Kubernetes version to add-on to version"}},
		{"eks-fleet:spokeAddonVersions", pins("eu-west-1", "us-east-1"), []string{"eks-fleet:spokeAddonVersions", `"us-east-1"`, "the spoke regions (eu-west-1)"}},
		{"eks-fleet:spokeAddonVersions", `{"eu-west-1":{}}`, []string{"eks-fleet:spokeAddonVersions", "eu-west-1: none", "every spoke region"}},
		{"eks-fleet:spokeAddonVersions", strings.Replace(pins("eu-west-1"), versions.DefaultKubernetes, "1.20", 1), []string{"eks-fleet:spokeAddonVersions", "eu-west-1 1.20", "Kubernetes versions the fleet accepts"}},
		{"eks-fleet:spokeAddonVersions", strings.Replace(pins("eu-west-1"), `"coredns":"v1.2.3-eksbuild.4",`, "", 1), []string{"eks-fleet:spokeAddonVersions", "coredns: none", "every managed add-on"}},
		{"eks-fleet:spokeAddonVersions", strings.Replace(pins("eu-west-1"), `"v1.2.3-eksbuild.4"`, `"1.2.3"`, 1), []string{"eks-fleet:spokeAddonVersions", "1.2.3", "v1.20.4-eksbuild.1"}},
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			raw := valid()
			raw[tc.key] = tc.value
			_, errs := FromValues(raw)
			if len(errs) != 1 {
				t.Fatalf("want exactly one error, got %d: %v", len(errs), errs)
			}
			var fe *Error
			if !errors.As(errs[0], &fe) {
				t.Fatalf("error %v is not a *stacks.Error", errs[0])
			}
			if fe.Field != tc.key {
				t.Errorf("field %q, want %q", fe.Field, tc.key)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("%q does not contain %q", errs[0], w)
				}
			}
		})
	}
}

func TestAllErrorsAtOnce(t *testing.T) {
	_, errs := FromValues(Values{"eks-fleet:natMode": "x", "eks-fleet:availabilityZones": "9"})
	fields := map[string]bool{}
	for _, e := range errs {
		var fe *Error
		if errors.As(e, &fe) {
			fields[fe.Field] = true
		}
	}
	for _, f := range []string{"aws:region", "eks-fleet:natMode", "eks-fleet:availabilityZones", "eks-fleet:gitUrl", "eks-fleet:gitKnownHosts", "eks-fleet:publicAccessCidrs"} {
		if !fields[f] {
			t.Errorf("no error for %s in %v", f, errs)
		}
	}
	err := Join("mgmt", errs)
	if err == nil || !strings.Contains(err.Error(), "nothing was created") || strings.Count(err.Error(), "\n  - ") != len(errs) {
		t.Errorf("joined error: %v", err)
	}
	if Join("mgmt", nil) != nil {
		t.Error("Join of no errors is not nil")
	}
}

func TestExampleStacksAreValid(t *testing.T) {
	files, _ := filepath.Glob("../Pulumi.*.yaml")
	if len(files) < 2 {
		t.Fatalf("want at least two example stacks, found %v", files)
	}
	kinds := map[string]int{}
	for _, f := range files {
		raw, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		kinds[KindOf(raw)]++
		if KindOf(raw) == KindSpokeAccount {
			c, errs := AccountFromValues(raw)
			if len(errs) > 0 {
				t.Errorf("%s: %v", f, errs)
			}
			if c.Region == "" || c.HubAccountID == "" || c.ExternalID == "" {
				t.Errorf("%s: incomplete: %+v", f, c)
			}
			continue
		}
		c, errs := ParseFile(f)
		if len(errs) > 0 {
			t.Errorf("%s: %v", f, errs)
		}
		if c.Region == "" || c.Git.URL == "" {
			t.Errorf("%s: incomplete: %+v", f, c)
		}
	}
	if kinds[KindHub] < 2 || kinds[KindSpokeAccount] < 1 {
		t.Errorf("example stacks by kind %v: want at least two hubs and one spoke account", kinds)
	}
}

func TestParseFileReportsBadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "Pulumi.bad.yaml")
	if err := os.WriteFile(p, []byte("config:\n  aws:region: eu-west-1\n  eks-fleet:natMode: triple\n  eks-fleet:gitKnownHosts:\n    secure: AAABAK==\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs := ParseFile(p)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, `eks-fleet:natMode: invalid value "triple"`) {
		t.Errorf("natMode not reported: %s", all)
	}
	if strings.Contains(all, "gitKnownHosts") {
		t.Errorf("an encrypted known_hosts must not be reported: %s", all)
	}
	if _, errs := ParseFile(filepath.Join(dir, "missing.yaml")); len(errs) != 1 {
		t.Errorf("missing file: %v", errs)
	}
}

// Pulumi.yaml declares every setting, and each declared default is the
// one the Go code applies (the engine injects declared defaults).
func TestProjectFileMatchesDefaults(t *testing.T) {
	b, err := os.ReadFile("../Pulumi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var proj struct {
		Name   string `json:"name"`
		Config map[string]struct {
			Type        string `json:"type"`
			Default     any    `json:"default"`
			Description string `json:"description"`
		} `json:"config"`
	}
	if err := yaml.Unmarshal(b, &proj); err != nil {
		t.Fatal(err)
	}
	if proj.Name != Project {
		t.Errorf("project %q, want %q", proj.Name, Project)
	}
	var declared []string
	for k, v := range proj.Config {
		declared = append(declared, k)
		if v.Type == "" || v.Description == "" {
			t.Errorf("%s: type and description required", k)
		}
	}
	var want []string
	for _, k := range Keys() {
		if k != RegionKey {
			want = append(want, k)
		}
	}
	slices.Sort(declared)
	slices.Sort(want)
	if !slices.Equal(declared, want) {
		t.Fatalf("Pulumi.yaml declares %v, program reads %v", declared, want)
	}
	// Apply only the declared defaults, as the engine would, and compare
	// with the Go defaults.
	raw := valid()
	delete(raw, "eks-fleet:adminPrincipalArns")
	withEngine := Values{}
	for k, v := range raw {
		withEngine[k] = v
	}
	declaredDefaults := Values{}
	for k, v := range proj.Config {
		if v.Default == nil {
			t.Errorf("%s: no default: the engine would refuse every stack that does not set it, spoke-account stacks included", k)
			continue
		}
		if s, ok := v.Default.(string); ok {
			declaredDefaults[FullKey(k)] = s
			continue
		}
		j, _ := yamlToJSON(v.Default)
		declaredDefaults[FullKey(k)] = j
	}
	for k, v := range declaredDefaults {
		if _, set := withEngine[k]; !set {
			withEngine[k] = v
		}
	}
	// DefaultValues, which tells a setting left at its default from one a
	// stack of the other kind must not set, is Pulumi.yaml's defaults.
	defaults := DefaultValues()
	for _, k := range slices.Sorted(maps.Keys(defaults)) {
		if !sameValue(defaults[k], declaredDefaults[k]) {
			t.Errorf("%s: DefaultValues %q, Pulumi.yaml %q", k, defaults[k], declaredDefaults[k])
		}
	}
	if len(defaults) != len(declaredDefaults) {
		t.Errorf("DefaultValues has %d settings, Pulumi.yaml %d", len(defaults), len(declaredDefaults))
	}
	a, errsA := FromValues(raw)
	b2, errsB := FromValues(withEngine)
	if len(errsA)+len(errsB) > 0 {
		t.Fatalf("errors: %v %v", errsA, errsB)
	}
	// An empty list or map is the setting unset.
	if d := cmp.Diff(a, b2, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("Pulumi.yaml defaults differ from Go defaults (-go +engine):\n%s", d)
	}
}

func yamlToJSON(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	j, err := yaml.YAMLToJSON(b)
	return strings.TrimSpace(string(j)), err
}

func TestArchitectureAndAMIType(t *testing.T) {
	for it, want := range map[string]string{
		"m6i.large": "x86_64", "m7g.xlarge": "arm64", "c6gn.large": "arm64", "t4g.small": "arm64",
		"t3.medium": "x86_64", "r7a.large": "x86_64", "g5.xlarge": "x86_64",
		"a1.large": "arm64",
	} {
		if got := Architecture(it); got != want {
			t.Errorf("Architecture(%s) = %s, want %s", it, got, want)
		}
	}
	if AMIType([]string{"m7g.large"}) != "AL2023_ARM_64_STANDARD" || AMIType([]string{"m6i.large"}) != "AL2023_x86_64_STANDARD" {
		t.Error("AMIType")
	}
}

func TestRotationOrder(t *testing.T) {
	raw := valid()
	raw["eks-fleet:sealingKeyIds"] = `["key-a","key-b","key-c"]`
	c, errs := FromValues(raw)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if c.ActiveKeyID() != "key-c" || c.PreviousKeyID() != "key-b" {
		t.Errorf("active %s previous %s", c.ActiveKeyID(), c.PreviousKeyID())
	}
}

func BenchmarkFromValues(b *testing.B) {
	raw := valid()
	for b.Loop() {
		FromValues(raw)
	}
}

func fortyOneCIDRs() string {
	var l []string
	for i := range 41 {
		l = append(l, fmt.Sprintf("%q", fmt.Sprintf("203.0.%d.0/24", i)))
	}
	return "[" + strings.Join(l, ",") + "]"
}

func manyTags(n int) string {
	var l []string
	for i := range n {
		l = append(l, fmt.Sprintf("%q:%q", fmt.Sprintf("k%d", i), "v"))
	}
	return "{" + strings.Join(l, ",") + "}"
}

// TestLongestAdmittedInputs: the longest names and lists validation admits
// are accepted, and one more of each is refused.
func TestLongestAdmittedInputs(t *testing.T) {
	var cidrs, tagPairs []string
	for i := range 40 {
		cidrs = append(cidrs, fmt.Sprintf("%q", fmt.Sprintf("203.0.%d.0/24", i)))
	}
	for i := range MaxUserTags() {
		tagPairs = append(tagPairs, fmt.Sprintf("%q:%q", fmt.Sprintf("%03d", i)+strings.Repeat("k", MaxTagKeyLen-3), "Team Berlin_1.2:3/4=5+6-7@"+strings.Repeat("v", MaxTagValueLen-26)))
	}
	sso := "arn:aws:iam::111122223333:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_" + strings.Repeat("A", 64-15)
	raw := valid()
	raw["eks-fleet:hubName"] = "h" + strings.Repeat("9", 19)
	raw["eks-fleet:publicAccessCidrs"] = "[" + strings.Join(cidrs, ",") + "]"
	raw["eks-fleet:tags"] = "{" + strings.Join(tagPairs, ",") + "}"
	raw["eks-fleet:adminPrincipalArns"] = `["` + sso + `", "arn:aws:iam::111122223333:user/a/b/c"]`
	raw["eks-fleet:logRetentionDays"] = "3653"
	raw["eks-fleet:vpcCidr"] = "100.64.0.0/16" // CGNAT, which EKS accepts
	c, errs := FromValues(raw)
	if len(errs) > 0 {
		t.Fatalf("longest admitted inputs refused: %v", errs)
	}
	if len(c.Tags) != MaxUserTags() || len(c.PublicAccessCIDRs) != 40 || len(c.HubName) != 20 {
		t.Fatalf("parsed %d tags, %d cidrs, hub %q", len(c.Tags), len(c.PublicAccessCIDRs), c.HubName)
	}
	// One character longer: the role name part exceeds 64.
	raw["eks-fleet:adminPrincipalArns"] = `["` + sso + `A"]`
	if _, errs := FromValues(raw); len(errs) != 1 || !strings.Contains(errs[0].Error(), AdminPrincipalARNsKey) {
		t.Fatalf("65-character role name: %v", errs)
	}
}

func TestAccelerator(t *testing.T) {
	for typ, want := range map[string]string{
		"m7i.large": "", "c7gn.xlarge": "", "i4i.large": "", "d3.xlarge": "", "r7g.large": "", "t3.large": "", "a1.large": "",
		"p4d.24xlarge": "GPU (NVIDIA)", "g4dn.xlarge": "GPU (NVIDIA)", "g6e.xlarge": "GPU (NVIDIA)", "gr6.4xlarge": "GPU (NVIDIA)",
		"inf1.xlarge": "Inferentia/Trainium (Neuron)", "trn2.48xlarge": "Inferentia/Trainium (Neuron)",
		"dl1.24xlarge": "accelerator (dl)", "f1.2xlarge": "accelerator (f)", "vt1.3xlarge": "accelerator (vt)",
	} {
		if got := Accelerator(typ); got != want {
			t.Errorf("Accelerator(%s) = %q, want %q", typ, got, want)
		}
	}
}

func accountValues() Values {
	return Values{
		"aws:region":             "eu-west-1",
		"eks-fleet:stackKind":    KindSpokeAccount,
		"eks-fleet:hubAccountId": "111122223333",
		"eks-fleet:externalId":   "7c9e6679-7425-40de-944b-e07fc1f90ae7",
	}
}

// Every bad setting of either kind of stack is reported, naming the field
// and what is allowed; a setting of the other kind at its default (as the
// engine applies Pulumi.yaml's defaults to every stack) is not.
func TestStackKinds(t *testing.T) {
	with := func(base Values, kv ...string) Values {
		v := Values{}
		for k, x := range base {
			v[k] = x
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "<unset>" {
				delete(v, kv[i])
				continue
			}
			v[kv[i]] = kv[i+1]
		}
		return v
	}
	withDefaults := func(base Values) Values {
		v := DefaultValues()
		for k, x := range base {
			v[k] = x
		}
		return v
	}
	for name, tc := range map[string]struct {
		raw    Values
		reason string
		want   []string // one per expected error, in order
	}{
		"account": {raw: accountValues(), reason: "the four settings a spoke account needs"},
		"account with the engine's defaults": {raw: withDefaults(accountValues()),
			reason: "the engine sets every hub setting to its default in every stack"},
		"hub with the engine's defaults": {raw: withDefaults(valid()), reason: "and every account setting in a hub stack"},
		"account without hub account": {raw: with(accountValues(), "eks-fleet:hubAccountId", "<unset>"),
			want: []string{`eks-fleet:hubAccountId: invalid value "": allowed the hub's AWS account ID (12 digits`}, reason: "the trust names the hub's account"},
		"account with a short external id": {raw: with(accountValues(), "eks-fleet:externalId", "x"),
			want: []string{`eks-fleet:externalId: invalid value "x": allowed 2 to 1224 characters`}, reason: "STS refuses it"},
		"account with a hub setting": {raw: with(accountValues(), "eks-fleet:gitUrl", "ssh://git@github.com/o/r.git"),
			want: []string{`eks-fleet:gitUrl: invalid value "ssh://git@github.com/o/r.git": allowed unset: a spoke-account stack sets only`}, reason: "it would be ignored"},
		"account with an unknown setting": {raw: with(accountValues(), "eks-fleet:acountId", "1"),
			want: []string{`eks-fleet:acountId: invalid value "1": allowed a known setting of a spoke-account stack`}, reason: "a typo"},
		"unknown kind": {raw: with(valid(), "eks-fleet:stackKind", "account"),
			want: []string{`eks-fleet:stackKind: invalid value "account": allowed hub or spoke-account (unset: hub)`}, reason: "a typo"},
		"hub with an account setting": {raw: with(valid(), "eks-fleet:externalId", "abc"),
			want: []string{`eks-fleet:externalId: invalid value "abc": allowed unset: a setting of spoke-account stacks only`}, reason: "it would be ignored"},
		"hub with bad spoke accounts": {raw: with(valid(), "eks-fleet:spokeAccounts", `["222233334444","2222","222233334444"]`),
			want: []string{`eks-fleet:spokeAccounts: invalid value "2222": allowed AWS account IDs (12 digits)`,
				`eks-fleet:spokeAccounts: invalid value "222233334444": allowed each account once`}, reason: "a malformed and a repeated account"},
	} {
		errs := ValidateValues(tc.raw)
		if len(errs) != len(tc.want) {
			t.Errorf("%s (%s): %d errors %v, want %d", name, tc.reason, len(errs), errs, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(errs[i].Error(), w) {
				t.Errorf("%s (%s): error %d %q, want %q", name, tc.reason, i, errs[i], w)
			}
		}
	}
	many := make([]string, MaxSpokeAccounts+1)
	for i := range many {
		many[i] = fmt.Sprintf("%012d", i+1)
	}
	b, _ := json.Marshal(many)
	if errs := ValidateValues(with(valid(), "eks-fleet:spokeAccounts", string(b))); len(errs) != 1 || !strings.Contains(errs[0].Error(), "at most 100 accounts") {
		t.Errorf("101 spoke accounts: %v", errs)
	}
}

// A spoke-account stack read as a hub's (fleet iam --stack, Load) says so.
func TestHubReadOfAnAccountStack(t *testing.T) {
	_, errs := FromValues(accountValues())
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), `eks-fleet:stackKind: invalid value "spoke-account": allowed hub: this reads a hub stack`) {
		t.Errorf("errors %v", errs)
	}
}

// T4-M3: waves move a few spokes' add-ons ahead of the pins. Each bad wave
// is refused naming the setting, the wave and what is allowed; a good one
// reaches Config as written.
func TestAddonWaves(t *testing.T) {
	const canary = `{"name":"canary","clusters":["apps-staging"],"versions":{"eu-west-1":{"1.35":{"vpc-cni":"v1.21.0-eksbuild.2"}}}}`
	tests := map[string]struct {
		reason string
		pins   string // eks-fleet:spokeAddonVersions; "": unset
		waves  string
		want   []string // each in the one error; none: valid
	}{
		"one wave": {
			reason: "a canary moving one add-on of one spoke", pins: pins("eu-west-1"), waves: "[" + canary + "]",
		},
		"no wave": {
			reason: "Pulumi.yaml's default", pins: "", waves: "[]",
		},
		"not a list": {
			reason: "the setting's shape", pins: pins("eu-west-1"), waves: `{"canary":{}}`,
			want: []string{"a list of waves", `"clusters": ["apps-staging"]`},
		},
		"without pins": {
			reason: "unpinned versions move every spoke at each up, so a wave would not hold anything back", pins: "", waves: "[" + canary + "]",
			want: []string{"eks-fleet:spokeAddonVersions set"},
		},
		"bad name": {
			reason: "a wave's name is a DNS label", pins: pins("eu-west-1"), waves: `[` + strings.Replace(canary, `"canary"`, `"Canary 1"`, 1) + `]`,
			want: []string{"wave 1 name: Canary 1", "a DNS label"},
		},
		"two waves one name": {
			reason: "names tell waves apart", pins: pins("eu-west-1"),
			waves: `[` + canary + `,` + strings.Replace(canary, "apps-staging", "apps-prod", 1) + `]`,
			want:  []string{"wave 2 name: canary", "one wave only"},
		},
		"cluster in two waves": {
			reason: "a spoke runs one wave's versions", pins: pins("eu-west-1"),
			waves: `[` + canary + `,` + strings.Replace(canary, `"canary"`, `"early"`, 1) + `]`,
			want:  []string{"wave early cluster apps-staging", "in wave canary too"},
		},
		"no cluster": {
			reason: "a wave moves at least one spoke", pins: pins("eu-west-1"), waves: `[` + strings.Replace(canary, `"apps-staging"`, ``, 1) + `]`,
			want: []string{"wave canary clusters: none", "a WorkloadCluster claim's name"},
		},
		"cluster name too long": {
			reason: "claim names are at most 20 characters", pins: pins("eu-west-1"), waves: `[` + strings.Replace(canary, "apps-staging", "apps-staging-and-more", 1) + `]`,
			want: []string{"cluster apps-staging-and-more", "at most 20 characters"},
		},
		"other region": {
			reason: "only the spoke regions", pins: pins("eu-west-1"), waves: `[` + strings.Replace(canary, "eu-west-1", "us-east-1", 1) + `]`,
			want: []string{"wave canary us-east-1", "the spoke regions (eu-west-1)"},
		},
		"unknown Kubernetes version": {
			reason: "only versions the fleet accepts", pins: pins("eu-west-1"), waves: `[` + strings.Replace(canary, `"1.35"`, `"1.20"`, 1) + `]`,
			want: []string{"wave canary eu-west-1 1.20", "Kubernetes versions the fleet accepts"},
		},
		"unknown add-on": {
			reason: "only the managed add-ons", pins: pins("eu-west-1"), waves: `[` + strings.Replace(canary, `"vpc-cni"`, `"ebs-csi"`, 1) + `]`,
			want: []string{"wave canary eu-west-1 1.35 ebs-csi", "coredns"},
		},
		"bad version": {
			reason: "EKS's version form", pins: pins("eu-west-1"), waves: `[` + strings.Replace(canary, `"v1.21.0-eksbuild.2"`, `"latest"`, 1) + `]`,
			want: []string{"vpc-cni: latest", "v1.20.4-eksbuild.1"},
		},
		"nothing moved": {
			reason: "a wave pins at least one version", pins: pins("eu-west-1"), waves: `[{"name":"canary","clusters":["apps-staging"],"versions":{"eu-west-1":{}}}]`,
			want: []string{"wave canary versions: none"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			raw := valid()
			if tc.pins != "" {
				raw["eks-fleet:spokeAddonVersions"] = tc.pins
			}
			raw["eks-fleet:spokeAddonWaves"] = tc.waves
			c, errs := FromValues(raw)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("%s: %v", tc.reason, errs)
				}
				if got := clusterinfo.FormatAddonWaves(c.SpokeAddonWaves); got != tc.waves {
					t.Errorf("%s: waves %s, want %s", tc.reason, got, tc.waves)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("%s: want exactly one error, got %d: %v", tc.reason, len(errs), errs)
			}
			var fe *Error
			if !errors.As(errs[0], &fe) || fe.Field != "eks-fleet:spokeAddonWaves" {
				t.Fatalf("%s: error %v does not name eks-fleet:spokeAddonWaves", tc.reason, errs[0])
			}
			for _, w := range tc.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("%s: %q does not contain %q", tc.reason, errs[0], w)
				}
			}
		})
	}
}
