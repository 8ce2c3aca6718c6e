package fleetvalidate

import (
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

func TestEditNotices(t *testing.T) {
	base := workloadcluster.Spec{KubernetesVersion: "1.35", AvailabilityZones: 3, NATMode: workloadcluster.NATSingle,
		Nodes: workloadcluster.Nodes{InstanceTypes: []string{"m7i.large"}, Min: 2, Desired: 3, Max: 5},
		Tags:  map[string]string{"team": "payments"}}
	tests := []struct {
		name   string
		reason string
		edit   func(s *workloadcluster.Spec)
		want   []string
	}{
		{"no change", "an unchanged claim says nothing", func(s *workloadcluster.Spec) {}, nil},
		{"more nodes", "growing the node group replaces nothing", func(s *workloadcluster.Spec) { s.Nodes.Max = 6 }, nil},
		{"upgrade", "EKS cannot downgrade", func(s *workloadcluster.Spec) { s.KubernetesVersion = "1.36" },
			[]string{"kubernetesVersion 1.35 -> 1.36 cannot be undone (EKS does not downgrade); the control plane is upgraded, then every node is replaced, one at a time"}},
		{"tags", "tags reach the launch template", func(s *workloadcluster.Spec) { s.Tags = map[string]string{"team": "pay"} },
			[]string{"tags reach the nodes' launch template: EKS replaces every node, one at a time"}},
		{"instance types", "a managed node group keeps its types", func(s *workloadcluster.Spec) { s.Nodes.InstanceTypes = []string{"m7i.xlarge"} },
			[]string{"nodes.instanceTypes m7i.large -> m7i.xlarge replaces the node group (EKS cannot change a managed node group's instance types in place): a second group is created with them, then every node of the current one is drained and deleted"}},
		{"per-az NAT", "per-zone NAT gateways cost more", func(s *workloadcluster.Spec) { s.NATMode = workloadcluster.NATPerAZ },
			[]string{"natMode single -> per-az: 3 NAT gateway(s) and Elastic IP(s) instead of 1"}},
		{"shrink", "fewer nodes evict pods", func(s *workloadcluster.Spec) { s.Nodes.Desired, s.Nodes.Min = 1, 1 },
			[]string{"nodes 2:3:5 -> 1:1:5 removes capacity: pods on the nodes EKS removes are evicted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := base
			next.Nodes.InstanceTypes = append([]string(nil), base.Nodes.InstanceTypes...)
			tt.edit(&next)
			if got := EditNotices(base, next); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("%s: EditNotices =\n%q\nwant\n%q", tt.reason, got, tt.want)
			}
		})
	}
}
