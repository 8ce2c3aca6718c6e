// Package hubiam builds the IAM policy documents of the hub: the policies of
// its IRSA roles (Crossplane's AWS providers, External Secrets, Flux's
// kustomize-controller and helm-controller) and the permissions boundary
// that every spoke role must carry, as internal/iam/policydoc documents, so
// tests read them without AWS and the manifests can be checked against the
// same names.
package hubiam

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Env is where the hub runs: the values every ARN in the documents is built from.
type Env struct {
	Partition string // aws, aws-cn, aws-us-gov
	// AccountID is the account the documents are for: the hub's, or a
	// spoke account's (InAccount).
	AccountID string
	Region    string // the hub's region (the sealing secret lives there)
	HubName   string
	// HubAccountID is the hub's account when AccountID is a spoke
	// account's; empty in the hub's own account (HubAccount).
	HubAccountID string
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
	var empty []string
	for _, f := range []struct{ k, v string }{{"Partition", e.Partition}, {"AccountID", e.AccountID}, {"Region", e.Region}, {"HubName", e.HubName}} {
		if f.v == "" {
			empty = append(empty, "hubiam.Env."+f.k)
		}
	}
	if len(empty) > 0 {
		return fmt.Errorf("%s empty", strings.Join(empty, ", "))
	}
	for _, f := range []struct{ k, v string }{{"AccountID", e.AccountID}, {"HubAccountID", e.HubAccount()}} {
		if !AccountIDRE.MatchString(f.v) {
			return fmt.Errorf("hubiam.Env.%s %q: not an AWS account ID (12 digits)", f.k, f.v)
		}
	}
	return CheckPartition(e.Region, e.Partition)
}

// The fence. Every spoke role carries one permissions boundary, owned by the
// hub's Pulumi program (no fleet identity may edit it), that is written once
// for all spokes with IAM policy variables: a role acts only on resources
// whose names or tags carry its own spoke, read from the role's protected
// tags. Why tags and one boundary rather than a boundary per spoke: a
// per-spoke boundary would have to be written by the hub's Crossplane, and
// whoever may write a boundary may write any policy and mint a role under
// it; with one Pulumi-owned boundary nobody in the fleet can widen the fence,
// and the tags it reads are protected by the boundary itself (a bounded role
// may set them only to its own values), by the hub Crossplane's policy, and by
// refusing every key under fence.ReservedTagPrefixes in a claim's or the hub
// stack's tags (the keys AWS and the spokes' controllers write, which the
// boundary trusts: fence.TrustedTags).

// The policy variables the boundary reads from the calling role's tags.
const (
	varSpoke   = "${aws:PrincipalTag/" + fence.TagSpoke + "}"
	varOIDC    = "${aws:PrincipalTag/" + fence.TagOIDC + "}"
	varCluster = "${aws:PrincipalTag/" + fence.TagCluster + "}"
)

// spokeCluster is the EKS cluster name of the calling spoke, from the
// role's protected eksfleet.io/cluster tag.
func (e Env) spokeCluster() string { return varCluster }

func (e Env) arn(service, region, resource string) string {
	acct := e.AccountID
	if service == "iam" {
		region = ""
	}
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", e.Partition, service, region, acct, resource)
}

// MintedRoleARNPattern matches every role any spoke's Crossplane may mint.
func (e Env) MintedRoleARNPattern() string {
	return e.iamARN("role/" + e.SpokeRolePrefix() + "*" + fence.MintedRoleSeparator + "*")
}

