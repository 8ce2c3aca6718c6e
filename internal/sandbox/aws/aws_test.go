package aws

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

func providerModule(t *testing.T) string {
	t.Helper()
	dir, err := upstream.Dir(context.Background(), upstream.ProviderAWSModule, "v"+versions.ProviderAWS)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadPackage reads the provider's generated resolvers for the
// references the fleet's composition relies on.
func TestReadPackage(t *testing.T) {
	dir := providerModule(t)
	cases := map[string]struct {
		reason                 string
		service, version, kind string
		field                  string
		want                   Ref
		tf                     string
	}{
		"NodeGroupClusterName": {
			reason:  "A node group references its cluster by external name, only once the cluster is ACTIVE (eks ExternalNameIfClusterActive).",
			service: "eks", version: "v1beta2", kind: "NodeGroup", field: "spec.forProvider.clusterName",
			want: Ref{Value: []string{"spec", "forProvider", "clusterName"}, Reference: []string{"spec", "forProvider", "clusterNameRef"},
				Selector: []string{"spec", "forProvider", "clusterNameSelector"}, Group: "eks.aws.upbound.io", Version: "v1beta2", Kind: "Cluster",
				Extract: "external-name", ActiveOnly: true},
			tf: "aws_eks_node_group",
		},
		"NATGatewayAllocation": {
			reason:  "A NAT gateway's allocation ID is the EIP's status.atProvider.id (upjet ExtractResourceID).",
			service: "ec2", version: "v1beta1", kind: "NATGateway", field: "spec.forProvider.allocationId",
			want: Ref{Value: []string{"spec", "forProvider", "allocationId"}, Reference: []string{"spec", "forProvider", "allocationIdRef"},
				Selector: []string{"spec", "forProvider", "allocationIdSelector"}, Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "EIP",
				Extract: "id"},
			tf: "aws_nat_gateway",
		},
		"RouteNATGateway": {
			reason:  "A route (v1beta2, the storage version) names its NAT gateway by external name.",
			service: "ec2", version: "v1beta2", kind: "Route", field: "spec.forProvider.natGatewayId",
			want: Ref{Value: []string{"spec", "forProvider", "natGatewayId"}, Reference: []string{"spec", "forProvider", "natGatewayIdRef"},
				Selector: []string{"spec", "forProvider", "natGatewayIdSelector"}, Group: "ec2.aws.upbound.io", Version: "v1beta1", Kind: "NATGateway",
				Extract: "external-name"},
			tf: "aws_route",
		},
		"RolePolicyAttachmentPolicy": {
			reason:  "A policy attachment takes the policy's ARN (the provider's ARNExtractor).",
			service: "iam", version: "v1beta1", kind: "RolePolicyAttachment", field: "spec.forProvider.policyArn",
			want: Ref{Value: []string{"spec", "forProvider", "policyArn"}, Reference: []string{"spec", "forProvider", "policyArnRef"},
				Selector: []string{"spec", "forProvider", "policyArnSelector"}, Group: "iam.aws.upbound.io", Version: "v1beta1", Kind: "Policy",
				Extract: "arn"},
			tf: "aws_iam_role_policy_attachment",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := ReadPackage(dir, tc.service, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			var got *Ref
			for _, r := range p.Refs[tc.kind] {
				if strings.Join(r.Value, ".") == tc.field {
					r := r
					r.Source = ""
					got = &r
				}
			}
			if got == nil {
				t.Fatalf("%s\nno reference at %s of %s", tc.reason, tc.field, tc.kind)
			}
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("%s\nReadPackage(...).Refs[%s]: -want, +got:\n%s", tc.reason, tc.kind, diff)
			}
			if p.TerraformType[tc.kind] != tc.tf {
				t.Errorf("%s\nTerraform type of %s: got %q, want %q", tc.reason, tc.kind, p.TerraformType[tc.kind], tc.tf)
			}
		})
	}
}

