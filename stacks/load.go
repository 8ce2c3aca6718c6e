package stacks

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
)

// Values are raw settings keyed by full key ("eks-fleet:natMode",
// "aws:region"): strings as written, lists and maps as JSON, the way Pulumi
// hands structured config to a program.
type Values map[string]string

// FromValues applies the defaults, parses raw and validates the result. It
// returns every problem: values that do not parse, unknown keys in the
// project's namespace, and everything Validate finds.
func FromValues(raw Values) (Config, []error) {
	c := Defaults()
	var v validator
	known := map[string]bool{}
	for _, k := range Keys() {
		known[FullKey(k)] = true
	}
	var unknown []string
	for k := range raw {
		if strings.HasPrefix(k, Project+":") && !known[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		v.add(k, raw[k], "a known setting: "+strings.Join(Keys(), ", "))
	}

	str := func(key string, dst *string) {
		if s, ok := raw[FullKey(key)]; ok {
			*dst = s
		}
	}
	num := func(key string, dst *int, allowed string) {
		s, ok := raw[FullKey(key)]
		if !ok {
			return
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			v.add(key, s, "an integer: "+allowed)
			return
		}
		*dst = n
	}
	list := func(key string, dst *[]string, example string) {
		s, ok := raw[FullKey(key)]
		if !ok {
			return
		}
		var l []string
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			v.add(key, s, "a list of strings, e.g. "+example)
			return
		}
		*dst = l
	}

	str(RegionKey, &c.Region)
	str(HubNameKey, &c.HubName)
	str(VPCCIDRKey, &c.VPCCIDR)
	num(AvailabilityZonesKey, &c.AvailabilityZones, "2 or 3")
	str(NATModeKey, &c.NATMode)
	str(KubernetesVersionKey, &c.KubernetesVersion)
	list(NodeInstanceTypesKey, &c.Nodes.InstanceTypes, `["m6i.large"]`)
	num(NodeMinSizeKey, &c.Nodes.Min, "the node group's minimum size")
	num(NodeDesiredSizeKey, &c.Nodes.Desired, "the node group's desired size")
	num(NodeMaxSizeKey, &c.Nodes.Max, "the node group's maximum size")
	list(PublicAccessCIDRsKey, &c.PublicAccessCIDRs, `["203.0.113.0/24"]`)
	list(AdminPrincipalARNsKey, &c.AdminPrincipalARNs, `["arn:aws:iam::111122223333:role/platform-admin"]`)
	str(GitURLKey, &c.Git.URL)
	str(GitBranchKey, &c.Git.Branch)
	str(GitPathKey, &c.Git.Path)
	str(GitKnownHostsKey, &c.Git.KnownHosts)
	str(SealingSecretNameKey, &c.Sealing.SecretName)
	num(SealingRecoveryWindowKey, &c.Sealing.RecoveryWindowDays, "0 or 7 to 30")
	list(SealingKeyIDsKey, &c.Sealing.KeyIDs, `["key-1"]`)
	num(FluxConcurrencyKey, &c.FluxConcurrency, fmt.Sprintf("%d to %d", MinFluxConcurrency, MaxFluxConcurrency))
	num(LogRetentionDaysKey, &c.LogRetentionDays, "days of CloudWatch Logs retention, e.g. 90")
	str(FunctionRegistryKey, &c.FunctionRegistry)
	list(SpokeRegionsKey, &c.SpokeRegions, `["eu-west-1", "us-east-1"]`)
	list(SpokeAccountsKey, &c.SpokeAccounts, `["222233334444"]`)
	v.kind(raw, KindHub)
	// Pulumi.yaml's default {} (an empty object) is the setting unset.
	if s, ok := raw[FullKey(SpokeAddonVersionsKey)]; ok && !isEmptyJSON(s) {
		a, err := clusterinfo.ParseAddonVersions(s)
		if err != nil {
			v.add(SpokeAddonVersionsKey, s, `a map of region to Kubernetes version to add-on to version, as the stack output spokeAddonVersions shows it, e.g. {"eu-west-1": {"1.35": {"coredns": "v1.13.2-eksbuild.1", "kube-proxy": "v1.35.0-eksbuild.1", "vpc-cni": "v1.20.4-eksbuild.1"}}}`)
		} else {
			c.SpokeAddonVersions = a
		}
	}
	// Pulumi.yaml's default [] is no wave.
	if s, ok := raw[FullKey(SpokeAddonWavesKey)]; ok && !isEmptyJSON(s) {
		w, err := clusterinfo.ParseAddonWaves(s)
		if err != nil {
			v.add(SpokeAddonWavesKey, s, `a list of waves, each a name, the clusters it moves and their add-on versions in spokeAddonVersions' form, e.g. [{"name": "canary", "clusters": ["apps-staging"], "versions": {"eu-west-1": {"1.35": {"vpc-cni": "v1.20.5-eksbuild.1"}}}}]`)
		} else {
			c.SpokeAddonWaves = w
		}
	}
	if s, ok := raw[FullKey(TagsKey)]; ok {
		var t map[string]string
		if err := json.Unmarshal([]byte(s), &t); err != nil {
			v.add(TagsKey, s, `a map of strings, e.g. {"team": "platform"}`)
		} else {
			c.Tags = t
		}
	}
	return c, append(v.errs, Validate(c)...)
}

