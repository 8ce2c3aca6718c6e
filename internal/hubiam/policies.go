package hubiam

import (
	"fmt"
	"slices"

	"github.com/gitops-fleet/eks-fleet/internal/clusterinfo"
)

// Env is where the hub runs: the values every ARN in the documents is built from.
type Env struct {
	Partition string // aws, aws-cn, aws-us-gov
	AccountID string
	Region    string // the hub's region (the sealing secret lives there)
	HubName   string
}

// Names of the hub's IAM roles and of the spoke boundary policy. They are
// derived from the hub name so two hubs can share an account.
func CrossplaneRoleName(hub string) string      { return hub + "-crossplane-aws" }
func ExternalSecretsRoleName(hub string) string { return hub + "-external-secrets" }
func FluxRoleName(hub string) string            { return hub + "-flux" }
func BoundaryPolicyName(hub string) string      { return hub + "-spoke-boundary" }

// SpokeRolePrefix is the name prefix of every role the hub's Crossplane may
// create (clusterinfo.SpokeRolePrefixFor).
func (e Env) SpokeRolePrefix() string { return clusterinfo.SpokeRolePrefixFor(e.HubName) }

// SpokeRoleARNPattern matches every spoke role and nothing else.
func (e Env) SpokeRoleARNPattern() string {
	return fmt.Sprintf("arn:%s:iam::%s:role/%s*", e.Partition, e.AccountID, e.SpokeRolePrefix())
}

// BoundaryARN is the ARN of the spoke permissions boundary policy.
func (e Env) BoundaryARN() string {
	return fmt.Sprintf("arn:%s:iam::%s:policy/%s", e.Partition, e.AccountID, BoundaryPolicyName(e.HubName))
}

// ClusterARNPattern matches the EKS clusters of the fleet (spokes are named
// <hub>-<spoke>) in any region.
func (e Env) ClusterARNPattern() string {
	return fmt.Sprintf("arn:%s:eks:*:%s:cluster/%s-*", e.Partition, e.AccountID, e.HubName)
}

func (e Env) managedPolicy(name string) string {
	return fmt.Sprintf("arn:%s:iam::aws:policy/%s", e.Partition, name)
}

// Validate reports an Env that would build ARNs with holes.
func (e Env) Validate() error {
	for k, v := range map[string]string{"Partition": e.Partition, "AccountID": e.AccountID, "Region": e.Region, "HubName": e.HubName} {
		if v == "" {
			return fmt.Errorf("hubiam.Env.%s is empty", k)
		}
	}
	return nil
}

// IAM write actions on spoke roles that must carry the spoke boundary: IAM
// evaluates iam:PermissionsBoundary on exactly these.
var boundedRoleWrites = []string{
	"iam:AttachRolePolicy",
	"iam:CreateRole",
	"iam:DeleteRolePolicy",
	"iam:DetachRolePolicy",
	"iam:PutRolePermissionsBoundary",
	"iam:PutRolePolicy",
}

// Role actions that do not widen what a role may do.
var roleHousekeeping = []string{
	"iam:DeleteRole",
	"iam:GetRole",
	"iam:GetRolePolicy",
	"iam:ListAttachedRolePolicies",
	"iam:ListInstanceProfilesForRole",
	"iam:ListRolePolicies",
	"iam:ListRoleTags",
	"iam:TagRole",
	"iam:UntagRole",
	"iam:UpdateAssumeRolePolicy",
	"iam:UpdateRole",
	"iam:UpdateRoleDescription",
}