// TestReadNaming reads how the provider names the types the fleet composes.
func TestReadNaming(t *testing.T) {
	n, err := ReadNaming(providerModule(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Naming{
		"aws_vpc":                  ProviderID,
		"aws_nat_gateway":          ProviderID,
		"aws_iam_role":             ByName,
		"aws_cloudwatch_log_group": ByName,
		"aws_eks_node_group":       ByNameInTemplate,
		"aws_iam_role_policy":      ByNameInTemplate,
	}
	got := map[string]Naming{}
	for k := range want {
		got[k] = n[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadNaming(...): -want, +got:\n%s", diff)
	}
}

// TestImmutable checks upjet's refusal message for a ForceNew change.
func TestImmutable(t *testing.T) {
	p := &Provider{}
	cases := map[string]struct {
		reason   string
		tf       string
		old, cur map[string]any
		want     string
	}{
		"InstanceTypes": {
			reason: "A node group's instance types are fixed at CreateNodegroup.",
			tf:     "aws_eks_node_group",
			old:    map[string]any{"instanceTypes": []any{"m6i.large"}, "scalingConfig": map[string]any{"desiredSize": 3}},
			cur:    map[string]any{"instanceTypes": []any{"m7i.large"}, "scalingConfig": map[string]any{"desiredSize": 3}},
			want:   `cannot change the value of the argument "instance_types.0" from "m6i.large" to "m7i.large"`,
		},
		"ScalingInPlace": {
			reason: "Scaling is UpdateNodegroupConfig: applied in place.",
			tf:     "aws_eks_node_group",
			old:    map[string]any{"scalingConfig": map[string]any{"desiredSize": 3}},
			cur:    map[string]any{"scalingConfig": map[string]any{"desiredSize": 4}},
		},
		"LaunchTemplateOnANodeGroupMadeWithout": {
			reason: "EKS takes a launch template only at CreateNodegroup: Terraform marks launch_template.0.name ForceNew.",
			tf:     "aws_eks_node_group",
			old:    map[string]any{"scalingConfig": map[string]any{"desiredSize": 3}},
			cur:    map[string]any{"launchTemplate": map[string]any{"name": "mgmt-pay-nodes", "version": "1"}, "scalingConfig": map[string]any{"desiredSize": 3}},
			want:   `cannot change the value of the argument "launch_template.0.name" from "" to "mgmt-pay-nodes"`,
		},
		"LaunchTemplateVersionInPlace": {
			reason: "A new launch template version is UpdateNodegroupVersion: in place.",
			tf:     "aws_eks_node_group",
			old:    map[string]any{"launchTemplate": map[string]any{"name": "mgmt-pay-nodes", "version": "1"}},
			cur:    map[string]any{"launchTemplate": map[string]any{"name": "mgmt-pay-nodes", "version": "2"}},
		},
		"RouteTarget": {
			reason: "A route's target is ReplaceRoute: in place (natMode reroutes).",
			tf:     "aws_route",
			old:    map[string]any{"natGatewayId": "nat-a", "routeTableId": "rtb-1"},
			cur:    map[string]any{"natGatewayId": "nat-b", "routeTableId": "rtb-1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := p.immutable(tc.tf, changed(tc.old, tc.cur), tc.old, tc.cur)
			if got != tc.want {
				t.Errorf("%s\nimmutable(...): got %q, want %q", tc.reason, got, tc.want)
			}
		})
	}
}

// TestTrusts checks the stand-in STS's reading of a trust policy.
func TestTrusts(t *testing.T) {
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC"},
"Action":"sts:AssumeRoleWithWebIdentity","Condition":{"StringEquals":{"oidc.eks.eu-west-1.amazonaws.com/id/ABC:sub":"system:serviceaccount:external-secrets:external-secrets",
"oidc.eks.eu-west-1.amazonaws.com/id/ABC:aud":"sts.amazonaws.com"}}}]}`
	cases := map[string]struct {
		reason string
		user   string
		auds   []string
		ok     bool
	}{
		"Trusted":       {"The service account and audience the trust policy names.", "system:serviceaccount:external-secrets:external-secrets", []string{"sts.amazonaws.com"}, true},
		"OtherAccount":  {"Another service account is refused.", "system:serviceaccount:team:default", []string{"sts.amazonaws.com"}, false},
		"OtherAudience": {"A token for another audience is refused.", "system:serviceaccount:external-secrets:external-secrets", []string{"https://kubernetes.default.svc"}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := trusts(doc, tc.user, tc.auds)
			if (err == nil) != tc.ok {
				t.Errorf("%s\ntrusts(...): got %v, want ok=%t", tc.reason, err, tc.ok)
			}
		})
	}
}

// TestEKSRefusal checks EKS's rules for clusters, node groups and add-ons:
// versions, and a cluster that is not active yet.
func TestEKSRefusal(t *testing.T) {
	cluster := func(v string) *Resource {
		return &Resource{Kind: "eks.aws.upbound.io/Cluster", Type: "aws_eks_cluster", ID: "mgmt-pay", Name: "mgmt-pay",
			Attrs: map[string]any{"version": v, "region": "eu-west-1"}}
	}
	nodes := func(v string) *Resource {
		return &Resource{Kind: "eks.aws.upbound.io/NodeGroup", Type: "aws_eks_node_group", ID: "mgmt-pay:default", Name: "default",
			Attrs: map[string]any{"version": v, "clusterName": "mgmt-pay", "region": "eu-west-1"}}
	}
	addon := func(v string) *Resource {
		return &Resource{Kind: "eks.aws.upbound.io/Addon", Type: "aws_eks_addon", ID: "mgmt-pay:kube-proxy", Name: "mgmt-pay:kube-proxy",
			Attrs: map[string]any{"addonVersion": v, "addonName": "kube-proxy", "clusterName": "mgmt-pay", "region": "eu-west-1"}}
	}
	creating := func(r *Resource) *Resource {
		r.ReadyAt = time.Now().Add(time.Hour)
		return r
	}
	upgrading := func(r *Resource, from string) *Resource {
		r.Previous, r.UpdatedAt = map[string]any{"version": from}, time.Now().Add(time.Hour)
		return r
	}
	offered := clusterinfo.AddonVersions{"eu-west-1": {
		"1.35": {"kube-proxy": "v1.35.0-eksbuild.1"},
		"1.36": {"kube-proxy": "v1.36.0-eksbuild.1"},
	}}
	cases := map[string]struct {
		reason  string
		account []*Resource // what exists besides old
		old     *Resource   // nil: a create
		args    *Resource   // the arguments asked for (its Attrs)
		want    string      // "" EKS takes it, else a part of AWS's error
	}{
		"ClusterOneMinor": {
			reason:  "The control plane moves one minor version, its nodes at its version.",
			account: []*Resource{nodes("1.35")}, old: cluster("1.35"), args: cluster("1.36"),
		},
		"ClusterSkipsAMinor": {
			reason:  "UpdateClusterVersion moves one minor version at a time.",
			account: []*Resource{nodes("1.34")}, old: cluster("1.34"), args: cluster("1.36"),
			want: "Unsupported Kubernetes minor version update from 1.34 to 1.36",
		},
		"ClusterBeforeNodes": {
			reason:  "The node groups must run the cluster's version first.",
			account: []*Resource{nodes("1.34")}, old: cluster("1.35"), args: cluster("1.36"),
			want: "Nodegroups default must be updated to match cluster version 1.35 before updating cluster version",
		},
		"NodesFollow": {
			reason:  "A node group moves to its cluster's version.",
			account: []*Resource{cluster("1.36")}, old: nodes("1.35"), args: nodes("1.36"),
		},
		"NodesDuringControlPlaneUpgrade": {
			reason:  "EKS reports the old version until UpdateClusterVersion is done.",
			account: []*Resource{upgrading(cluster("1.36"), "1.35")}, old: nodes("1.35"), args: nodes("1.36"),
			want: "Requested Nodegroup Kubernetes version 1.36 is newer than the cluster's version 1.35",
		},
		"ClusterUpgradeRunning": {
			reason:  "One update at a time.",
			account: []*Resource{nodes("1.35")}, old: upgrading(cluster("1.36"), "1.35"), args: cluster("1.37"),
			want: "Cluster mgmt-pay is already being updated to 1.36",
		},
		"NodesBeforeClusterActive": {
			reason:  "CreateNodegroup needs the cluster ACTIVE.",
			account: []*Resource{creating(cluster("1.35"))}, args: nodes("1.35"),
			want: "Cluster 'mgmt-pay' is not in ACTIVE status",
		},
		"AddonBeforeClusterActive": {
			reason:  "So does CreateAddon.",
			account: []*Resource{creating(cluster("1.35"))}, args: addon("v1.35.0-eksbuild.1"),
			want: "Cluster 'mgmt-pay' is not in ACTIVE status",
		},
		"NodesAhead": {
			reason:  "No node group is newer than its control plane.",
			account: []*Resource{cluster("1.35")}, old: nodes("1.35"), args: nodes("1.36"),
			want: "Requested Nodegroup Kubernetes version 1.36 is newer than the cluster's version 1.35",
		},
		"NodesCreatedAhead": {
			reason:  "Nor created newer.",
			account: []*Resource{cluster("1.35")}, args: nodes("1.36"),
			want: "Requested Nodegroup Kubernetes version 1.36",
		},
		"AddonOffered": {
			reason:  "The add-on version listed for the cluster's version.",
			account: []*Resource{cluster("1.36")}, old: addon("v1.35.0-eksbuild.1"), args: addon("v1.36.0-eksbuild.1"),
		},
		"AddonAhead": {
			reason:  "kube-proxy 1.36 is not offered for a 1.35 cluster.",
			account: []*Resource{cluster("1.35")}, args: addon("v1.36.0-eksbuild.1"),
			want: `Addon version v1.36.0-eksbuild.1 of kube-proxy is not supported on Kubernetes 1.35 (DescribeAddonVersions lists "v1.35.0-eksbuild.1")`,
		},
		"AddonWithoutCluster": {
			reason: "An add-on needs its cluster.",
			args:   addon("v1.35.0-eksbuild.1"),
			want:   "No cluster found for name: mgmt-pay",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &Provider{Ledger: NewLedger(), AddonVersions: offered}
			for _, r := range tc.account {
				p.Ledger.put(r)
			}
			if tc.old != nil {
				p.Ledger.put(tc.old)
			}
			got := p.eksRefusal(&session{ledger: p.Ledger}, tc.args.Type, tc.old, tc.args.Attrs)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("%s\neksRefusal(...): got %q, want %q", tc.reason, got, tc.want)
			}
		})
	}
}

// TestUsersOf checks which resources keep AWS from deleting another
// (inUseRefusal): what the delete waits for, and only that.
func TestUsersOf(t *testing.T) {
	res := func(kind, tf, id string, attrs map[string]any) Resource {
		return Resource{Kind: kind, Type: tf, ID: id, Name: id, Attrs: attrs}
	}
	igw := res("ec2.aws.upbound.io/InternetGateway", "aws_internet_gateway", "igw-1", map[string]any{"vpcId": "vpc-1"})
	role := res("iam.aws.upbound.io/Role", "aws_iam_role", "mgmt-spoke-pay-node", map[string]any{})
	cases := map[string]struct {
		reason string
		of     Resource
		others []Resource
		want   []string
	}{
		"InternetGatewayAndPublicNAT": {
			reason: "a public NAT gateway's Elastic IP is a mapped public address in the VPC: DetachInternetGateway refuses",
			of:     igw,
			others: []Resource{
				res("ec2.aws.upbound.io/Subnet", "aws_subnet", "subnet-1", map[string]any{"vpcId": "vpc-1"}),
				res("ec2.aws.upbound.io/NATGateway", "aws_nat_gateway", "nat-1", map[string]any{"subnetId": "subnet-1", "allocationId": "eipalloc-1"}),
			},
			want: []string{"ec2.aws.upbound.io/NATGateway/nat-1"},
		},
		"InternetGatewayAndOtherVPCsNAT": {
			reason: "another VPC's public addresses do not hold this gateway",
			of:     igw,
			others: []Resource{
				res("ec2.aws.upbound.io/Subnet", "aws_subnet", "subnet-2", map[string]any{"vpcId": "vpc-2"}),
				res("ec2.aws.upbound.io/NATGateway", "aws_nat_gateway", "nat-2", map[string]any{"subnetId": "subnet-2"}),
			},
		},
		"InternetGatewayAndPrivateNAT": {
			reason: "a private NAT gateway maps no public address",
			of:     igw,
			others: []Resource{
				res("ec2.aws.upbound.io/Subnet", "aws_subnet", "subnet-1", map[string]any{"vpcId": "vpc-1"}),
				res("ec2.aws.upbound.io/NATGateway", "aws_nat_gateway", "nat-3", map[string]any{"subnetId": "subnet-1", "connectivityType": "private"}),
			},
		},
		"InternetGatewayAndLoadBalancers": {
			reason: "an internet-facing load balancer maps public addresses; an internal one does not",
			of:     igw,
			others: []Resource{
				res(LoadBalancerKind, "aws_lb", "lb-public", map[string]any{"vpcId": "vpc-1", "internal": false}),
				res(LoadBalancerKind, "aws_lb", "lb-internal", map[string]any{"vpcId": "vpc-1", "internal": true}),
			},
			want: []string{LoadBalancerKind + "/lb-public"},
		},
		"RoleWithPolicies": {
			reason: "IAM DeleteRole answers DeleteConflict while policies are inline or attached",
			of:     role,
			others: []Resource{
				res("iam.aws.upbound.io/RolePolicy", "aws_iam_role_policy", "mgmt-spoke-pay-node:cni", map[string]any{"role": "mgmt-spoke-pay-node"}),
				res("iam.aws.upbound.io/RolePolicyAttachment", "aws_iam_role_policy_attachment", "mgmt-spoke-pay-node-1", map[string]any{"role": "mgmt-spoke-pay-node"}),
				res("iam.aws.upbound.io/RolePolicyAttachment", "aws_iam_role_policy_attachment", "mgmt-spoke-pay-lbc-1", map[string]any{"role": "mgmt-spoke-pay-lbc"}),
			},
			want: []string{"iam.aws.upbound.io/RolePolicy/mgmt-spoke-pay-node:cni", "iam.aws.upbound.io/RolePolicyAttachment/mgmt-spoke-pay-node-1"},
		},
		"ElasticIPOfNAT": {
			reason: "EC2 refuses to disassociate an Elastic IP from the NAT gateway that holds it (AuthFailure)",
			of:     res("ec2.aws.upbound.io/EIP", "aws_eip", "eipalloc-1", map[string]any{"domain": "vpc"}),
			others: []Resource{
				res("ec2.aws.upbound.io/NATGateway", "aws_nat_gateway", "nat-1", map[string]any{"subnetId": "subnet-1", "allocationId": "eipalloc-1"}),
				res("ec2.aws.upbound.io/NATGateway", "aws_nat_gateway", "nat-2", map[string]any{"subnetId": "subnet-2", "allocationId": "eipalloc-2"}),
			},
			want: []string{"ec2.aws.upbound.io/NATGateway/nat-1"},
		},
		"RoleAlone": {
			reason: "a role without policies is deleted (the provider removes it from instance profiles itself)",
			of:     role,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := NewLedger()
			of := tc.of
			l.put(&of)
			for i := range tc.others {
				l.put(&tc.others[i])
			}
			got := l.usersOf(&of)
			sort.Strings(got)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nusersOf(%s): -want, +got:\n%s", tc.reason, of.ID, diff)
			}
			if _, refused := inUseRefusal[of.Type]; !refused {
				t.Errorf("%s: usersOf is modelled but AWS's refusal is not (inUseRefusal)", of.Type)
			}
		})
	}
}