// Read reads every setting the program knows from the stack's Pulumi
// config (declared defaults included: the engine applies them).
func Read(ctx *pulumi.Context) Values {
	raw := Values{}
	for _, k := range Keys() {
		if s, ok := config.Try(ctx, FullKey(k)); ok == nil {
			raw[FullKey(k)] = s
		}
	}
	return raw
}

// Load reads a hub stack's settings from Pulumi config and validates them.
// It registers nothing; on any problem it returns one error listing them
// all.
func Load(ctx *pulumi.Context) (Config, error) {
	c, errs := FromValues(Read(ctx))
	return c, Join(ctx.Stack(), errs)
}

// ValidateValues validates raw as the stack kind it names (stackKind):
// every problem, nothing created.
func ValidateValues(raw Values) []error {
	if KindOf(raw) == KindSpokeAccount {
		_, errs := AccountFromValues(raw)
		return errs
	}
	_, errs := FromValues(raw)
	return errs
}

// Join folds validation errors into one error (nil for none) whose message
// lists every problem on its own line.
func Join(stack string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = "  - " + e.Error()
	}
	return &ConfigError{Stack: stack, Errs: errs, msg: fmt.Sprintf("stack %q has %d invalid setting(s), nothing was created:\n%s", stack, len(errs), strings.Join(lines, "\n"))}
}

// ConfigError is every problem of one stack's configuration.
type ConfigError struct {
	Stack string
	Errs  []error
	msg   string
}

func (e *ConfigError) Error() string   { return e.msg }
func (e *ConfigError) Unwrap() []error { return e.Errs }

// ParseFile reads a hub's Pulumi.<stack>.yaml and returns its settings and
// every problem, without a Pulumi engine. Encrypted values (secure:) are
// taken as set but cannot be checked.
func ParseFile(path string) (Config, []error) {
	raw, err := ReadFile(path)
	if err != nil {
		return Config{}, []error{err}
	}
	return FromValues(raw)
}

// ReadFile reads a Pulumi.<stack>.yaml's settings, as written (no defaults).
func ReadFile(path string) (Values, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read stack file: %w", err)
	}
	raw, err := ParseStackYAML(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return raw, nil
}

// ValidateFile validates a Pulumi.<stack>.yaml of either kind offline.
func ValidateFile(path string) []error {
	raw, err := ReadFile(path)
	if err != nil {
		return []error{err}
	}
	return ValidateValues(raw)
}

// ParseStackYAML turns a stack file's config section into Values.
func ParseStackYAML(b []byte) (Values, error) {
	var f struct {
		Config map[string]any `json:"config"`
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		var loose struct {
			Config map[string]any `json:"config"`
		}
		// Stack files carry other top-level keys (encryptionsalt, ...).
		if err2 := yaml.Unmarshal(b, &loose); err2 != nil {
			return nil, fmt.Errorf("parse stack YAML: %w", err2)
		}
		f.Config = loose.Config
	}
	raw := Values{}
	for k, val := range f.Config {
		switch x := val.(type) {
		case string:
			raw[k] = x
		case map[string]any:
			if s, ok := x["secure"].(string); ok && len(x) == 1 {
				raw[k] = secureValue(k, s)
				continue
			}
			j, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("config %s: %w", k, err)
			}
			raw[k] = string(j)
		default:
			j, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("config %s: %w", k, err)
			}
			raw[k] = string(j)
		}
	}
	return raw, nil
}

// secureValue stands in for an encrypted setting. Only gitKnownHosts may
// reasonably be secret; its stand-in is not checked further.
func secureValue(key, _ string) string {
	if key == FullKey(GitKnownHostsKey) {
		return secureKnownHosts
	}
	return "<secure>"
}

const secureKnownHosts = "<secure>"
