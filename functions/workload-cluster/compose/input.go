package compose

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// Input is the function's input (the Composition step's input): the hub
// facts the function cannot read from the XR. The Composition writes each
// field as ${VAR} of cluster-info (InputVariables) and the hub's Flux
// substitutes it, as it did into the P&T Composition.
type Input struct {
	HubName          string   `json:"hubName"`
	AccountID        string   `json:"accountId"`
	Partition        string   `json:"partition"`
	HubRegion        string   `json:"hubRegion"`
	FluxRoleARN      string   `json:"fluxRoleArn"`
	SpokeBoundaryARN string   `json:"spokeBoundaryArn"`
	HubEgressCIDRs   []string `json:"hubEgressCidrs"`
	LogRetentionDays int      `json:"logRetentionDays"`
	// GitOpsSystemPath is GITOPS_SYSTEM_PATH: the bootstrap
	// Kustomizations' paths start with it.
	GitOpsSystemPath string `json:"gitopsSystemPath"`
	// SpokeZoneIDs are, per region spokes may use, the IDs of the zones a
	// spoke's subnets go into, in order (the hub looked them up).
	SpokeZoneIDs map[string][]string `json:"spokeZoneIds"`
	// SpokeAddonVersions are, per region, Kubernetes version and EKS
	// add-on, the add-on version spokes run (the hub looked them up).
	SpokeAddonVersions clusterinfo.AddonVersions `json:"spokeAddonVersions"`
	// SpokeAddonWaves move the add-ons of the spokes they list ahead of
	// SpokeAddonVersions (the hub's spokeAddonWaves setting).
	SpokeAddonWaves clusterinfo.AddonWaves `json:"spokeAddonWaves"`
	// SpokeAccounts are the accounts other than the hub's a claim may name
	// (spec.account): those whose account role the hub's Crossplane may
	// assume.
	SpokeAccounts []string `json:"spokeAccounts"`
}

// InputVariables maps each Input field (JSON name) to the cluster-info
// variable Flux substitutes into it. The Composition's step input must be
// exactly these (a test compares them).
func InputVariables() map[string]string {
	return map[string]string{
		"hubName":            clusterinfo.HubName,
		"accountId":          clusterinfo.AccountID,
		"partition":          clusterinfo.Partition,
		"hubRegion":          clusterinfo.Region,
		"fluxRoleArn":        clusterinfo.FluxRoleARN,
		"spokeBoundaryArn":   clusterinfo.SpokeBoundaryARN,
		"hubEgressCidrs":     clusterinfo.HubEgressCIDRs,
		"logRetentionDays":   clusterinfo.LogRetentionDays,
		"gitopsSystemPath":   clusterinfo.SystemPath,
		"spokeZoneIds":       clusterinfo.SpokeZoneIDs,
		"spokeAddonVersions": clusterinfo.SpokeAddonVersions,
		"spokeAddonWaves":    clusterinfo.SpokeAddonWaves,
		"spokeAccounts":      clusterinfo.SpokeAccounts,
	}
}

// InputFrom is the Input Flux produces from cluster-info values (what fleet
// and the tests feed the function in-process).
func InputFrom(v clusterinfo.Values[string]) (Input, error) {
	egress, err := clusterinfo.ParseCIDRs(v.HubEgressCIDRs)
	if err != nil {
		return Input{}, err
	}
	days, err := strconv.Atoi(v.LogRetentionDays)
	if err != nil {
		return Input{}, fmt.Errorf("%s %q: not a number of days", clusterinfo.LogRetentionDays, v.LogRetentionDays)
	}
	zones, err := clusterinfo.ParseZoneIDs(v.SpokeZoneIDs)
	if err != nil {
		return Input{}, err
	}
	addons, err := clusterinfo.ParseAddonVersions(v.SpokeAddonVersions)
	if err != nil {
		return Input{}, err
	}
	waves, err := clusterinfo.ParseAddonWaves(v.SpokeAddonWaves)
	if err != nil {
		return Input{}, err
	}
	accounts, err := clusterinfo.ParseAccounts(v.SpokeAccounts)
	if err != nil {
		return Input{}, err
	}
	return Input{
		HubName: v.HubName, AccountID: v.AccountID, Partition: v.Partition, HubRegion: v.Region,
		FluxRoleARN: v.FluxRoleARN, SpokeBoundaryARN: v.SpokeBoundaryARN,
		HubEgressCIDRs: egress, LogRetentionDays: days, GitOpsSystemPath: v.SystemPath,
		SpokeZoneIDs: zones, SpokeAddonVersions: addons, SpokeAddonWaves: waves, SpokeAccounts: accounts,
	}, nil
}

