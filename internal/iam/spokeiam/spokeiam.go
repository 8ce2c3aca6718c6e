// Package spokeiam builds the IAM roles the hub composes for one spoke: their
// names, trust policies, inline policies, managed policy attachments and the
// permissions boundary they carry. The composition function
// (functions/workload-cluster) composes exactly these, `fleet iam` prints
// them and the IAM evaluation tests read them, so every spoke IAM fact lives
// here, built with the same document builder as the hub's policies
// (internal/iam/hubiam).
package spokeiam

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Spoke is everything the documents of one spoke depend on.
type Spoke struct {
	// Hub is where the hub runs (partition, account, region, hub name).
	Hub hubiam.Env
	// Name is the spoke's (claim's) name.
	Name string
	// OIDCIssuer is the spoke cluster's OIDC issuer without https://
	// (oidc.eks.<region>.amazonaws.com/id/<id>). Empty until the cluster
	// reports it; roles that trust it are left out until then.
	OIDCIssuer string
	// AdminPrincipalARNs may assume the spoke's admin role. Empty: only the
	// hub's Flux role may.
	AdminPrincipalARNs []string
	// FluxRoleARN is the hub's Flux role (cluster-info FLUX_ROLE_ARN).
	FluxRoleARN string
	// SubnetIDs are the spoke's subnets as AWS reports them: the only ones
	// its roles may put a load balancer into (SubnetFence). Empty until
	// AWS reports one: then no load balancer may be made.
	SubnetIDs []string
}

// Role keys: the part of each role's name after the spoke, and the value of
// the eksfleet.io/role label on the composed Role.
const (
	RoleCluster    = "cluster"
	RoleNode       = "node"
	RoleCrossplane = "crossplane"
	RoleLBC        = "lbc"
	RoleAdmin      = "admin"
)

// RoleKeys lists every role key in the order the roles are built.
func RoleKeys() []string {
	return []string{RoleCluster, RoleNode, RoleCrossplane, RoleLBC, RoleAdmin}
}

// Role is one IAM role composed for a spoke.
type Role struct {
	// Key is one of the Role* constants.
	Key string
	// Name is the AWS role name.
	Name string
	// Description is the role's IAM description.
	Description string
	// IRSA marks roles whose trust is the spoke's OIDC provider.
	IRSA bool
	// Trust is the assume-role policy.
	Trust policydoc.Document
	// Inline is the role's inline policy; nil when it has none. Its
	// RolePolicy is named after the role key.
	Inline *policydoc.Document
	// ManagedPolicyARNs are attached AWS managed policies, each with the
	// name suffix of its RolePolicyAttachment.
	ManagedPolicyARNs []ManagedPolicy
	// BoundaryARN is the permissions boundary the role carries.
	BoundaryARN string
	// Tags must be set on the role when it is created: the boundary reads
	// the spoke (and, for IRSA roles, the OIDC issuer) from them.
	Tags map[string]string
}

// ManagedPolicy is an attached managed policy.
type ManagedPolicy struct {
	// Suffix names the attachment (<spoke>-<role key>-<suffix>).
	Suffix string
	ARN    string
}

// Validate reports a Spoke that would build documents with holes.
func (s Spoke) Validate() error {
	var errs []error
	if err := s.Hub.Validate(); err != nil {
		errs = append(errs, err)
	}
	for k, v := range map[string]string{
		"Name": s.Name, "FluxRoleARN": s.FluxRoleARN,
	} {
		if v == "" {
			errs = append(errs, fmt.Errorf("spokeiam.Spoke.%s is empty", k))
		}
	}
	return errors.Join(errs...)
}

// RoleName is the AWS name of the spoke's role key.
func RoleName(hub hubiam.Env, spoke, key string) string {
	return hub.SpokeRolePrefix() + spoke + "-" + key
}

// RoleARN is the ARN of the spoke's role key.
func RoleARN(hub hubiam.Env, spoke, key string) string {
	return fmt.Sprintf("arn:%s:iam::%s:role/%s", hub.Partition, hub.AccountID, RoleName(hub, spoke, key))
}

// AppRolePrefix is the name prefix of the roles the spoke's own Crossplane
// may create for its apps (AppInfrastructure): <hub>-spoke-<spoke>_. No DNS
// label contains '_', so no other spoke's prefix covers these names.
func AppRolePrefix(hub hubiam.Env, spoke string) string {
	return hub.SpokeRolePrefix() + spoke + fence.MintedRoleSeparator
}

// AppDataPrefix is the name prefix of the DynamoDB tables and SQS queues the
// spoke's own Crossplane may create: <hub>-<spoke>_.
func AppDataPrefix(hub hubiam.Env, spoke string) string {
	return ClusterName(hub, spoke) + fence.MintedRoleSeparator
}

