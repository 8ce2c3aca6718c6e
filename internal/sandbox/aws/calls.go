package aws

import (
	"slices"
)

// The AWS calls the provider makes for each Terraform type the fleet
// composes, by operation, as the Terraform AWS provider makes them. The
// provider family builds from github.com/upbound/terraform-provider-aws at
// the commit provider-upjet-aws v2.7.0 pins (70894c6370d2), which neither
// the module proxy nor the source snapshots here hold; the calls are read
// from the fork's newest branch readable here, upjet-v5.31.0 (f2f0fdd638),
// cited by file and line under internal/service/, and where upstream
// changed the call since (CloudWatch Logs tags moved to ListTagsForResource
// and TagResource; EKS access entries came after v5.31), from
// hashicorp/terraform-provider-aws, cited by commit and function.
//
// Every call after a create or an update is followed by the type's read
// (Terraform's Create and Update end in Read, and upjet observes with Read
// on every poll): observe lists it. A type's tags, when its Read does not
// set them, are read by the provider's tagging interceptor
// (internal/provider/intercept.go:305-323, ListTags) and changed through
// UpdateTags (intercept.go:269-275).

// target is a resource IAM authorizes a call on.
type target struct {
	// typ is the resource type as the AWS action catalogue names it for
	// the service ("vpc", "cluster", "role"); "*" for a call IAM
	// authorizes on no resource.
	typ string
	// arg names the argument holding the ID, name or ARN of the resource,
	// a resource of Terraform type tf; empty for the resource itself.
	arg, tf string
}

func self(typ string) target         { return target{typ: typ} }
func ref(typ, arg, tf string) target { return target{typ: typ, arg: arg, tf: tf} }
func anyResource() target            { return target{typ: "*"} }
func on(ts ...target) []target       { return ts }
func onSelf(typ string) []target     { return []target{self(typ)} }
func onAny() []target                { return []target{anyResource()} }

// call is one AWS API call and what IAM evaluates it with.
type call struct {
	action string
	on     []target
	// creates: the call makes the resource (it has no tags of its own
	// yet).
	creates bool
	// tags: the call sends the resource's tags (aws:RequestTag and
	// aws:TagKeys).
	tags bool
	// tagOnCreate: an EC2 create with TagSpecifications, which EC2 also
	// authorizes as ec2:CreateTags with ec2:CreateAction set to the
	// create's action (EC2 user guide, "Grant permission to tag resources
	// during creation").
	tagOnCreate bool
	// keys are the service condition keys AWS sets for the call
	// (keyBoundary, keyPassedToEKS, ...).
	keys []string
	// changed are the arguments an update call is made for (update calls
	// only); "tags" for the tag calls.
	changed []string
	// when reports whether the call is made for these arguments (nil:
	// always).
	when func(args map[string]any) bool
	// oneOf: the catalogue marks several resource types required where
	// the call acts on one of them (DynamoDB's tagging calls: a table, a
	// stream, a backup, ...), so naming one is enough.
	oneOf bool
	// src is where the provider makes it.
	src string
}

// Service condition keys the stand-in sets (requestContext).
const (
	keyBoundary     = "iam:PermissionsBoundary"
	keyPolicyARN    = "iam:PolicyARN"
	keyPassedToEKS  = "iam:PassedToService"
	keyBootstrap    = "eks:bootstrapClusterCreatorAdminPermissions"
	keyPrincipalARN = "eks:principalArn"
	keyPolicyARNEKS = "eks:policyArn"
	keyAccessScope  = "eks:accessScope"
)

// modelledKeys are the service condition keys the stand-in sets: those
// serviceKey gives, and ec2:CreateAction, which callRequests sets on the
// CreateTags of a tag-on-create.
var modelledKeys = []string{keyBoundary, keyPolicyARN, keyPassedToEKS, keyBootstrap, keyPrincipalARN, keyPolicyARNEKS, keyAccessScope, "ec2:CreateAction"}

// typeCalls are the calls of one Terraform type by operation.
type typeCalls struct {
	create, observe, update, delete []call
}