// boundaryGuard keeps every role under the prefix inside the boundary: its
// boundary can be neither removed nor swapped, and the boundary policy
// itself cannot be edited by whoever holds these documents.
func (e Env) boundaryGuard() []Statement {
	return []Statement{
		{
			Sid:      "DenyBoundaryRemoval",
			Effect:   Deny,
			Action:   []string{"iam:DeleteRolePermissionsBoundary"},
			Resource: []string{"*"},
		},
		{
			Sid:       "DenyOtherBoundary",
			Effect:    Deny,
			Action:    slices.Clone(boundedRoleWrites),
			Resource:  []string{"*"},
			Condition: map[string]map[string]any{"StringNotEquals": {"iam:PermissionsBoundary": e.BoundaryARN()}},
		},
		{
			Sid:    "DenyBoundaryPolicyEdit",
			Effect: Deny,
			Action: []string{
				"iam:CreatePolicyVersion", "iam:DeletePolicy", "iam:DeletePolicyVersion",
				"iam:SetDefaultPolicyVersion", "iam:TagPolicy", "iam:UntagPolicy",
			},
			Resource: []string{e.BoundaryARN()},
		},
	}
}

// spokeRoleWrites lets the holder manage roles named SPOKE_ROLE_PREFIX*,
// only with the spoke boundary attached.
func (e Env) spokeRoleWrites() []Statement {
	return []Statement{
		{
			Sid:       "SpokeRoleWritesWithBoundary",
			Effect:    Allow,
			Action:    slices.Clone(boundedRoleWrites),
			Resource:  []string{e.SpokeRoleARNPattern()},
			Condition: map[string]map[string]any{"StringEquals": {"iam:PermissionsBoundary": e.BoundaryARN()}},
		},
		{
			Sid:      "SpokeRoleHousekeeping",
			Effect:   Allow,
			Action:   slices.Clone(roleHousekeeping),
			Resource: []string{e.SpokeRoleARNPattern()},
		},
	}
}

// CrossplaneActions returns the EC2, EKS and IAM actions the WorkloadCluster
// composition needs, by managed resource kind group. The manifests'
// provider family (provider-aws-ec2, -eks, -iam) must not need more.
var (
	crossplaneEC2Actions = []string{
		// VPC
		"ec2:CreateVpc", "ec2:DeleteVpc", "ec2:ModifyVpcAttribute", "ec2:DescribeVpcs", "ec2:DescribeVpcAttribute",
		// Subnet
		"ec2:CreateSubnet", "ec2:DeleteSubnet", "ec2:ModifySubnetAttribute", "ec2:DescribeSubnets",
		// InternetGateway
		"ec2:CreateInternetGateway", "ec2:DeleteInternetGateway", "ec2:AttachInternetGateway",
		"ec2:DetachInternetGateway", "ec2:DescribeInternetGateways",
		// EIP
		"ec2:AllocateAddress", "ec2:ReleaseAddress", "ec2:DisassociateAddress", "ec2:DescribeAddresses",
		"ec2:DescribeAddressesAttribute",
		// NATGateway
		"ec2:CreateNatGateway", "ec2:DeleteNatGateway", "ec2:DescribeNatGateways",
		// RouteTable, Route, RouteTableAssociation
		"ec2:CreateRouteTable", "ec2:DeleteRouteTable", "ec2:DescribeRouteTables",
		"ec2:CreateRoute", "ec2:DeleteRoute", "ec2:ReplaceRoute",
		"ec2:AssociateRouteTable", "ec2:DisassociateRouteTable", "ec2:ReplaceRouteTableAssociation",
		// tags and the reads Terraform's AWS provider makes while refreshing the above
		"ec2:CreateTags", "ec2:DeleteTags", "ec2:DescribeTags",
		"ec2:DescribeAvailabilityZones", "ec2:DescribeAccountAttributes", "ec2:DescribeNetworkInterfaces",
		"ec2:DescribeNetworkAcls", "ec2:DescribeSecurityGroups", "ec2:DescribePrefixLists",
	}
	crossplaneEKSActions = []string{
		// Cluster
		"eks:CreateCluster", "eks:DeleteCluster", "eks:DescribeCluster", "eks:UpdateClusterConfig",
		"eks:UpdateClusterVersion", "eks:DescribeUpdate", "eks:ListUpdates",
		// NodeGroup
		"eks:CreateNodegroup", "eks:DeleteNodegroup", "eks:DescribeNodegroup",
		"eks:UpdateNodegroupConfig", "eks:UpdateNodegroupVersion",
		// AccessEntry, AccessPolicyAssociation
		"eks:CreateAccessEntry", "eks:DeleteAccessEntry", "eks:DescribeAccessEntry", "eks:UpdateAccessEntry",
		"eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy", "eks:ListAssociatedAccessPolicies",
		// tags
		"eks:TagResource", "eks:UntagResource", "eks:ListTagsForResource",
	}
	crossplaneOIDCActions = []string{
		"iam:CreateOpenIDConnectProvider", "iam:DeleteOpenIDConnectProvider", "iam:GetOpenIDConnectProvider",
		"iam:TagOpenIDConnectProvider", "iam:UntagOpenIDConnectProvider",
		"iam:UpdateOpenIDConnectProviderThumbprint",
		"iam:AddClientIDToOpenIDConnectProvider", "iam:RemoveClientIDFromOpenIDConnectProvider",
	}
)