// ClusterName is the spoke's EKS cluster name.
func ClusterName(hub hubiam.Env, spoke string) string { return hub.HubName + "-" + spoke }

// ClusterARN is the spoke's EKS cluster ARN in region.
func ClusterARN(hub hubiam.Env, region, spoke string) string {
	return fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", hub.Partition, region, hub.AccountID, ClusterName(hub, spoke))
}

// OIDCProviderARN is the ARN of the spoke's IAM OIDC provider.
func (s Spoke) OIDCProviderARN() string {
	return fmt.Sprintf("arn:%s:iam::%s:oidc-provider/%s", s.Hub.Partition, s.Hub.AccountID, s.OIDCIssuer)
}

// Roles returns every role of the spoke, in RoleKeys order. IRSA roles are
// left out while s.OIDCIssuer is empty.
func Roles(s Spoke) ([]Role, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var roles []Role
	for _, key := range RoleKeys() {
		r := s.role(key)
		if r.IRSA && s.OIDCIssuer == "" {
			continue
		}
		roles = append(roles, r)
	}
	return roles, nil
}

func (s Spoke) role(key string) Role {
	r := Role{
		Key:         key,
		Name:        RoleName(s.Hub, s.Name, key),
		Description: fmt.Sprintf("%s: %s role, managed by the hub's WorkloadCluster composition", s.Name, key),
		BoundaryARN: s.Hub.BoundaryARN(),
		Tags:        map[string]string{fence.TagSpoke: s.Name, fence.TagCluster: ClusterName(s.Hub, s.Name)},
	}
	switch key {
	case RoleCluster:
		r.Trust = serviceTrust("eks.amazonaws.com", "sts:AssumeRole", "sts:TagSession")
		r.ManagedPolicyARNs = []ManagedPolicy{{Suffix: "eks", ARN: s.managed("AmazonEKSClusterPolicy")}}
		// AmazonEKSClusterPolicy lets EKS's cloud controller make load
		// balancers in any subnet.
		r.Inline = ptr(policydoc.NewDocument(SubnetFence(s.SubnetIDs)...))
	case RoleNode:
		r.Trust = serviceTrust("ec2.amazonaws.com", "sts:AssumeRole")
		r.ManagedPolicyARNs = []ManagedPolicy{
			{Suffix: "worker", ARN: s.managed("AmazonEKSWorkerNodePolicy")},
			{Suffix: "cni", ARN: s.managed("AmazonEKS_CNI_Policy")},
			{Suffix: "ecr", ARN: s.managed("AmazonEC2ContainerRegistryReadOnly")},
		}
	case RoleCrossplane:
		r.IRSA = true
		r.Trust = s.irsaTrust(serviceaccounts.SpokeCrossplaneAWS)
		r.Inline = ptr(s.crossplanePolicy())
	case RoleLBC:
		r.IRSA = true
		r.Trust = s.irsaTrust(serviceaccounts.SpokeLoadBalancerControl)
		r.Inline = ptr(LoadBalancerControllerPolicy(s.Hub, s.Name, s.SubnetIDs))
	case RoleAdmin:
		r.Trust = s.adminTrust()
		r.Inline = ptr(policydoc.NewDocument(policydoc.Statement{
			Effect: policydoc.Allow, Action: []string{"eks:DescribeCluster", "eks:ListClusters"},
			Resource: []string{fmt.Sprintf("arn:%s:eks:*:%s:cluster/%s", s.Hub.Partition, s.Hub.AccountID, ClusterName(s.Hub, s.Name))},
		}))
	}
	if r.IRSA {
		r.Tags[fence.TagOIDC] = s.OIDCIssuer
	}
	return r
}

func (s Spoke) managed(name string) string {
	return fmt.Sprintf("arn:%s:iam::aws:policy/%s", s.Hub.Partition, name)
}

func serviceTrust(service string, actions ...string) policydoc.Document {
	return policydoc.NewDocument(policydoc.Statement{
		Effect: policydoc.Allow, Principal: map[string]any{"Service": service}, Action: actions,
	})
}