func set(key string) func(map[string]any) bool {
	return func(a map[string]any) bool { v, ok := a[key]; return ok && v != nil && v != false && v != "" }
}

// ec2Tags are EC2's tag calls (internal/service/ec2/tags_gen.go:160,
// updateTags: CreateTags and DeleteTags).
func ec2Tags(typ string) []call {
	return []call{
		{action: "ec2:CreateTags", on: onSelf(typ), tags: true, changed: []string{"tags"}, src: "ec2/tags_gen.go:160"},
		{action: "ec2:DeleteTags", on: onSelf(typ), changed: []string{"tags"}, src: "ec2/tags_gen.go:160"},
	}
}

// eksTags are EKS's (eks/tags_gen.go:85-114, TagResource and UntagResource).
func eksTags(typ string, keys ...string) []call {
	return []call{
		{action: "eks:TagResource", on: onSelf(typ), tags: true, keys: keys, changed: []string{"tags"}, src: "eks/tags_gen.go:114"},
		{action: "eks:UntagResource", on: onSelf(typ), keys: keys, changed: []string{"tags"}, src: "eks/tags_gen.go:99"},
	}
}

// providerCalls are the calls of every Terraform type the fleet composes.
var providerCalls = map[string]typeCalls{
	"aws_vpc": {
		create: []call{
			{action: "ec2:CreateVpc", creates: true, on: onSelf("vpc"), tags: true, tagOnCreate: true, src: "ec2/vpc_.go:185,218"},
			// modifyVPCAttributesOnCreate: DNS hostnames are off by default
			{action: "ec2:ModifyVpcAttribute", on: onSelf("vpc"), when: set("enableDnsHostnames"), src: "ec2/vpc_.go:568-598"},
		},
		observe: []call{
			{action: "ec2:DescribeVpcs", on: onAny(), src: "ec2/vpc_.go:262"},
			{action: "ec2:DescribeVpcAttribute", on: onSelf("vpc"), src: "ec2/vpc_.go:292-308"},
			{action: "ec2:DescribeNetworkAcls", on: onAny(), src: "ec2/vpc_.go:315"},
			{action: "ec2:DescribeRouteTables", on: onAny(), src: "ec2/vpc_.go:321"},
			{action: "ec2:DescribeSecurityGroups", on: onAny(), src: "ec2/vpc_.go:330"},
		},
		update: append([]call{
			{action: "ec2:ModifyVpcAttribute", on: onSelf("vpc"), changed: []string{"enableDnsHostnames", "enableDnsSupport"}, src: "ec2/vpc_.go:381-398"},
		}, ec2Tags("vpc")...),
		delete: []call{{action: "ec2:DeleteVpc", on: onSelf("vpc"), src: "ec2/vpc_.go:454"}},
	},
	"aws_subnet": {
		create: []call{
			{action: "ec2:CreateSubnet", creates: true, on: on(self("subnet"), ref("vpc", "vpcId", "aws_vpc")), tags: true, tagOnCreate: true, src: "ec2/vpc_subnet.go:165,193"},
			{action: "ec2:ModifySubnetAttribute", on: onSelf("subnet"), when: set("mapPublicIpOnLaunch"), src: "ec2/vpc_subnet.go:395,635"},
		},
		observe: []call{{action: "ec2:DescribeSubnets", on: onAny(), src: "ec2/vpc_subnet.go:233"}},
		update: append([]call{
			{action: "ec2:ModifySubnetAttribute", on: onSelf("subnet"), changed: []string{"mapPublicIpOnLaunch"}, src: "ec2/vpc_subnet.go:290,635"},
		}, ec2Tags("subnet")...),
		delete: []call{
			// deleteLingeringENIs (ec2/vpc_network_interface.go:1473)
			{action: "ec2:DescribeNetworkInterfaces", on: onAny(), src: "ec2/vpc_subnet.go:372"},
			{action: "ec2:DeleteSubnet", on: onSelf("subnet"), src: "ec2/vpc_subnet.go:377"},
		},
	},
	"aws_internet_gateway": {
		create: []call{
			{action: "ec2:CreateInternetGateway", creates: true, on: onSelf("internet-gateway"), tags: true, tagOnCreate: true, src: "ec2/vpc_internet_gateway.go:72,76"},
			{action: "ec2:AttachInternetGateway", on: on(self("internet-gateway"), ref("vpc", "vpcId", "aws_vpc")), when: set("vpcId"), src: "ec2/vpc_internet_gateway.go:189-197"},
		},
		observe: []call{{action: "ec2:DescribeInternetGateways", on: onAny(), src: "ec2/vpc_internet_gateway.go:98"}},
		update: append([]call{
			{action: "ec2:DetachInternetGateway", on: on(self("internet-gateway"), ref("vpc", "vpcId", "aws_vpc")), changed: []string{"vpcId"}, src: "ec2/vpc_internet_gateway.go:135,213-221"},
			{action: "ec2:AttachInternetGateway", on: on(self("internet-gateway"), ref("vpc", "vpcId", "aws_vpc")), changed: []string{"vpcId"}, src: "ec2/vpc_internet_gateway.go:135,189-197"},
		}, ec2Tags("internet-gateway")...),
		delete: []call{
			{action: "ec2:DetachInternetGateway", on: on(self("internet-gateway"), ref("vpc", "vpcId", "aws_vpc")), when: set("vpcId"), src: "ec2/vpc_internet_gateway.go:213-221"},
			{action: "ec2:DeleteInternetGateway", on: onSelf("internet-gateway"), src: "ec2/vpc_internet_gateway.go:175"},
		},
	},
	"aws_eip": {
		create:  []call{{action: "ec2:AllocateAddress", creates: true, on: onSelf("elastic-ip"), tags: true, tagOnCreate: true, src: "ec2/ec2_eip.go:143,170"}},
		observe: []call{{action: "ec2:DescribeAddresses", on: onAny(), src: "ec2/ec2_eip.go:209"}},
		update:  ec2Tags("elastic-ip"),
		delete:  []call{{action: "ec2:ReleaseAddress", on: onSelf("elastic-ip"), src: "ec2/ec2_eip.go:302"}},
	},
	"aws_nat_gateway": {
		create: []call{{action: "ec2:CreateNatGateway", creates: true, on: on(self("natgateway"), ref("subnet", "subnetId", "aws_subnet"), ref("elastic-ip", "allocationId", "aws_eip")),
			tags: true, tagOnCreate: true, src: "ec2/vpc_nat_gateway.go:123,154"}},
		observe: []call{{action: "ec2:DescribeNatGateways", on: onAny(), src: "ec2/vpc_nat_gateway.go:174"}},
		update:  ec2Tags("natgateway"),
		delete:  []call{{action: "ec2:DeleteNatGateway", on: onSelf("natgateway"), src: "ec2/vpc_nat_gateway.go:346"}},
	},
	"aws_route_table": {
		create:  []call{{action: "ec2:CreateRouteTable", creates: true, on: on(self("route-table"), ref("vpc", "vpcId", "aws_vpc")), tags: true, tagOnCreate: true, src: "ec2/vpc_route_table.go:172,175"}},
		observe: []call{{action: "ec2:DescribeRouteTables", on: onAny(), src: "ec2/vpc_route_table.go:215"}},
		update:  ec2Tags("route-table"),
		delete: []call{
			{action: "ec2:DescribeRouteTables", on: onAny(), src: "ec2/vpc_route_table.go:352"},
			{action: "ec2:DeleteRouteTable", on: onSelf("route-table"), src: "ec2/vpc_route_table.go:368"},
		},
	},
	"aws_route": {
		create:  []call{{action: "ec2:CreateRoute", on: on(ref("route-table", "routeTableId", "aws_route_table")), src: "ec2/vpc_route.go:246"}},
		observe: []call{{action: "ec2:DescribeRouteTables", on: onAny(), src: "ec2/vpc_route.go:263,270"}},
		update: []call{{action: "ec2:ReplaceRoute", on: on(ref("route-table", "routeTableId", "aws_route_table")),
			changed: []string{"gatewayId", "natGatewayId", "networkInterfaceId", "transitGatewayId", "vpcPeeringConnectionId"}, src: "ec2/vpc_route.go:403"}},
		delete: []call{{action: "ec2:DeleteRoute", on: on(ref("route-table", "routeTableId", "aws_route_table")), src: "ec2/vpc_route.go:450"}},
	},
	"aws_route_table_association": {
		create: []call{{action: "ec2:AssociateRouteTable", on: on(ref("route-table", "routeTableId", "aws_route_table"), ref("subnet", "subnetId", "aws_subnet")),
			src: "ec2/vpc_route_table_association.go:80"}},
		observe: []call{{action: "ec2:DescribeRouteTables", on: onAny(), src: "ec2/vpc_route_table_association.go:103"}},
		update: []call{{action: "ec2:ReplaceRouteTableAssociation", on: on(ref("route-table", "routeTableId", "aws_route_table")),
			changed: []string{"routeTableId"}, src: "ec2/vpc_route_table_association.go:135"}},
		delete: []call{{action: "ec2:DisassociateRouteTable", on: on(ref("route-table", "routeTableId", "aws_route_table"), ref("subnet", "subnetId", "aws_subnet")),
			src: "ec2/vpc_route_table_association.go:161,221"}},
	},
	"aws_launch_template": {
		create: []call{{action: "ec2:CreateLaunchTemplate", creates: true, on: onSelf("launch-template"), tags: true, tagOnCreate: true, src: "ec2/ec2_launch_template.go:987,1000"}},
		observe: []call{
			{action: "ec2:DescribeLaunchTemplates", on: onAny(), src: "ec2/ec2_launch_template.go:1015"},
			{action: "ec2:DescribeLaunchTemplateVersions", on: onAny(), src: "ec2/ec2_launch_template.go:1028"},
		},
		update: append([]call{
			{action: "ec2:CreateLaunchTemplateVersion", on: onSelf("launch-template"), changed: []string{"blockDeviceMappings", "metadataOptions", "tagSpecifications", "userData",
				"imageId", "instanceType", "vpcSecurityGroupIds", "networkInterfaces", "monitoring", "ebsOptimized", "keyName"}, src: "ec2/ec2_launch_template.go:1112"},
			{action: "ec2:ModifyLaunchTemplate", on: onSelf("launch-template"), changed: []string{"defaultVersion", "updateDefaultVersion"}, src: "ec2/ec2_launch_template.go:1132"},
		}, ec2Tags("launch-template")...),
		delete: []call{{action: "ec2:DeleteLaunchTemplate", on: onSelf("launch-template"), src: "ec2/ec2_launch_template.go:1147"}},
	},
	"aws_eks_cluster": {
		create: []call{
			{action: "eks:CreateCluster", creates: true, on: onAny(), tags: true, keys: []string{keyBootstrap}, src: "eks/cluster.go:308,325"},
			// EKS hands the cluster role to the service (EKS user guide,
			// "Amazon EKS cluster IAM role")
			{action: "iam:PassRole", on: on(ref("role", "roleArn", "aws_iam_role")), keys: []string{keyPassedToEKS}, src: "eks/cluster.go:325"},
		},
		observe: []call{{action: "eks:DescribeCluster", on: onSelf("cluster"), src: "eks/cluster.go:374,591"}},
		update: append([]call{
			{action: "eks:UpdateClusterVersion", on: onSelf("cluster"), changed: []string{"version"}, src: "eks/cluster.go:437"},
			{action: "eks:UpdateClusterConfig", on: onSelf("cluster"), changed: []string{"vpcConfig", "enabledClusterLogTypes", "accessConfig", "upgradePolicy", "zonalShiftConfig"}, src: "eks/cluster.go:479,619"},
			{action: "eks:DescribeUpdate", on: onSelf("cluster"), changed: []string{"version", "vpcConfig", "enabledClusterLogTypes", "accessConfig"}, src: "eks/cluster.go:640"},
		}, eksTags("cluster")...),
		delete: []call{{action: "eks:DeleteCluster", on: onSelf("cluster"), src: "eks/cluster.go:548"}},
	},
	"aws_eks_node_group": {
		create: []call{
			{action: "eks:CreateNodegroup", on: on(ref("cluster", "clusterName", "aws_eks_cluster")), tags: true, src: "eks/node_group.go:317,368"},
			{action: "iam:PassRole", on: on(ref("role", "nodeRoleArn", "aws_iam_role")), keys: []string{keyPassedToEKS}, src: "eks/node_group.go:368"},
		},
		observe: []call{{action: "eks:DescribeNodegroup", on: onSelf("nodegroup"), src: "eks/node_group.go:393,588"}},
		update: append([]call{
			{action: "eks:UpdateNodegroupVersion", on: onSelf("nodegroup"), changed: []string{"version", "releaseVersion", "launchTemplate"}, src: "eks/node_group.go:498"},
			{action: "eks:UpdateNodegroupConfig", on: onSelf("nodegroup"), changed: []string{"scalingConfig", "labels", "taint", "updateConfig"}, src: "eks/node_group.go:535"},
			{action: "eks:DescribeUpdate", on: on(ref("cluster", "clusterName", "aws_eks_cluster"), self("nodegroup")), changed: []string{"version", "releaseVersion", "launchTemplate", "scalingConfig", "labels", "taint", "updateConfig"}, src: "eks/node_group.go:615"},
		}, eksTags("nodegroup")...),
		delete: []call{{action: "eks:DeleteNodegroup", on: onSelf("nodegroup"), src: "eks/node_group.go:562"}},
	},
	"aws_eks_addon": {
		create: []call{
			{action: "eks:CreateAddon", on: on(ref("cluster", "clusterName", "aws_eks_cluster")), tags: true, src: "eks/addon.go:140,163"},
			{action: "iam:PassRole", on: on(ref("role", "serviceAccountRoleArn", "aws_iam_role")), keys: []string{keyPassedToEKS}, when: set("serviceAccountRoleArn"), src: "eks/addon.go:163"},
		},
		observe: []call{{action: "eks:DescribeAddon", on: onSelf("addon"), src: "eks/addon.go:210,339"}},
		update: append([]call{
			{action: "eks:UpdateAddon", on: onSelf("addon"), changed: []string{"addonVersion", "configurationValues", "serviceAccountRoleArn", "resolveConflictsOnUpdate", "podIdentityAssociation"}, src: "eks/addon.go:279"},
			{action: "eks:DescribeUpdate", on: on(ref("cluster", "clusterName", "aws_eks_cluster"), self("addon")), changed: []string{"addonVersion", "configurationValues", "serviceAccountRoleArn"}, src: "eks/addon.go:366"},
		}, eksTags("addon")...),
		delete: []call{{action: "eks:DeleteAddon", on: onSelf("addon"), src: "eks/addon.go:320"}},
	},
	// hashicorp/terraform-provider-aws internal/service/eks/access_entry.go
	// (read through the search tools, 28 Nov 2026; line numbers are not
	// given there): resourceAccessEntryCreate (CreateAccessEntry with the
	// tags, retried while the principal is not yet visible),
	// resourceAccessEntryRead (DescribeAccessEntry),
	// resourceAccessEntryUpdate (UpdateAccessEntry),
	// resourceAccessEntryDelete (DeleteAccessEntry).
	"aws_eks_access_entry": {
		create: []call{{action: "eks:CreateAccessEntry", on: on(ref("cluster", "clusterName", "aws_eks_cluster")), tags: true, keys: []string{keyPrincipalARN},
			src: "access_entry.go resourceAccessEntryCreate"}},
		observe: []call{{action: "eks:DescribeAccessEntry", on: onSelf("access-entry"), keys: []string{keyPrincipalARN}, src: "access_entry.go resourceAccessEntryRead"}},
		update: append([]call{{action: "eks:UpdateAccessEntry", on: onSelf("access-entry"), keys: []string{keyPrincipalARN}, changed: []string{"kubernetesGroups", "userName"},
			src: "access_entry.go resourceAccessEntryUpdate"}}, eksTags("access-entry", keyPrincipalARN)...),
		delete: []call{{action: "eks:DeleteAccessEntry", on: onSelf("access-entry"), keys: []string{keyPrincipalARN}, src: "access_entry.go resourceAccessEntryDelete"}},
	},
	// hashicorp/terraform-provider-aws
	// internal/service/eks/access_policy_association.go (read as above):
	// resourceAccessPolicyAssociationCreate (AssociateAccessPolicy),
	// ...Read (ListAssociatedAccessPolicies through
	// findAccessPolicyAssociationByThreePartKey), ...Delete
	// (DisassociateAccessPolicy; ResourceNotFoundException is done).
	"aws_eks_access_policy_association": {
		create: []call{{action: "eks:AssociateAccessPolicy", on: on(ref("access-entry", "principalArn", "aws_eks_access_entry")),
			keys: []string{keyPrincipalARN, keyPolicyARNEKS, keyAccessScope}, src: "access_policy_association.go resourceAccessPolicyAssociationCreate"}},
		observe: []call{{action: "eks:ListAssociatedAccessPolicies", on: on(ref("access-entry", "principalArn", "aws_eks_access_entry")),
			keys: []string{keyPrincipalARN}, src: "access_policy_association.go resourceAccessPolicyAssociationRead"}},
		// eks:accessScope on the disassociation: the catalogue lists it,
		// and the association's own scope is the only one there is.
		delete: []call{{action: "eks:DisassociateAccessPolicy", on: on(ref("access-entry", "principalArn", "aws_eks_access_entry")),
			keys: []string{keyPrincipalARN, keyPolicyARNEKS, keyAccessScope}, src: "access_policy_association.go resourceAccessPolicyAssociationDelete"}},
	},
	"aws_iam_openid_connect_provider": {
		create:  []call{{action: "iam:CreateOpenIDConnectProvider", creates: true, on: onSelf("oidc-provider"), tags: true, src: "iam/openid_connect_provider.go:83,88"}},
		observe: []call{{action: "iam:GetOpenIDConnectProvider", on: onSelf("oidc-provider"), src: "iam/openid_connect_provider.go:124,206"}},
		update: []call{
			{action: "iam:UpdateOpenIDConnectProviderThumbprint", on: onSelf("oidc-provider"), changed: []string{"thumbprintList"}, src: "iam/openid_connect_provider.go:156"},
			{action: "iam:TagOpenIDConnectProvider", on: onSelf("oidc-provider"), tags: true, changed: []string{"tags"}, src: "iam/tags.go:90"},
			{action: "iam:UntagOpenIDConnectProvider", on: onSelf("oidc-provider"), changed: []string{"tags"}, src: "iam/tags.go:77"},
		},
		delete: []call{{action: "iam:DeleteOpenIDConnectProvider", on: onSelf("oidc-provider"), src: "iam/openid_connect_provider.go:186"}},
	},
	"aws_iam_role": {
		create: []call{{action: "iam:CreateRole", creates: true, on: onSelf("role"), tags: true, keys: []string{keyBoundary}, src: "iam/role.go:198,600"}},
		observe: []call{
			{action: "iam:GetRole", on: onSelf("role"), keys: []string{keyBoundary}, src: "iam/role.go:266,632"},
			// readRoleInlinePolicies: ListRolePolicies, then GetRolePolicy for each
			{action: "iam:ListRolePolicies", on: onSelf("role"), src: "iam/role.go:312,692"},
			{action: "iam:ListAttachedRolePolicies", on: onSelf("role"), src: "iam/role.go:328,658"},
		},
		update: []call{
			{action: "iam:UpdateAssumeRolePolicy", on: onSelf("role"), keys: []string{keyBoundary}, changed: []string{"assumeRolePolicy"}, src: "iam/role.go:356"},
			{action: "iam:UpdateRoleDescription", on: onSelf("role"), keys: []string{keyBoundary}, changed: []string{"description"}, src: "iam/role.go:378"},
			{action: "iam:UpdateRole", on: onSelf("role"), keys: []string{keyBoundary}, changed: []string{"maxSessionDuration"}, src: "iam/role.go:391"},
			{action: "iam:PutRolePermissionsBoundary", on: onSelf("role"), keys: []string{keyBoundary}, changed: []string{"permissionsBoundary"}, src: "iam/role.go:406"},
			{action: "iam:TagRole", on: onSelf("role"), tags: true, changed: []string{"tags"}, src: "iam/tags.go:176"},
			{action: "iam:UntagRole", on: onSelf("role"), changed: []string{"tags"}, src: "iam/tags.go:163"},
		},
		delete: []call{
			// deleteRoleInstanceProfiles
			{action: "iam:ListInstanceProfilesForRole", on: onSelf("role"), src: "iam/role.go:563-564"},
			{action: "iam:DeleteRole", on: onSelf("role"), keys: []string{keyBoundary}, src: "iam/role.go:553"},
		},
	},
	"aws_iam_role_policy": {
		create:  []call{{action: "iam:PutRolePolicy", on: on(ref("role", "role", "aws_iam_role")), keys: []string{keyBoundary}, src: "iam/role_policy.go:99"}},
		observe: []call{{action: "iam:GetRolePolicy", on: on(ref("role", "role", "aws_iam_role")), src: "iam/role_policy.go:129,191"}},
		update:  []call{{action: "iam:PutRolePolicy", on: on(ref("role", "role", "aws_iam_role")), keys: []string{keyBoundary}, changed: []string{"policy"}, src: "iam/role_policy.go:82,99"}},
		delete:  []call{{action: "iam:DeleteRolePolicy", on: on(ref("role", "role", "aws_iam_role")), keys: []string{keyBoundary}, src: "iam/role_policy.go:169"}},
	},
	"aws_iam_role_policy_attachment": {
		create:  []call{{action: "iam:AttachRolePolicy", on: on(ref("role", "role", "aws_iam_role")), keys: []string{keyBoundary, keyPolicyARN}, src: "iam/role_policy_attachment.go:125"}},
		observe: []call{{action: "iam:ListAttachedRolePolicies", on: on(ref("role", "role", "aws_iam_role")), src: "iam/role_policy_attachment.go:80,180"}},
		delete:  []call{{action: "iam:DetachRolePolicy", on: on(ref("role", "role", "aws_iam_role")), keys: []string{keyBoundary, keyPolicyARN}, src: "iam/role_policy_attachment.go:140"}},
	},
	// hashicorp/terraform-provider-aws 0073593e7d69
	// internal/service/logs/group.go: resourceGroupCreate (CreateLogGroup
	// with the tags, then PutRetentionPolicy), resourceGroupRead
	// (DescribeLogGroups; tags through the interceptor:
	// ListTagsForResource), resourceGroupUpdate (PutRetentionPolicy),
	// resourceGroupDelete (DeleteLogGroup). v5.31 used the older
	// ListTagsLogGroup, TagLogGroup and UntagLogGroup
	// (logs/log_group_tags_gen.go:24-65).
	"aws_cloudwatch_log_group": {
		create: []call{
			{action: "logs:CreateLogGroup", creates: true, on: onSelf("log-group"), tags: true, src: "logs/group.go resourceGroupCreate"},
			{action: "logs:PutRetentionPolicy", on: onSelf("log-group"), when: set("retentionInDays"), src: "logs/group.go resourceGroupCreate"},
		},
		observe: []call{
			{action: "logs:DescribeLogGroups", on: onAny(), src: "logs/group.go findLogGroupByName"},
			{action: "logs:ListTagsForResource", on: onSelf("log-group"), src: "provider/intercept.go:305-323"},
		},
		update: []call{
			{action: "logs:PutRetentionPolicy", on: onSelf("log-group"), changed: []string{"retentionInDays"}, src: "logs/group.go resourceGroupUpdate"},
			{action: "logs:TagResource", on: onSelf("log-group"), tags: true, changed: []string{"tags"}, src: "provider/intercept.go:269-275"},
			{action: "logs:UntagResource", on: onSelf("log-group"), changed: []string{"tags"}, src: "provider/intercept.go:269-275"},
		},
		delete: []call{{action: "logs:DeleteLogGroup", on: onSelf("log-group"), when: func(a map[string]any) bool { return a["skipDestroy"] != true },
			src: "logs/group.go resourceGroupDelete"}},
	},
	"aws_dynamodb_table": {
		create: []call{{action: "dynamodb:CreateTable", creates: true, on: onSelf("table"), tags: true, src: "dynamodb/table.go:687"}},
		observe: []call{
			{action: "dynamodb:DescribeTable", on: onSelf("table"), src: "dynamodb/table.go:756"},
			{action: "dynamodb:DescribeContinuousBackups", on: onSelf("table"), src: "dynamodb/table.go:847"},
			{action: "dynamodb:DescribeTimeToLive", on: onSelf("table"), src: "dynamodb/table.go:859"},
			{action: "dynamodb:ListTagsOfResource", on: onSelf("table"), oneOf: true, src: "dynamodb/tags_gen.go:49; provider/intercept.go:323"},
		},
		update: []call{
			{action: "dynamodb:UpdateTable", on: onSelf("table"), changed: []string{"deletionProtectionEnabled", "billingMode", "readCapacity", "writeCapacity",
				"streamEnabled", "streamViewType", "globalSecondaryIndex", "serverSideEncryption", "tableClass"}, src: "dynamodb/table.go:926-1002"},
			{action: "dynamodb:UpdateContinuousBackups", on: onSelf("table"), changed: []string{"pointInTimeRecovery"}, src: "dynamodb/table.go:1418"},
			{action: "dynamodb:UpdateTimeToLive", on: onSelf("table"), changed: []string{"ttl"}, src: "dynamodb/table.go:1385"},
			{action: "dynamodb:TagResource", on: onSelf("table"), oneOf: true, tags: true, changed: []string{"tags"}, src: "dynamodb/tags_gen.go:132"},
			{action: "dynamodb:UntagResource", on: onSelf("table"), oneOf: true, changed: []string{"tags"}, src: "dynamodb/tags_gen.go:146"},
		},
		delete: []call{{action: "dynamodb:DeleteTable", on: onSelf("table"), src: "dynamodb/table.go:1660"}},
	},
	"aws_sqs_queue": {
		create: []call{{action: "sqs:CreateQueue", creates: true, on: onSelf("queue"), tags: true, src: "sqs/queue.go:228"}},
		observe: []call{
			{action: "sqs:GetQueueAttributes", on: onSelf("queue"), src: "sqs/queue.go:271,449"},
			{action: "sqs:ListQueueTags", on: onSelf("queue"), src: "sqs/tags_gen.go:26; provider/intercept.go:323"},
		},
		update: []call{
			{action: "sqs:SetQueueAttributes", on: onSelf("queue"), changed: []string{"delaySeconds", "maxMessageSize", "messageRetentionSeconds", "policy",
				"receiveWaitTimeSeconds", "redrivePolicy", "redriveAllowPolicy", "visibilityTimeout", "kmsMasterKeyId", "sqsManagedSseEnabled"}, src: "sqs/queue.go:324"},
			{action: "sqs:TagQueue", on: onSelf("queue"), tags: true, changed: []string{"tags"}, src: "sqs/tags_gen.go:94"},
			{action: "sqs:UntagQueue", on: onSelf("queue"), changed: []string{"tags"}, src: "sqs/tags_gen.go:108"},
		},
		delete: []call{{action: "sqs:DeleteQueue", on: onSelf("queue"), src: "sqs/queue.go:342"}},
	},
}

// updateCalls are the calls an update of the diff arguments makes, and
// the arguments no call of the type is made for.
func updateCalls(tf string, diff []string) (out []call, unmodelled []string) {
	tc := providerCalls[tf]
	for _, k := range diff {
		if k == "region" {
			continue
		}
		found := false
		for _, c := range tc.update {
			if slices.Contains(c.changed, k) {
				found = true
				if !slices.ContainsFunc(out, func(o call) bool { return o.action == c.action }) {
					out = append(out, c)
				}
			}
		}
		if !found {
			unmodelled = append(unmodelled, k)
		}
	}
	return out, unmodelled
}