// Hub is the hub as internal/iam/hubiam sees it.
func (in Input) Hub() hubiam.Env {
	return hubiam.Env{HubName: in.HubName, AccountID: in.AccountID, Partition: in.Partition, Region: in.HubRegion}
}

// Validate names every field that would compose something wrong.
func (in Input) Validate() error {
	var errs []error
	bad := func(field, value, want string) {
		errs = append(errs, fmt.Errorf("function input %s %q: %s (cluster-info %s)", field, value, want, InputVariables()[field]))
	}
	for _, f := range []struct{ field, value string }{
		{"hubName", in.HubName}, {"accountId", in.AccountID}, {"partition", in.Partition}, {"hubRegion", in.HubRegion},
		{"gitopsSystemPath", in.GitOpsSystemPath},
	} {
		if f.value == "" {
			bad(f.field, f.value, "must be set")
		}
	}
	arn := func(field, value, service, kind string) {
		prefix := fmt.Sprintf("arn:%s:%s:", in.Partition, service)
		if !strings.HasPrefix(value, prefix) || !strings.Contains(value, ":"+in.AccountID+":"+kind) {
			bad(field, value, fmt.Sprintf("must be an ARN %s...:%s:%s... of the hub's account", prefix, in.AccountID, kind))
		}
	}
	arn("fluxRoleArn", in.FluxRoleARN, "iam", "role/")
	// The boundary every spoke role carries is derived from the hub name
	// (spokeiam); cluster-info must name the same policy.
	if want := in.Hub().BoundaryARN(); in.SpokeBoundaryARN != want {
		bad("spokeBoundaryArn", in.SpokeBoundaryARN, "must be "+want+", the boundary the hub's program owns")
	}
	if len(in.HubEgressCIDRs) == 0 {
		bad("hubEgressCidrs", "[]", "must list the hub's NAT egress (the hub's Flux reaches the spoke API through it)")
	}
	if len(in.SpokeZoneIDs) == 0 {
		bad("spokeZoneIds", "{}", "must give the zone IDs of at least one region (the hub's spokeRegions)")
	}
	for _, region := range slices.Sorted(maps.Keys(in.SpokeZoneIDs)) {
		if len(in.SpokeAddonVersions[region]) == 0 {
			bad("spokeAddonVersions", region, "must give the EKS add-on versions of every region in spokeZoneIds (the hub's spokeRegions)")
		}
	}
	for _, id := range in.SpokeAccounts {
		if !hubiam.AccountIDRE.MatchString(id) || id == in.AccountID {
			bad("spokeAccounts", id, "must list AWS account IDs (12 digits) other than the hub's "+in.AccountID+" (the hub stack's eks-fleet:spokeAccounts)")
		}
	}
	if !slices.Contains(workloadcluster.LogRetentionDays, in.LogRetentionDays) {
		bad("logRetentionDays", strconv.Itoa(in.LogRetentionDays), fmt.Sprintf("must be a CloudWatch Logs retention, one of %v", workloadcluster.LogRetentionDays))
	}
	return errors.Join(errs...)
}

// addonVersion is the version of EKS add-on addon the spoke runs at
// Kubernetes k8s: its wave's when a wave lists the spoke and pins it, else
// the fleet's.
func (p Params) addonVersion(k8s, addon string) (string, bool) {
	if v, ok := p.Input.SpokeAddonWaves.Version(p.Spoke, p.Spec.Region, k8s, addon); ok {
		return v, true
	}
	return p.Input.SpokeAddonVersions.Version(p.Spec.Region, k8s, addon)
}

// env is the hub as the spoke's documents see it: in the claim's account
// (spec.account) when it names one, else the hub's own.
func (p Params) env() hubiam.Env {
	if p.Spec.Account != "" {
		return p.Input.Hub().InAccount(p.Spec.Account)
	}
	return p.Input.Hub()
}

// spoke is the spokeiam view of one spoke of this hub.
func (p Params) spoke() spokeiam.Spoke {
	return spokeiam.Spoke{
		Hub: p.env(), Name: p.Spoke, OIDCIssuer: p.oidcIssuer(),
		AdminPrincipalARNs: p.Spec.AdminPrincipalARNs, FluxRoleARN: p.Input.FluxRoleARN,
		SubnetIDs: p.subnetIDs(),
	}
}
