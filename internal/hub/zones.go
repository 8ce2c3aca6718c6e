package hub

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/ekszones"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// ZoneProviderResource prefixes the logical name of the AWS provider the
// program reads another spoke region's zones and add-on versions with (the
// name is kept from when it read zones only: renaming it would replace it).
const ZoneProviderResource = "zones-"

// SpokeRegions are the invoke options that read each spoke region: none
// for the hub's region, an AWS provider for that region otherwise.
type SpokeRegions map[string][]pulumi.InvokeOption

// NewSpokeRegions registers an AWS provider for each spoke region other
// than the hub's.
func NewSpokeRegions(ctx *pulumi.Context, cfg stacks.Config) (SpokeRegions, error) {
	out := SpokeRegions{}
	for _, region := range cfg.SpokeRegionList() {
		if region == cfg.Region {
			out[region] = nil
			continue
		}
		p, err := aws.NewProvider(ctx, ZoneProviderResource+region, &aws.ProviderArgs{Region: pulumi.String(region)})
		if err != nil {
			return nil, fmt.Errorf("AWS provider for spoke region %s: %w", region, err)
		}
		out[region] = []pulumi.InvokeOption{pulumi.Provider(p)}
	}
	return out, nil
}

// SpokeZoneIDs looks up, for each region spokes may use, the IDs of the
// standard availability zones EKS accepts for cluster subnets, in AWS's
// order: zone names map to physical zones differently in every account,
// IDs do not, and EKS refuses some IDs (internal/contract/ekszones). A
// region with fewer than a spoke's minimum of zones is refused, naming the
// setting, before anything else is created.
func SpokeZoneIDs(ctx *pulumi.Context, cfg stacks.Config, regions SpokeRegions) (map[string][]string, error) {
	out := map[string][]string{}
	for _, region := range cfg.SpokeRegionList() {
		opts := regions[region]
		zones, err := aws.GetAvailabilityZones(ctx, &aws.GetAvailabilityZonesArgs{
			State: pulumi.StringRef("available"),
			Filters: []aws.GetAvailabilityZonesFilter{
				{Name: "zone-type", Values: []string{"availability-zone"}},
				{Name: "opt-in-status", Values: []string{"opt-in-not-required"}},
			},
		}, opts...)
		if err != nil {
			return nil, fmt.Errorf("availability zones of spoke region %s: %w", region, err)
		}
		usable, refused, err := ekszones.Usable(region, zones.Names, zones.ZoneIds)
		if err != nil {
			return nil, err
		}
		if len(usable) < workloadcluster.MinAvailabilityZones {
			msg := fmt.Sprintf("%s %s: %d standard availability zones EKS accepts for cluster subnets, a spoke needs %d",
				stacks.FullKey(stacks.SpokeRegionsKey), region, len(usable), workloadcluster.MinAvailabilityZones)
			if len(refused) > 0 {
				msg += "; EKS refuses " + strings.Join(refused, ", ")
			}
			return nil, fmt.Errorf("%s", msg)
		}
		for _, z := range usable {
			out[region] = append(out[region], z.ID)
		}
	}
	return out, nil
}

// SpokeAddonVersions looks up, for each spoke region, each Kubernetes
// version the fleet accepts and each EKS managed add-on every spoke runs,
// EKS's default version of the add-on (DescribeAddonVersions, through the
// provider's getAddonVersion): the version AWS itself installs on a new
// cluster of that Kubernetes version. Read at every pulumi up, so a newer
// default reaches running spokes through cluster-info, all of them at once,
// unless the stack pins them (below). A Kubernetes version
// EKS does not offer in a region yet (a new entry of versions.Kubernetes, a
// region that lags) is left out of that region, with a warning: spokes
// there keep the add-on versions they run, new ones get none, and both say
// so (the function's pending notice) until a pulumi up finds them. A
// region that offers none of the versions, or a look-up that fails
// otherwise, is refused naming the region, the Kubernetes version and the
// add-on.
//
// With the stack's spokeAddonVersions set, those pinned versions are
// written as they are and nothing is looked up (T4-M3: an up moves no
// spoke's add-ons unless the pin changes; stacks.Validate checked them).
func SpokeAddonVersions(ctx *pulumi.Context, cfg stacks.Config, regions SpokeRegions) (clusterinfo.AddonVersions, error) {
	if cfg.SpokeAddonVersions != nil {
		_ = ctx.Log.Info(fmt.Sprintf("%s: the spokes' EKS add-on versions are pinned; EKS's defaults are not looked up",
			stacks.FullKey(stacks.SpokeAddonVersionsKey)), nil)
		return cfg.SpokeAddonVersions, nil
	}
	out := clusterinfo.AddonVersions{}
	for _, region := range cfg.SpokeRegionList() {
		out[region] = map[string]map[string]string{}
		for _, k8s := range versions.Kubernetes() {
			found := map[string]string{}
			var missing []string
			for _, addon := range versions.EKSAddons() {
				v, err := eks.GetAddonVersion(ctx, &eks.GetAddonVersionArgs{AddonName: addon, KubernetesVersion: k8s}, regions[region]...)
				switch {
				case err != nil && !notOffered(err):
					return nil, fmt.Errorf("%s %s: EKS add-on %s for Kubernetes %s (one of the versions the fleet accepts): %w",
						stacks.FullKey(stacks.SpokeRegionsKey), region, addon, k8s, err)
				case err != nil || v.Version == "":
					missing = append(missing, addon)
				default:
					found[addon] = v.Version
				}
			}
			if len(missing) > 0 {
				// Some add-on without a version: the Kubernetes version
				// is left out whole, so no spoke runs a half-known set.
				_ = ctx.Log.Warn(fmt.Sprintf("%s %s: EKS offers no %s add-on version for Kubernetes %s yet: left out of cluster-info %s; spokes there keep the add-on versions they run, and new spokes of %s get none, until a pulumi up finds them",
					stacks.FullKey(stacks.SpokeRegionsKey), region, strings.Join(missing, ", "), k8s, clusterinfo.SpokeAddonVersions, k8s), nil)
				continue
			}
			out[region][k8s] = found
		}
		if len(out[region]) == 0 {
			return nil, fmt.Errorf("%s %s: EKS offers add-on versions for none of the Kubernetes versions the fleet accepts (%s): remove the region or check the account's access to EKS there",
				stacks.FullKey(stacks.SpokeRegionsKey), region, strings.Join(versions.Kubernetes(), ", "))
		}
	}
	return out, nil
}

// notOffered reports the provider's answer for an add-on version EKS does
// not list (terraform-provider-aws's eks add-on version data source wraps
// tfresource's empty-result error: "reading EKS Add-On version info (...):
// empty result").
func notOffered(err error) bool { return strings.Contains(err.Error(), "empty result") }