// Crossplane is the policy of the hub's Crossplane AWS providers (role
// CROSSPLANE_ROLE_ARN): exactly what the WorkloadCluster composition
// manages. IAM writes reach only roles named SPOKE_ROLE_PREFIX* and only with
// the spoke boundary, so Crossplane cannot mint a role stronger than the
// boundary; iam:PassRole hands only those roles to EKS and EC2.
func Crossplane(e Env) Document {
	eksResources := []string{
		e.ClusterARNPattern(),
		fmt.Sprintf("arn:%s:eks:*:%s:nodegroup/%s-*/*/*", e.Partition, e.AccountID, e.HubName),
		fmt.Sprintf("arn:%s:eks:*:%s:access-entry/%s-*/*", e.Partition, e.AccountID, e.HubName),
	}
	st := []Statement{
		{Sid: "Network", Effect: Allow, Action: slices.Clone(crossplaneEC2Actions), Resource: []string{"*"}},
		{Sid: "SpokeClusters", Effect: Allow, Action: slices.Clone(crossplaneEKSActions), Resource: eksResources},
		{
			Sid:      "SpokeOIDCProviders",
			Effect:   Allow,
			Action:   slices.Clone(crossplaneOIDCActions),
			Resource: []string{fmt.Sprintf("arn:%s:iam::%s:oidc-provider/oidc.eks.*", e.Partition, e.AccountID)},
		},
		{
			Sid:      "PassSpokeRoles",
			Effect:   Allow,
			Action:   []string{"iam:PassRole"},
			Resource: []string{e.SpokeRoleARNPattern()},
			Condition: map[string]map[string]any{"StringEquals": {
				"iam:PassedToService": []string{"eks.amazonaws.com", "ec2.amazonaws.com"},
			}},
		},
		{
			Sid:      "EKSServiceLinkedRoles",
			Effect:   Allow,
			Action:   []string{"iam:CreateServiceLinkedRole"},
			Resource: []string{fmt.Sprintf("arn:%s:iam::%s:role/aws-service-role/*", e.Partition, e.AccountID)},
			Condition: map[string]map[string]any{"StringEquals": {
				"iam:AWSServiceName": []string{"eks.amazonaws.com", "eks-nodegroup.amazonaws.com"},
			}},
		},
	}
	st = append(st, e.spokeRoleWrites()...)
	st = append(st, e.boundaryGuard()...)
	return NewDocument(st...)
}

// sealingRead lets the holder read the sealing keys and nothing else.
func sealingRead(e Env, sid, secretARN, kmsKeyARN string) []Statement {
	return []Statement{
		{
			Sid:      sid + "Secret",
			Effect:   Allow,
			Action:   []string{"secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"},
			Resource: []string{secretARN},
		},
		{
			Sid:      sid + "Key",
			Effect:   Allow,
			Action:   []string{"kms:Decrypt"},
			Resource: []string{kmsKeyARN},
			Condition: map[string]map[string]any{"StringEquals": {
				"kms:ViaService": fmt.Sprintf("secretsmanager.%s.amazonaws.com", e.Region),
			}},
		},
	}
}