// irsaTrust trusts the spoke's OIDC provider for sa: StringEquals for an
// exact account, StringLike for a prefix.
func (s Spoke) irsaTrust(sa serviceaccounts.ServiceAccount) policydoc.Document {
	cond := map[string]map[string]any{
		"StringEquals": {s.OIDCIssuer + ":aud": "sts.amazonaws.com"},
	}
	if sa.Prefix {
		cond["StringLike"] = map[string]any{s.OIDCIssuer + ":sub": sa.Subject()}
	} else {
		cond["StringEquals"][s.OIDCIssuer+":sub"] = sa.Subject()
	}
	return policydoc.NewDocument(policydoc.Statement{
		Effect:    policydoc.Allow,
		Principal: map[string]any{"Federated": s.OIDCProviderARN()},
		Action:    []string{"sts:AssumeRoleWithWebIdentity"},
		Condition: cond,
	})
}

// adminTrust lets the claim's admin principals assume the admin role; with
// none, only the hub's Flux role.
func (s Spoke) adminTrust() policydoc.Document {
	if len(s.AdminPrincipalARNs) == 0 {
		return policydoc.NewDocument(policydoc.Statement{
			Effect: policydoc.Allow, Principal: map[string]any{"AWS": s.FluxRoleARN}, Action: []string{"sts:AssumeRole"},
		})
	}
	return policydoc.NewDocument(policydoc.Statement{
		Effect: policydoc.Allow, Principal: map[string]any{"AWS": slices.Clone(s.AdminPrincipalARNs)},
		Action: []string{"sts:AssumeRole", "sts:TagSession"},
	})
}

// crossplanePolicy lets the spoke's Crossplane manage its apps' tables,
// queues and roles: names <hub>-<spoke>_* and <hub>-spoke-<spoke>_*, roles
// created only with the boundary and the spoke's own fence tags.
func (s Spoke) crossplanePolicy() policydoc.Document {
	p, acct := s.Hub.Partition, s.Hub.AccountID
	appRoles := fmt.Sprintf("arn:%s:iam::%s:role/%s*", p, acct, AppRolePrefix(s.Hub, s.Name))
	return policydoc.NewDocument(
		policydoc.Statement{Sid: "AppData", Effect: policydoc.Allow, Action: []string{"dynamodb:*", "sqs:*"},
			Resource: []string{
				fmt.Sprintf("arn:%s:dynamodb:*:%s:table/%s*", p, acct, AppDataPrefix(s.Hub, s.Name)),
				fmt.Sprintf("arn:%s:sqs:*:%s:%s*", p, acct, AppDataPrefix(s.Hub, s.Name)),
			}},
		policydoc.Statement{Sid: "AppDataList", Effect: policydoc.Allow,
			Action:   []string{"dynamodb:ListTables", "dynamodb:DescribeLimits", "sqs:ListQueues"},
			Resource: []string{"*"}},
		policydoc.Statement{Sid: "AppRolesCreate", Effect: policydoc.Allow,
			Action: []string{"iam:CreateRole"}, Resource: []string{appRoles},
			Condition: map[string]map[string]any{"StringEquals": {
				"iam:PermissionsBoundary":          s.Hub.BoundaryARN(),
				"aws:RequestTag/" + fence.TagSpoke: s.Name,
				"aws:RequestTag/" + fence.TagOIDC:  s.OIDCIssuer,
			}}},
		// CreateRole with tags is also authorized as iam:TagRole on the new
		// role, which has no tag yet (so AppRolesManage's ResourceTag
		// condition cannot match): allowed with the fence's own request
		// tags only.
		policydoc.Statement{Sid: "AppRolesTagOnCreate", Effect: policydoc.Allow,
			Action: []string{"iam:TagRole"}, Resource: []string{appRoles},
			Condition: map[string]map[string]any{"StringEquals": {
				"aws:RequestTag/" + fence.TagSpoke: s.Name,
				"aws:RequestTag/" + fence.TagOIDC:  s.OIDCIssuer,
			}}},
		policydoc.Statement{Sid: "AppRolesManage", Effect: policydoc.Allow, Action: []string{
			"iam:GetRole", "iam:UpdateRole", "iam:DeleteRole", "iam:TagRole", "iam:ListRoleTags",
			"iam:UpdateAssumeRolePolicy", "iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy",
			"iam:ListRolePolicies", "iam:ListAttachedRolePolicies", "iam:AttachRolePolicy", "iam:DetachRolePolicy",
			"iam:ListInstanceProfilesForRole", "iam:PutRolePermissionsBoundary",
		}, Resource: []string{appRoles},
			Condition: map[string]map[string]any{"StringEquals": {"aws:ResourceTag/" + fence.TagSpoke: s.Name}}},
	)
}

// SubnetBoundActions are the actions that put a load balancer into subnets
// the request names (every action of the catalogue with the condition key
// elasticloadbalancing:Subnet; the catalogue test holds the list to it).
var SubnetBoundActions = []string{
	"elasticloadbalancing:AttachLoadBalancerToSubnets",
	"elasticloadbalancing:CreateLoadBalancer",
	"elasticloadbalancing:SetSubnets",
}

