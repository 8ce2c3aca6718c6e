package stacks

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
)

// Stack kinds (eks-fleet:stackKind). One program, two kinds of stack: a
// hub (Pulumi.mgmt.yaml), and a spoke account the hub's spokes may live in
// (Pulumi.acct-<name>.yaml), which holds only what the hub needs there
// (components/spokeaccount).
const (
	KindHub          = "hub"
	KindSpokeAccount = "spoke-account"
)

// Kinds lists the stack kinds.
func Kinds() []string { return []string{KindHub, KindSpokeAccount} }

// MaxSpokeAccounts bounds spokeAccounts: the hub Crossplane role's policy
// naming every account role fits IAM's inline quota at the longest names
// (hubiam's quota test).
const MaxSpokeAccounts = 100

// KindOf is the kind raw names, KindHub when it names none.
func KindOf(raw Values) string {
	if k, ok := raw[FullKey(StackKindKey)]; ok && k != "" {
		return k
	}
	return KindHub
}

// AccountKeys are the settings a spoke-account stack reads; every other
// setting is the hub's and must stay at its default there.
func AccountKeys() []string {
	return []string{RegionKey, StackKindKey, HubNameKey, HubAccountIDKey, ExternalIDKey, TagsKey}
}

// hubOnly reports whether key is read by hub stacks only.
func hubOnly(key string) bool {
	return !slices.Contains(AccountKeys(), key)
}

// accountOnly reports whether key is read by spoke-account stacks only.
func accountOnly(key string) bool {
	return key == HubAccountIDKey || key == ExternalIDKey
}

// DefaultValues are the settings' defaults as the engine hands them to the
// program when a stack does not set them (Pulumi.yaml's defaults: strings
// as written, other values as JSON). Pulumi.yaml declares a default for
// every setting: the engine refuses a stack that leaves a setting without
// one unset ("Stack is missing configuration value"), and a spoke-account
// stack sets none of the hub's.
func DefaultValues() Values {
	d := Defaults()
	j := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("stacks: marshal default %v: %v", v, err))
		}
		return string(b)
	}
	out := Values{}
	for k, v := range map[string]string{
		HubNameKey:               d.HubName,
		VPCCIDRKey:               d.VPCCIDR,
		AvailabilityZonesKey:     strconv.Itoa(d.AvailabilityZones),
		NATModeKey:               d.NATMode,
		KubernetesVersionKey:     d.KubernetesVersion,
		NodeInstanceTypesKey:     j(d.Nodes.InstanceTypes),
		NodeMinSizeKey:           strconv.Itoa(d.Nodes.Min),
		NodeDesiredSizeKey:       strconv.Itoa(d.Nodes.Desired),
		NodeMaxSizeKey:           strconv.Itoa(d.Nodes.Max),
		PublicAccessCIDRsKey:     "[]",
		AdminPrincipalARNsKey:    "[]",
		GitURLKey:                "",
		GitBranchKey:             d.Git.Branch,
		GitPathKey:               d.Git.Path,
		GitKnownHostsKey:         "",
		SealingSecretNameKey:     "",
		SealingRecoveryWindowKey: strconv.Itoa(d.Sealing.RecoveryWindowDays),
		SealingKeyIDsKey:         j(d.Sealing.KeyIDs),
		TagsKey:                  "{}",
		FluxConcurrencyKey:       strconv.Itoa(d.FluxConcurrency),
		LogRetentionDaysKey:      strconv.Itoa(d.LogRetentionDays),
		FunctionRegistryKey:      d.FunctionRegistry,
		SpokeRegionsKey:          "[]",
		SpokeAddonVersionsKey:    "{}",
		SpokeAddonWavesKey:       "[]",
		SpokeAccountsKey:         "[]",
		StackKindKey:             KindHub,
		HubAccountIDKey:          "",
		ExternalIDKey:            "",
	} {
		out[FullKey(k)] = v
	}
	return out
}

// sameValue compares two raw values as the engine would hand them: equal
// strings, or equal JSON.
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// isEmptyJSON reports a value that is an empty JSON object or list.
func isEmptyJSON(s string) bool { return sameValue(s, "{}") || sameValue(s, "[]") }