// ExternalSecrets is the policy of the hub's External Secrets Operator (role
// ESO_ROLE_ARN): read the sealing secret, decrypt it through Secrets Manager.
func ExternalSecrets(e Env, secretARN, kmsKeyARN string) Document {
	return NewDocument(sealingRead(e, "SealingKey", secretARN, kmsKeyARN)...)
}

// Flux is the policy of the hub's Flux controllers that apply onto spokes,
// kustomize-controller and helm-controller (role FLUX_ROLE_ARN):
// kubeConfig.configMapRef with provider aws calls eks:DescribeCluster on each
// spoke before it asks for a token.
func Flux(e Env) Document {
	return NewDocument(Statement{
		Sid:      "DescribeFleetClusters",
		Effect:   Allow,
		Action:   []string{"eks:DescribeCluster"},
		Resource: []string{e.ClusterARNPattern()},
	})
}

// SpokeBoundary is the permissions boundary every spoke role carries
// (SPOKE_PERMISSIONS_BOUNDARY_ARN): the most any spoke role may ever do,
// whatever policy Crossplane attaches to it.
func SpokeBoundary(e Env, secretARN, kmsKeyARN string) Document {
	st := []Statement{
		{
			// AmazonEKSClusterPolicy, AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy.
			Sid:    "EKSClusterAndNodes",
			Effect: Allow,
			Action: []string{
				"autoscaling:DescribeAutoScalingGroups", "autoscaling:UpdateAutoScalingGroup",
				"ec2:AssignIpv6Addresses", "ec2:AssignPrivateIpAddresses", "ec2:AttachNetworkInterface",
				"ec2:AttachVolume", "ec2:AuthorizeSecurityGroupIngress", "ec2:CreateNetworkInterface",
				"ec2:CreateNetworkInterfacePermission", "ec2:CreateRoute", "ec2:CreateSecurityGroup",
				"ec2:CreateTags", "ec2:CreateVolume", "ec2:DeleteNetworkInterface", "ec2:DeleteRoute",
				"ec2:DeleteSecurityGroup", "ec2:DeleteVolume", "ec2:Describe*", "ec2:DetachNetworkInterface",
				"ec2:DetachVolume", "ec2:ModifyInstanceAttribute", "ec2:ModifyNetworkInterfaceAttribute",
				"ec2:ModifyVolume", "ec2:RevokeSecurityGroupIngress", "ec2:UnassignIpv6Addresses",
				"ec2:UnassignPrivateIpAddresses",
				"eks:DescribeCluster", "eks:ListClusters", "eks-auth:AssumeRoleForPodIdentity",
				"kms:CreateGrant", "kms:DescribeKey",
			},
			Resource: []string{"*"},
		},
		{
			// AmazonEC2ContainerRegistryReadOnly.
			Sid:    "ECRRead",
			Effect: Allow,
			Action: []string{
				"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:DescribeImages",
				"ecr:DescribeRepositories", "ecr:GetAuthorizationToken", "ecr:GetDownloadUrlForLayer",
				"ecr:GetRepositoryPolicy", "ecr:ListImages",
			},
			Resource: []string{"*"},
		},
		{
			Sid:      "EKSServiceLinkedRoles",
			Effect:   Allow,
			Action:   []string{"iam:CreateServiceLinkedRole"},
			Resource: []string{fmt.Sprintf("arn:%s:iam::%s:role/aws-service-role/*", e.Partition, e.AccountID)},
			Condition: map[string]map[string]any{"StringEquals": {
				"iam:AWSServiceName": []string{"eks.amazonaws.com", "eks-nodegroup.amazonaws.com", "elasticloadbalancing.amazonaws.com"},
			}},
		},
		{
			// AWS Load Balancer Controller (its published IAM policy).
			Sid:    "LoadBalancerController",
			Effect: Allow,
			Action: []string{
				"elasticloadbalancing:AddListenerCertificates", "elasticloadbalancing:AddTags",
				"elasticloadbalancing:CreateListener", "elasticloadbalancing:CreateLoadBalancer",
				"elasticloadbalancing:CreateRule", "elasticloadbalancing:CreateTargetGroup",
				"elasticloadbalancing:DeleteListener", "elasticloadbalancing:DeleteLoadBalancer",
				"elasticloadbalancing:DeleteRule", "elasticloadbalancing:DeleteTargetGroup",
				"elasticloadbalancing:DeregisterTargets", "elasticloadbalancing:Describe*",
				"elasticloadbalancing:ModifyListener", "elasticloadbalancing:ModifyListenerAttributes",
				"elasticloadbalancing:ModifyLoadBalancerAttributes", "elasticloadbalancing:ModifyRule",
				"elasticloadbalancing:ModifyTargetGroup", "elasticloadbalancing:ModifyTargetGroupAttributes",
				"elasticloadbalancing:RegisterTargets", "elasticloadbalancing:RemoveListenerCertificates",
				"elasticloadbalancing:RemoveTags", "elasticloadbalancing:SetIpAddressType",
				"elasticloadbalancing:SetSecurityGroups", "elasticloadbalancing:SetSubnets",
				"elasticloadbalancing:SetWebAcl", "elasticloadbalancing:ModifyCapacityReservation",
				"elasticloadbalancing:ModifyIpPools",
				// the in-tree service controller (AmazonEKSClusterPolicy), classic ELBs
				"elasticloadbalancing:ApplySecurityGroupsToLoadBalancer",
				"elasticloadbalancing:AttachLoadBalancerToSubnets", "elasticloadbalancing:ConfigureHealthCheck",
				"elasticloadbalancing:CreateLoadBalancerListeners", "elasticloadbalancing:CreateLoadBalancerPolicy",
				"elasticloadbalancing:DeleteLoadBalancerListeners",
				"elasticloadbalancing:DeregisterInstancesFromLoadBalancer",
				"elasticloadbalancing:DetachLoadBalancerFromSubnets",
				"elasticloadbalancing:RegisterInstancesWithLoadBalancer",
				"elasticloadbalancing:SetLoadBalancerPoliciesForBackendServer",
				"elasticloadbalancing:SetLoadBalancerPoliciesOfListener",
				"ec2:DeleteTags", "ec2:GetCoipPoolUsage", "ec2:GetIpamPoolCidrs", "ec2:GetSecurityGroupsForVpc",
				"acm:DescribeCertificate", "acm:ListCertificates",
				"cognito-idp:DescribeUserPoolClient",
				"iam:GetServerCertificate", "iam:ListServerCertificates",
				"shield:CreateProtection", "shield:DeleteProtection", "shield:DescribeProtection",
				"shield:GetSubscriptionState",
				"waf-regional:AssociateWebACL", "waf-regional:DisassociateWebACL",
				"waf-regional:GetWebACL", "waf-regional:GetWebACLForResource",
				"wafv2:AssociateWebACL", "wafv2:DisassociateWebACL", "wafv2:GetWebACL", "wafv2:GetWebACLForResource",
			},
			Resource: []string{"*"},
		},
		{
			// A spoke's Crossplane manages its applications' tables and queues.
			Sid:      "AppTables",
			Effect:   Allow,
			Action:   []string{"dynamodb:*"},
			Resource: []string{fmt.Sprintf("arn:%s:dynamodb:*:%s:table/*", e.Partition, e.AccountID)},
		},
		{
			// Listing calls that IAM only grants on "*".
			Sid:      "AppDataList",
			Effect:   Allow,
			Action:   []string{"dynamodb:DescribeLimits", "dynamodb:ListTables", "sqs:ListQueues"},
			Resource: []string{"*"},
		},
		{
			Sid:      "AppQueues",
			Effect:   Allow,
			Action:   []string{"sqs:*"},
			Resource: []string{fmt.Sprintf("arn:%s:sqs:*:%s:*", e.Partition, e.AccountID)},
		},
	}
	st = append(st, sealingRead(e, "SealingKeyRead", secretARN, kmsKeyARN)...)
	// A spoke's Crossplane makes its applications' IRSA roles, inside the same fence.
	st = append(st, e.spokeRoleWrites()...)
	st = append(st, e.boundaryGuard()...)
	return NewDocument(st...)
}