// iamARN is an IAM resource ARN pattern of any account, for a Resource
// of an IAM action or an aws:PrincipalArn condition: IAM's API acts only on
// the caller's own account and a boundary's principal is in it, so it
// matches exactly what the account's own ARN would, in 11 fewer
// characters (the boundary is at its quota).
func (e Env) iamARN(resource string) string {
	return fmt.Sprintf("arn:%s:iam::*:%s", e.Partition, resource)
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

// Role actions that do not widen what a role may do by themselves (trust
// and tags are fenced separately).
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

// denyUserData denies the ec2:Describe* reads that return user data.
var denyUserData = policydoc.Statement{Effect: policydoc.Deny,
	Action: []string{"ec2:DescribeInstanceAttribute", "ec2:DescribeLaunchTemplateVersions"}, Resource: []string{"*"}}

// denyRolePaths denies every IAM call on a role with a path: in
// role/<prefix>* the * also matches a path, so
// role/<hub>-spoke-pay_/<hub>-spoke-pay-eu_orders would take pay-eu's role
// name (names are unique whatever the path) on create, and a role made with
// such a path outside the fleet would be within reach of every other
// role-scoped call. No fleet role has a path. Service-linked roles have one
// (aws-service-role/...): iam:CreateServiceLinkedRole, the only call that
// carries iam:AWSServiceName, stays with the allows that name the service.
func denyRolePaths(e Env) policydoc.Statement {
	return policydoc.Statement{Effect: policydoc.Deny, Action: []string{"iam:*"},
		Resource:  []string{e.iamARN("role/*/*")},
		Condition: map[string]map[string]any{"Null": {"iam:AWSServiceName": "true"}}}
}

// boundaryGuard keeps every spoke role inside the boundary: its boundary
// can be neither removed nor swapped, the boundary policy itself cannot be
// edited, and tag values the fence reads cannot be wildcards.
func (e Env) boundaryGuard() []policydoc.Statement {
	return []policydoc.Statement{
		{Sid: "DenyBoundaryRemoval", Effect: policydoc.Deny, Action: []string{"iam:DeleteRolePermissionsBoundary"}, Resource: []string{"*"}},
		{
			Sid: "DenyOtherBoundary", Effect: policydoc.Deny, Action: slices.Clone(boundedRoleWrites), Resource: []string{"*"},
			Condition: map[string]map[string]any{"StringNotEquals": {"iam:PermissionsBoundary": e.BoundaryARN()}},
		},
		{
			Sid:    "DenyBoundaryPolicyEdit",
			Effect: policydoc.Deny,
			Action: []string{
				"iam:CreatePolicyVersion", "iam:DeletePolicy", "iam:DeletePolicyVersion",
				"iam:SetDefaultPolicyVersion", "iam:TagPolicy", "iam:UntagPolicy",
			},
			Resource: []string{e.BoundaryARN()},
		},
		{
			// ${*} and ${?} are a literal * and ? in a policy.
			Sid: "DenyWildcardTags", Effect: policydoc.Deny, Action: []string{"iam:CreateRole", "iam:TagRole"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"StringLike": {
				"aws:RequestTag/" + fence.TagSpoke: []string{"*${*}*", "*${?}*"},
			}},
		},
	}
}

// Crossplane is the policy of the hub's Crossplane AWS providers (role
// CROSSPLANE_ROLE_ARN): exactly what the WorkloadCluster composition
// manages, and only resources of the fleet's spokes: EC2 resources tagged
// (at creation) with eksfleet.io/cluster <hub>-*, clusters, node groups and
// access entries named <hub>-*, OIDC providers and roles it tagged. The
// hub's own VPC, cluster and OIDC provider carry none of these, so they stay
// out of reach. Roles it creates are named SPOKE_ROLE_PREFIX* and carry the
// spoke boundary; iam:PassRole hands only cluster and node roles to EKS.
func Crossplane(e Env) policydoc.Document {
	fleetTag := e.HubName + "-*"
	tagged := map[string]map[string]any{"StringLike": {"aws:ResourceTag/" + fence.TagCluster: fleetTag}}
	tagging := map[string]map[string]any{"StringLike": {"aws:RequestTag/" + fence.TagCluster: fleetTag}}
	accessEntries := e.arn("eks", "*", "access-entry/"+e.HubName+"-*/*")
	eksResources := []string{
		e.ClusterARNPattern(),
		e.arn("eks", "*", "nodegroup/"+e.HubName+"-*/*/*"),
		accessEntries,
		e.arn("eks", "*", "addon/"+e.HubName+"-*/*/*"),
	}
	oidc := e.arn("iam", "", "oidc-provider/oidc.eks.*.amazonaws.com/id/*")
	st := []policydoc.Statement{
		{Sid: "NetworkRead", Effect: policydoc.Allow, Action: []string{"ec2:Describe*"}, Resource: []string{"*"}},
		{Sid: "NetworkCreate", Effect: policydoc.Allow, Action: []string{
			"ec2:AllocateAddress", "ec2:CreateInternetGateway", "ec2:CreateLaunchTemplate", "ec2:CreateNatGateway",
			"ec2:CreateRouteTable", "ec2:CreateSubnet", "ec2:CreateVpc",
		}, Resource: []string{"*"}, Condition: tagging},
		// Creating a subnet or NAT gateway also authorises against the VPC,
		// subnet and EIP they go into, which must be the spoke's.
		// Anything on the fleet's own network (tagged as a spoke's), and
		// creating into it (a subnet into its VPC, a route into its table).
		{Sid: "NetworkWrite", Effect: policydoc.Allow, Action: []string{
			"ec2:Associate*", "ec2:Attach*", "ec2:Create*", "ec2:Delete*", "ec2:Detach*", "ec2:Disassociate*",
			"ec2:Modify*", "ec2:Release*", "ec2:Replace*",
		}, Resource: []string{"*"}, Condition: tagged},
		{Sid: "TagOnCreate", Effect: policydoc.Allow, Action: []string{"ec2:CreateTags"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"Null": {"ec2:CreateAction": "false"}, "StringLike": {"aws:RequestTag/" + fence.TagCluster: fleetTag}}},
		// Reads by name; every write only on a cluster, node group,
		// access entry or add-on the composition tagged as a spoke's (it
		// tags all four when it creates them), so a cluster named <hub>-x that the
		// fleet did not make (NM7) is neither changed, tagged nor deleted.
		{Effect: policydoc.Allow, Action: slices.Clone(crossplaneEKSReads), Resource: eksResources},
		{Sid: "SpokeClusters", Effect: policydoc.Allow, Action: slices.Clone(crossplaneEKSActions), Resource: eksResources, Condition: tagged},
		{
			// CreateCluster names no resource in IAM: the tag says it is a
			// spoke, and Crossplane may not make itself its admin.
			Sid: "SpokeClusterCreate", Effect: policydoc.Allow, Action: []string{"eks:CreateCluster"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{
				"StringLike": {"aws:RequestTag/" + fence.TagCluster: fleetTag},
				"Bool":       {"eks:bootstrapClusterCreatorAdminPermissions": "false"},
			},
		},
		{
			// Access entries only for the hub's Flux role and spoke admin roles,
			// and only the cluster-admin policy.
			// (CreateAccessEntry is on the cluster, AssociateAccessPolicy on
			// the access entry.)
			Sid: "SpokeAccess", Effect: policydoc.Allow, Action: []string{"eks:CreateAccessEntry", "eks:AssociateAccessPolicy"},
			Resource: []string{e.ClusterARNPattern(), accessEntries},
			Condition: map[string]map[string]any{
				"ArnLike":           {"eks:principalArn": []string{e.FluxRoleARN(), e.arn("iam", "", "role/"+e.SpokeRolePrefix()+"*-admin")}},
				"ArnEqualsIfExists": {"eks:policyArn": fmt.Sprintf("arn:%s:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy", e.Partition)},
				"StringLike":        {"aws:ResourceTag/" + fence.TagCluster: fleetTag},
			},
		},
		{
			// Each spoke's control-plane log group /aws/eks/<hub>-<spoke>/cluster,
			// created with a retention before its cluster and deleted with it.
			Sid: "SpokeLogGroups", Effect: policydoc.Allow, Action: slices.Clone(crossplaneLogsActions),
			Resource: []string{e.arn("logs", "*", "log-group:/aws/eks/"+e.HubName+"-*/cluster*")},
		},
		{Sid: "SpokeLogGroupsList", Effect: policydoc.Allow, Action: []string{"logs:DescribeLogGroups"}, Resource: []string{"*"}},
		{Sid: "SpokeOIDCCreate", Effect: policydoc.Allow, Action: []string{"iam:CreateOpenIDConnectProvider", "iam:TagOpenIDConnectProvider"},
			Resource: []string{oidc}, Condition: tagging},
		{Sid: "SpokeOIDC", Effect: policydoc.Allow, Action: slices.Clone(crossplaneOIDCActions), Resource: []string{oidc}, Condition: tagged},
		{
			Sid: "PassSpokeRoles", Effect: policydoc.Allow, Action: []string{"iam:PassRole"},
			Resource: []string{
				e.arn("iam", "", "role/"+e.SpokeRolePrefix()+"*-cluster"),
				e.arn("iam", "", "role/"+e.SpokeRolePrefix()+"*-node"),
			},
			Condition: map[string]map[string]any{"StringEquals": {"iam:PassedToService": "eks.amazonaws.com"}},
		},
		{
			Sid: "EKSServiceLinkedRoles", Effect: policydoc.Allow, Action: []string{"iam:CreateServiceLinkedRole"},
			Resource: []string{e.arn("iam", "", "role/aws-service-role/*")},
			Condition: map[string]map[string]any{"StringEquals": {
				"iam:AWSServiceName": []string{"eks.amazonaws.com", "eks-nodegroup.amazonaws.com"},
			}},
		},
		{
			Sid: "SpokeRoleWrites", Effect: policydoc.Allow, Action: slices.Clone(boundedRoleWrites), Resource: []string{e.SpokeRoleARNPattern()},
			Condition: map[string]map[string]any{"StringEquals": {"iam:PermissionsBoundary": e.BoundaryARN()}},
		},
		{Sid: "SpokeRoleHousekeeping", Effect: policydoc.Allow, Action: slices.Clone(roleHousekeeping), Resource: []string{e.SpokeRoleARNPattern()}},
	}
	// The provider reads its nodes' launch templates with
	// ec2:DescribeLaunchTemplateVersions (IAM grants it only on "*"), so
	// only the instances' user data is denied here.
	st = append(st, policydoc.Statement{Effect: policydoc.Deny, Action: []string{"ec2:DescribeInstanceAttribute"}, Resource: []string{"*"}},
		denyRolePaths(e),
		// An OIDC provider tagged as anything but this hub's spokes' (the
		// hub's own, which the program tags eksfleet.io/cluster=<hub>;
		// another hub's spokes') cannot be re-tagged into reach.
		policydoc.Statement{Effect: policydoc.Deny, Action: []string{"iam:TagOpenIDConnectProvider", "iam:UntagOpenIDConnectProvider"},
			Resource: []string{oidc}, Condition: map[string]map[string]any{
				"Null":          {"aws:ResourceTag/" + fence.TagCluster: "false"},
				"StringNotLike": {"aws:ResourceTag/" + fence.TagCluster: fleetTag},
			}})
	st = append(st, e.boundaryGuard()...)
	// No Sids: at the longest names the validators admit the policy is
	// within a few hundred characters of IAM's 6,144 (the comments above
	// say what each statement is for).
	for i := range st {
		st[i].Sid = ""
	}
	return policydoc.NewDocument(st...)
}

var (
	// on the fleet's clusters, node groups, access entries and add-ons (by name)
	crossplaneEKSReads = []string{"eks:Describe*", "eks:List*"}
	// on those the composition tagged as the fleet's only
	crossplaneEKSActions = []string{
		"eks:CreateAddon", "eks:CreateNodegroup", "eks:Delete*", "eks:DisassociateAccessPolicy",
		"eks:TagResource", "eks:UntagResource", "eks:Update*",
	}
	// on the spokes' control-plane log groups only
	crossplaneLogsActions = []string{
		"logs:CreateLogGroup", "logs:DeleteLogGroup", "logs:PutRetentionPolicy", "logs:DeleteRetentionPolicy",
		"logs:ListTagsForResource", "logs:TagResource", "logs:UntagResource",
	}
	// on OIDC providers tagged as a spoke's only
	crossplaneOIDCActions = []string{"iam:*OpenIDConnectProvider*"}
)

// sealingRead lets the holder read the sealing keys and nothing else.
func sealingRead(e Env, sid, secretARN, kmsKeyARN string) []policydoc.Statement {
	return []policydoc.Statement{
		{
			Sid:      sid + "Secret",
			Effect:   policydoc.Allow,
			Action:   []string{"secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"},
			Resource: []string{secretARN},
		},
		{
			Sid:      sid + "Key",
			Effect:   policydoc.Allow,
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
func ExternalSecrets(e Env, secretARN, kmsKeyARN string) policydoc.Document {
	return policydoc.NewDocument(sealingRead(e, "SealingKey", secretARN, kmsKeyARN)...)
}

// Flux is the policy of the hub's Flux controllers that apply onto spokes,
// kustomize-controller and helm-controller (role FLUX_ROLE_ARN):
// kubeConfig.configMapRef with provider aws calls eks:DescribeCluster on each
// spoke before it asks for a token.
func Flux(e Env) policydoc.Document {
	return policydoc.NewDocument(policydoc.Statement{
		Sid:      "DescribeFleetClusters",
		Effect:   policydoc.Allow,
		Action:   []string{"eks:DescribeCluster"},
		Resource: []string{e.ClusterARNPattern()},
	})
}

// SpokeBoundary is the permissions boundary every spoke role carries
// (SPOKE_PERMISSIONS_BOUNDARY_ARN): the most any spoke role may ever do,
// whatever policy is attached to it, scoped by the role's own spoke tag.
// IAM allows nothing a boundary does not allow, so it needs few denies: only
// where an allow would reach too far.
//
// It grants nothing on the sealing key: the hub hands the keys to each
// spoke with its own Flux (sealingkey.HubSecret), so no role under the
// boundary, whoever made it and whatever it trusts, can read them.
func SpokeBoundary(e Env) policydoc.Document {
	cluster := e.spokeCluster()
	mine := e.SpokeRolePrefix() + varSpoke
	minted := []string{e.iamARN("role/" + mine + fence.MintedRoleSeparator + "*")}
	data := cluster + fence.MintedRoleSeparator + "*"
	// EC2, ELB and EKS ARNs name no account: none of them has
	// resource-based policies, so a request can only reach the caller's own
	// account's resources (and the boundary has no room to spare). EC2 and
	// ELB ARNs name no partition either: a request's resources are always
	// in its caller's.
	ec2 := func(r string) string { return "arn:*:ec2:*:*:" + r }
	elbv2 := func(r string) string { return "arn:*:elasticloadbalancing:*:*:" + r }
	st := []policydoc.Statement{
		{
			// Reads IAM grants only on "*". No WAF, Shield or Cognito: the
			// load balancer controller runs with those features off (their
			// calls are account-wide writes and a client-secret read).
			Effect: policydoc.Allow,
			Action: []string{
				"ec2:Describe*", "ec2:GetCoipPoolUsage", "ec2:GetIpamPoolCidrs", "ec2:GetSecurityGroupsForVpc",
				"elasticloadbalancing:Describe*", "ecr:GetAuthorizationToken", "eks:ListClusters",
				"acm:DescribeCertificate", "acm:ListCertificates", "iam:GetServerCertificate", "iam:ListServerCertificates",
				"dynamodb:DescribeLimits", "dynamodb:ListTables", "sqs:ListQueues",
			},
			Resource: []string{"*"},
		},
		// ec2:Describe* would also read instances' and launch templates'
		// user data, which may hold secrets.
		denyUserData,
		{
			// Images only from other accounts' repositories (AWS's EKS
			// images, an organisation's artifact account: their
			// repository policies decide), never from the fleet's own
			// account, whose repositories the spokes do not share.
			Effect: policydoc.Allow, Action: []string{"ecr:BatchCheck*", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"},
			Resource:  []string{fmt.Sprintf("arn:%s:ecr:*:*:repository/*", e.Partition)},
			Condition: map[string]map[string]any{"StringNotEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}},
		},
		{Effect: policydoc.Allow, Action: []string{"eks:DescribeCluster"}, Resource: []string{fmt.Sprintf("arn:%s:eks:*:*:cluster/%s", e.Partition, cluster)}},
		{
			// New network interfaces, security groups and load balancers;
			// their subnet and VPC must be the spoke's (below), and their
			// fleet tag, if any, the spoke's own. No spoke role needs EBS
			// volumes (no EBS CSI driver on spokes; node volumes are made
			// by EKS's service-linked role).
			Effect: policydoc.Allow,
			Action: []string{"ec2:CreateNetworkInterface", "ec2:CreateSecurityGroup",
				"elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"},
			Resource: []string{ec2("network-interface/*"), ec2("security-group/*"),
				elbv2("loadbalancer/*"), elbv2("targetgroup/*")},
			Condition: map[string]map[string]any{"StringEqualsIfExists": {"aws:RequestTag/" + fence.TagCluster: cluster, "aws:RequestTag/" + fence.TagLBCCluster: cluster}},
		},
		// Tags on what the call creates.
		{Effect: policydoc.Allow, Action: []string{"ec2:CreateTags"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"Null": {"ec2:CreateAction": "false"}}},
		{Effect: policydoc.Allow, Action: []string{"elasticloadbalancing:AddTags"}, Resource: []string{"*"},
			Condition: map[string]map[string]any{"Null": {"elasticloadbalancing:CreateAction": "false"}}},
	}
	// Writes on existing network interfaces, security groups, subnets,
	// instances and load balancers: only those tagged as the spoke's, by
	// the tag each writer puts on them (the fleet's own, EKS's on the
	// cluster security group and nodes, the VPC CNI's, the load balancer
	// controller's).
	var (
		// ec2:*ssign*Ip*Addresses: (Un)AssignPrivateIpAddresses and
		// (Un)AssignIpv6Addresses, in fewer characters
		eni  = []string{"ec2:*ssign*Ip*Addresses", "ec2:*NetworkInterface*"}
		sg   = []string{"ec2:*SecurityGroup*"}
		tags = []string{"ec2:*Tags"}
		elb  = []string{"elasticloadbalancing:*"}
	)
	for _, w := range []struct {
		tag     string
		actions [][]string
	}{
		{fence.TagCluster, [][]string{eni, sg, tags}},    // the fleet's (and the nodes' launch template's)
		{fence.TagEKSCluster, [][]string{eni, sg, tags}}, // EKS's, on the cluster security group
		{fence.TagEKSNodeCluster, [][]string{eni}},       // EKS's, on managed nodes
		{fence.TagCNICluster, [][]string{eni, tags}},     // the VPC CNI's, on its interfaces
		{fence.TagLBCCluster, [][]string{sg, tags, elb}}, // the load balancer controller's
	} {
		res := []string{"*"}
		if w.tag == fence.TagLBCCluster {
			res = []string{ec2("*"), elbv2("*")}
		}
		st = append(st, policydoc.Statement{Effect: policydoc.Allow, Action: slices.Concat(w.actions...),
			Resource: res, Condition: map[string]map[string]any{"StringEquals": {"aws:ResourceTag/" + w.tag: cluster}}})
	}
	st = append(st,
		// No spoke role needs kms:CreateGrant (no EBS CSI driver, no
		// encrypted volumes of their own): none is allowed.
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"iam:CreateServiceLinkedRole"},
			Resource:  []string{e.iamARN("role/aws-service-role/*")},
			Condition: map[string]map[string]any{"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}}},
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"dynamodb:*", "sqs:*"}, Resource: []string{
			e.arn("dynamodb", "*", "table/"+data), e.arn("sqs", "*", data)}},
		// Roles the spoke's Crossplane mints: named <hub>-spoke-<spoke>_*,
		// created with this boundary and the spoke's own fence tags, which
		// can be neither changed nor removed afterwards.
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"iam:CreateRole"}, Resource: minted,
			Condition: map[string]map[string]any{"StringEquals": {
				"iam:PermissionsBoundary": e.BoundaryARN(), "aws:RequestTag/" + fence.TagSpoke: varSpoke,
				"aws:RequestTag/" + fence.TagCluster: varCluster, "aws:RequestTag/" + fence.TagOIDC: varOIDC,
			}}},
		// iam:*RolePolicy: Put, Delete, Attach, Detach (and GetRolePolicy,
		// which carries no iam:PermissionsBoundary, so this grants no read).
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{"iam:*RolePolicy", "iam:PutRolePermissionsBoundary"},
			Resource: minted, Condition: map[string]map[string]any{"StringEquals": {"iam:PermissionsBoundary": e.BoundaryARN()}}},
		// Housekeeping, and tags other than the fence's own values.
		policydoc.Statement{Effect: policydoc.Allow, Action: []string{
			// iam:Update*Role*: UpdateAssumeRolePolicy, UpdateRole and
			// UpdateRoleDescription, in fewer characters
			"iam:DeleteRole", "iam:GetRole*", "iam:List*", "iam:TagRole", "iam:Update*Role*",
		}, Resource: minted, Condition: map[string]map[string]any{"StringEqualsIfExists": {
			"aws:RequestTag/" + fence.TagSpoke: varSpoke, "aws:RequestTag/" + fence.TagCluster: varCluster, "aws:RequestTag/" + fence.TagOIDC: varOIDC,
		}}},
	)
	st = append(st, denyRolePaths(e), policydoc.Statement{
		// A minted role (an app's) makes no load balancer and changes none:
		// the subnets a load balancer goes into are fenced in the
		// composed policies of the roles that need them (spokeiam.SubnetFence),
		// which a minted role's policy, written by the spoke's Crossplane,
		// would not carry.
		Effect: policydoc.Deny, Action: []string{"elasticloadbalancing:*"}, Resource: []string{"*"},
		Condition: map[string]map[string]any{"ArnLike": {"aws:PrincipalArn": e.MintedRoleARNPattern()}},
	}, policydoc.Statement{
		// A minted role works only for the spoke's own service accounts:
		// whatever its trust says, its sessions are denied unless they came
		// from the spoke's OIDC provider.
		Effect: policydoc.Deny, Action: []string{"*"}, Resource: []string{"*"},
		Condition: map[string]map[string]any{
			"ArnLike":         {"aws:PrincipalArn": e.MintedRoleARNPattern()},
			"StringNotEquals": {"aws:FederatedProvider": e.arn("iam", "", "oidc-provider/"+varOIDC)},
		},
	})
	return policydoc.NewDocument(st...)
}
