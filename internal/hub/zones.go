package hub

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/contract/ekszones"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// ZoneProviderResource prefixes the logical name of the AWS provider the
// program reads another spoke region's zones with.
const ZoneProviderResource = "zones-"

// SpokeZoneIDs looks up, for each region spokes may use, the IDs of the
// standard availability zones EKS accepts for cluster subnets, in AWS's
// order: zone names map to physical zones differently in every account,
// IDs do not, and EKS refuses some IDs (internal/contract/ekszones). A
// region with fewer than a spoke's minimum of zones is refused, naming the
// setting, before anything else is created.
func SpokeZoneIDs(ctx *pulumi.Context, cfg stacks.Config) (map[string][]string, error) {
	out := map[string][]string{}
	for _, region := range cfg.SpokeRegionList() {
		var opts []pulumi.InvokeOption
		if region != cfg.Region {
			p, err := aws.NewProvider(ctx, ZoneProviderResource+region, &aws.ProviderArgs{Region: pulumi.String(region)})
			if err != nil {
				return nil, fmt.Errorf("AWS provider for spoke region %s: %w", region, err)
			}
			opts = append(opts, pulumi.Provider(p))
		}
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