// SubnetFence denies putting a load balancer into any subnet but the
// spoke's own (subnetIDs), and making one that names no subnet (a Classic
// Load Balancer given Availability Zones goes into the account's default
// VPC). The permissions boundary cannot say this: it is one document for
// every spoke and cannot list their subnets, and the subnet IDs are known
// only once AWS has made them. So the composition writes it into the
// policies of the roles whose AWS managed or upstream policy allows these
// actions (cluster, lbc), and the boundary denies them to minted roles.
// With no subnet known yet, every such action is denied.
func SubnetFence(subnetIDs []string) []policydoc.Statement {
	actions := slices.Clone(SubnetBoundActions)
	if len(subnetIDs) == 0 {
		return []policydoc.Statement{{Effect: policydoc.Deny, Action: actions, Resource: []string{"*"}}}
	}
	ids := slices.Sorted(slices.Values(subnetIDs))
	return []policydoc.Statement{
		{Effect: policydoc.Deny, Action: actions, Resource: []string{"*"},
			Condition: map[string]map[string]any{"ForAnyValue:StringNotEquals": {SubnetConditionKey: slices.Compact(ids)}}},
		{Effect: policydoc.Deny, Action: []string{"elasticloadbalancing:CreateLoadBalancer"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"Null": {SubnetConditionKey: "true"}}},
	}
}

// SubnetConditionKey holds the subnet IDs a load balancer request names.
const SubnetConditionKey = "elasticloadbalancing:Subnet"

// subnetID is an EC2 subnet ID: 8 or 17 hexadecimal digits after subnet-.
var subnetID = regexp.MustCompile(`^subnet-([0-9a-f]{8}|[0-9a-f]{17})$`)

// IsSubnetID reports whether id is an EC2 subnet ID, which alone may enter
// SubnetFence (a name Crossplane defaulted, or nothing yet, does not).
func IsSubnetID(id string) bool { return subnetID.MatchString(id) }

// PendingSubnetIDs stand for a spoke's subnets (a public and a private one
// per zone) before EC2 assigns them: 17 hexadecimal digits, as EC2's are,
// so the documents built with them have their real sizes.
func PendingSubnetIDs(zones int) []string {
	var ids []string
	for i := range 2 * zones {
		ids = append(ids, fmt.Sprintf("subnet-%017x", i))
	}
	return ids
}