// kind checks stackKind and that raw sets no setting of the other kind
// (other than to its default, which the engine applies to every stack).
func (v *validator) kind(raw Values, want string) {
	got := KindOf(raw)
	if !slices.Contains(Kinds(), got) {
		v.add(StackKindKey, got, strings.Join(Kinds(), " or ")+" (unset: "+KindHub+")")
		return
	}
	if got != want {
		// e.g. a spoke-account stack given where a hub's is read
		v.add(StackKindKey, got, want+": this reads a "+want+" stack")
		return
	}
	defaults := DefaultValues()
	for _, k := range Keys() {
		s, ok := raw[FullKey(k)]
		if !ok || sameValue(s, defaults[FullKey(k)]) {
			continue
		}
		switch {
		case want == KindHub && accountOnly(k):
			v.add(k, s, "unset: a setting of "+KindSpokeAccount+" stacks only (eks-fleet:stackKind: "+KindSpokeAccount+")")
		case want == KindSpokeAccount && hubOnly(k):
			v.add(k, s, "unset: a "+KindSpokeAccount+" stack sets only "+strings.Join(AccountKeys(), ", ")+" (this is a hub setting)")
		}
	}
}

// AccountConfig is a spoke-account stack's settings.
type AccountConfig struct {
	// Region is the AWS provider's region (what the stack makes is IAM,
	// which is global).
	Region string
	// HubName is the name of the hub whose spokes the account holds.
	HubName string
	// HubAccountID is the hub's account: its Crossplane role is the only
	// principal the account role trusts.
	HubAccountID string
	// ExternalID is what the hub's Crossplane presents when it assumes the
	// account role (the hub's ProviderConfig for the account).
	ExternalID string
	Tags       map[string]string
}

// AccountFromValues parses and validates a spoke-account stack's settings:
// every problem, nothing created.
func AccountFromValues(raw Values) (AccountConfig, []error) {
	c := AccountConfig{HubName: defaultHubName, Tags: map[string]string{}}
	var v validator
	known := map[string]bool{}
	for _, k := range Keys() {
		known[FullKey(k)] = true
	}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if strings.HasPrefix(k, Project+":") && !known[k] {
			v.add(k, raw[k], "a known setting of a "+KindSpokeAccount+" stack: "+strings.Join(AccountKeys(), ", "))
		}
	}
	v.kind(raw, KindSpokeAccount)
	get := func(key string, dst *string) {
		if s, ok := raw[FullKey(key)]; ok {
			*dst = s
		}
	}
	get(RegionKey, &c.Region)
	get(HubNameKey, &c.HubName)
	get(HubAccountIDKey, &c.HubAccountID)
	get(ExternalIDKey, &c.ExternalID)
	if s, ok := raw[FullKey(TagsKey)]; ok {
		if err := json.Unmarshal([]byte(s), &c.Tags); err != nil {
			v.add(TagsKey, s, `a map of strings, e.g. {"team": "payments"}`)
		}
	}
	return c, append(v.errs, ValidateAccount(c)...)
}

// ValidateAccount checks a spoke-account stack's settings. Whether the
// account is another than the hub's is checked when the program knows its
// own account (it refuses the hub's).
func ValidateAccount(c AccountConfig) []error {
	var v validator
	v.region(c.Region)
	v.hubName(c.HubName)
	if !hubiam.AccountIDRE.MatchString(c.HubAccountID) {
		v.add(HubAccountIDKey, c.HubAccountID, "the hub's AWS account ID (12 digits; pulumi stack output of the hub, or aws sts get-caller-identity there)")
	}
	if err := hubiam.CheckExternalID(c.ExternalID); err != nil {
		v.add(ExternalIDKey, c.ExternalID, fmt.Sprintf("%d to %d characters of letters, digits and _+=,.@:/-, unique to this account (e.g. the output of uuidgen)",
			hubiam.MinExternalIDLength, hubiam.MaxExternalIDLength))
	}
	v.tags(c.Tags)
	return v.errs
}

// spokeAccounts: AWS account IDs, each once, at most MaxSpokeAccounts.
func (v *validator) spokeAccounts(ids []string) {
	if len(ids) > MaxSpokeAccounts {
		v.add(SpokeAccountsKey, strconv.Itoa(len(ids))+" accounts", fmt.Sprintf("at most %d accounts", MaxSpokeAccounts))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		switch {
		case !hubiam.AccountIDRE.MatchString(id):
			v.add(SpokeAccountsKey, id, "AWS account IDs (12 digits), each prepared by a "+KindSpokeAccount+" stack")
		case seen[id]:
			v.add(SpokeAccountsKey, id, "each account once")
		}
		seen[id] = true
	}
}