// LoadBalancerControllerPolicy is the AWS Load Balancer Controller's
// published IAM policy of the pinned release (versions.AWSLoadBalancerController,
// docs/install/iam_policy.json), every statement kept, with the upstream
// "the elbv2.k8s.aws/cluster tag exists" conditions narrowed to "equals this
// spoke's cluster name" and its unconditioned security-group writes narrowed
// to the spoke's own groups, so one spoke's controller cannot touch another's
// load balancers or security groups, and load balancers only in the spoke's
// own subnets (SubnetFence).
func LoadBalancerControllerPolicy(hub hubiam.Env, spoke string, subnetIDs []string) policydoc.Document {
	cluster := ClusterName(hub, spoke)
	p := hub.Partition
	eq := func(key string) map[string]any { return map[string]any{key: cluster} }
	reqTag, resTag := "aws:RequestTag/"+fence.TagLBCCluster, "aws:ResourceTag/"+fence.TagLBCCluster
	elb := func(r ...string) []string {
		var out []string
		for _, x := range r {
			out = append(out, fmt.Sprintf("arn:%s:elasticloadbalancing:*:*:%s", p, x))
		}
		return out
	}
	lbsAndTGs := elb("targetgroup/*/*", "loadbalancer/net/*/*", "loadbalancer/app/*/*")
	return policydoc.NewDocument(append([]policydoc.Statement{
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"iam:CreateServiceLinkedRole"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{
			"ec2:DescribeAccountAttributes", "ec2:DescribeAddresses", "ec2:DescribeAvailabilityZones",
			"ec2:DescribeInternetGateways", "ec2:DescribeVpcs", "ec2:DescribeVpcPeeringConnections", "ec2:DescribeSubnets",
			"ec2:DescribeSecurityGroups", "ec2:DescribeInstances", "ec2:DescribeNetworkInterfaces", "ec2:DescribeTags",
			"ec2:GetCoipPoolUsage", "ec2:DescribeCoipPools", "ec2:GetSecurityGroupsForVpc", "ec2:DescribeIpamPools",
			"ec2:DescribeRouteTables",
			"elasticloadbalancing:DescribeLoadBalancers", "elasticloadbalancing:DescribeLoadBalancerAttributes",
			"elasticloadbalancing:DescribeListeners", "elasticloadbalancing:DescribeListenerCertificates",
			"elasticloadbalancing:DescribeSSLPolicies", "elasticloadbalancing:DescribeRules",
			"elasticloadbalancing:DescribeTargetGroups", "elasticloadbalancing:DescribeTargetGroupAttributes",
			"elasticloadbalancing:DescribeTargetHealth", "elasticloadbalancing:DescribeTags",
			"elasticloadbalancing:DescribeTrustStores", "elasticloadbalancing:DescribeListenerAttributes",
			"elasticloadbalancing:DescribeCapacityReservation",
		}, Resource: []string{"*"}},
		// upstream also grants Cognito's DescribeUserPoolClient (which
		// returns the client secret), WAF, WAFv2 and Shield calls on every
		// resource; the spokes run the controller with enableWaf,
		// enableWafv2 and enableShield off and without Cognito
		// authentication, so those go.
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{
			"acm:ListCertificates", "acm:DescribeCertificate", "iam:ListServerCertificates", "iam:GetServerCertificate",
		}, Resource: []string{"*"}},
		// upstream: ingress rules on any security group; here on the spoke's
		// own (its cluster security group, tagged by EKS, and the groups
		// the controller made).
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"},
			Resource:  []string{fmt.Sprintf("arn:%s:ec2:*:*:security-group/*", p)},
			Condition: map[string]map[string]any{"StringEquals": eq("aws:ResourceTag/" + fence.TagEKSCluster)}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"ec2:CreateSecurityGroup"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"StringEqualsIfExists": eq(reqTag)}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"ec2:CreateTags"}, Resource: []string{fmt.Sprintf("arn:%s:ec2:*:*:security-group/*", p)},
			Condition: map[string]map[string]any{"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup", reqTag: cluster}}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"ec2:CreateTags", "ec2:DeleteTags"}, Resource: []string{fmt.Sprintf("arn:%s:ec2:*:*:security-group/*", p)},
			Condition: map[string]map[string]any{"Null": {reqTag: "true"}, "StringEquals": eq(resTag)}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress", "ec2:DeleteSecurityGroup"},
			Resource: []string{"*"}, Condition: map[string]map[string]any{"StringEquals": eq(resTag)}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"},
			Resource: []string{"*"}, Condition: map[string]map[string]any{"StringEquals": eq(reqTag)}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"elasticloadbalancing:CreateListener", "elasticloadbalancing:DeleteListener",
			"elasticloadbalancing:CreateRule", "elasticloadbalancing:DeleteRule"}, Resource: []string{"*"}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"},
			Resource: lbsAndTGs, Condition: map[string]map[string]any{"Null": {reqTag: "true"}, "StringEquals": eq(resTag)}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"},
			Resource: elb("listener/net/*/*/*", "listener/app/*/*/*", "listener-rule/net/*/*/*", "listener-rule/app/*/*/*")},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{
			"elasticloadbalancing:ModifyLoadBalancerAttributes", "elasticloadbalancing:SetIpAddressType",
			"elasticloadbalancing:SetSecurityGroups", "elasticloadbalancing:SetSubnets", "elasticloadbalancing:DeleteLoadBalancer",
			"elasticloadbalancing:ModifyTargetGroup", "elasticloadbalancing:ModifyTargetGroupAttributes",
			"elasticloadbalancing:DeleteTargetGroup", "elasticloadbalancing:ModifyListenerAttributes",
			"elasticloadbalancing:ModifyCapacityReservation", "elasticloadbalancing:ModifyIpPools",
		}, Resource: []string{"*"}, Condition: map[string]map[string]any{"StringEquals": eq(resTag)}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"elasticloadbalancing:AddTags"}, Resource: lbsAndTGs,
			Condition: map[string]map[string]any{"StringEquals": {
				"elasticloadbalancing:CreateAction": []string{"CreateTargetGroup", "CreateLoadBalancer"}, reqTag: cluster}}},
		// upstream: on every target group; here on the spoke's own
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"},
			Resource: elb("targetgroup/*/*"), Condition: map[string]map[string]any{"StringEquals": eq(resTag)}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{
			"elasticloadbalancing:SetWebAcl", "elasticloadbalancing:ModifyListener", "elasticloadbalancing:AddListenerCertificates",
			"elasticloadbalancing:RemoveListenerCertificates", "elasticloadbalancing:ModifyRule", "elasticloadbalancing:SetRulePriorities",
		}, Resource: []string{"*"}},
	}, SubnetFence(subnetIDs)...)...)
}

func ptr[T any](v T) *T { return &v }
