// Package managementcluster is the ManagementCluster component: the hub's
// network (VPC, public and private subnets per zone, internet gateway, NAT,
// route tables), its EKS cluster through pulumi-eks v2 (API authentication
// with access entries, OIDC provider, private plus allow-listed public
// endpoint, control-plane logs, KMS secrets encryption, no default node
// group), an AL2023 managed node group, and a Kubernetes provider built from
// a kubeconfig this component writes.
package managementcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/cloudwatch"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/kms"
	"github.com/pulumi/pulumi-eks/sdk/v2/go/eks"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/contract/ekszones"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/lbsubnets"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Type is the component's Pulumi type token.
const Type = "eks-fleet:index:ManagementCluster"

// NAT modes (workloadcluster's).
const (
	NATSingle = workloadcluster.NATSingle
	NATPerAZ  = workloadcluster.NATPerAZ
)

// Subnet tags the AWS Load Balancer Controller discovers subnets by.
const (
	PublicELBTag   = lbsubnets.Public
	InternalELBTag = lbsubnets.Internal
)

// LogTypes are the control-plane logs sent to CloudWatch.
var LogTypes = []string{"api", "audit", "authenticator", "controllerManager", "scheduler"}

// ClusterAdminPolicy is the EKS access policy admins get.
const ClusterAdminPolicy = "AmazonEKSClusterAdminPolicy"

// Args configures a ManagementCluster.
type Args struct {
	ClusterName       string
	Region            string
	Partition         string
	VPCCIDR           string
	AvailabilityZones int
	NATMode           string
	KubernetesVersion string
	// InstanceTypes share one CPU architecture; AMIType matches it.
	InstanceTypes      []string
	AMIType            string
	MinSize            int
	DesiredSize        int
	MaxSize            int
	PublicAccessCIDRs  []string
	AdminPrincipalARNs []string
	// LogRetentionDays is the retention of the control-plane log group
	// /aws/eks/<ClusterName>/cluster, which this component owns.
	LogRetentionDays int
	Tags             map[string]string
}

// ManagementCluster is the hub cluster and its network.
type ManagementCluster struct {
	pulumi.ResourceState

	VPC            *ec2.Vpc
	PublicSubnets  []*ec2.Subnet
	PrivateSubnets []*ec2.Subnet
	NATGateways    []*ec2.NatGateway
	// NATEIPs are the NAT gateways' Elastic IPs: the hub's egress.
	NATEIPs []*ec2.Eip
	// PrivateRoutes are the private subnets' default routes through NAT:
	// nodes need them to join, and Flux needs them while it tears down.
	PrivateRoutes []*ec2.Route
	SecretsKey    *kms.Key
	// LogGroup is the control-plane log group, created before the cluster
	// so EKS writes into it instead of creating one without retention.
	LogGroup  *cloudwatch.LogGroup
	Cluster   *eks.Cluster
	NodeRole  *iam.Role
	NodeGroup *eks.ManagedNodeGroup
	Provider  *kubernetes.Provider

	ClusterName     pulumi.StringOutput `pulumi:"clusterName"`
	ClusterArn      pulumi.StringOutput `pulumi:"clusterArn"`
	Kubeconfig      pulumi.StringOutput `pulumi:"kubeconfig"`
	OIDCProviderArn pulumi.StringOutput `pulumi:"oidcProviderArn"`
	// OIDCIssuer is the issuer without https://, as IAM conditions use it.
	OIDCIssuer pulumi.StringOutput      `pulumi:"oidcIssuer"`
	VpcID      pulumi.StringOutput      `pulumi:"vpcId"`
	SubnetIDs  pulumi.StringArrayOutput `pulumi:"privateSubnetIds"`
	// EgressCIDRs are the NAT gateways' public IPs as /32 CIDRs, in zone
	// order: everything the hub sends to the internet (e.g. its Flux
	// reaching a spoke's public API endpoint) comes from them.
	EgressCIDRs pulumi.StringArrayOutput `pulumi:"egressCidrs"`
}

// New registers a ManagementCluster.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*ManagementCluster, error) {
	private, public, err := SubnetCIDRs(args.VPCCIDR, args.AvailabilityZones)
	if err != nil {
		return nil, fmt.Errorf("managementcluster %s: %w", name, err)
	}
	if args.ClusterName == "" || args.Region == "" || args.Partition == "" || len(args.InstanceTypes) == 0 || args.AMIType == "" {
		return nil, fmt.Errorf("managementcluster %s: ClusterName, Region, Partition, InstanceTypes and AMIType are required", name)
	}
	c := &ManagementCluster{}
	if err := ctx.RegisterComponentResource(Type, name, c, opts...); err != nil {
		return nil, fmt.Errorf("register ManagementCluster %s: %w", name, err)
	}
	parent := pulumi.Parent(c)
	wrap := func(what string, err error) error { return fmt.Errorf("managementcluster %s: %s: %w", name, what, err) }
	tags := func(extra map[string]string) pulumi.StringMap {
		m := pulumi.StringMap{}
		for k, v := range args.Tags {
			m[k] = pulumi.String(v)
		}
		for k, v := range extra {
			m[k] = pulumi.String(v)
		}
		return m
	}

	// Standard zones only: Local and Wavelength Zones (opt-in, e.g.
	// us-west-2-lax-1a) sort before the region's own zones and EKS does not
	// place control planes in them.
	zones, err := aws.GetAvailabilityZones(ctx, &aws.GetAvailabilityZonesArgs{
		State: pulumi.StringRef("available"),
		Filters: []aws.GetAvailabilityZonesFilter{
			{Name: "zone-type", Values: []string{"availability-zone"}},
			{Name: "opt-in-status", Values: []string{"opt-in-not-required"}},
		},
	}, pulumi.Parent(c))
	if err != nil {
		return nil, wrap("availability zones", err)
	}
	azs, err := StandardZones(args.Region, zones.Names, zones.ZoneIds, args.AvailabilityZones)
	if err != nil {
		return nil, fmt.Errorf("managementcluster %s: %w", name, err)
	}

	// Network.
	vpc, err := ec2.NewVpc(ctx, name, &ec2.VpcArgs{
		CidrBlock:          pulumi.String(args.VPCCIDR),
		EnableDnsHostnames: pulumi.Bool(true),
		EnableDnsSupport:   pulumi.Bool(true),
		Tags:               tags(map[string]string{"Name": args.ClusterName}),
	}, parent)
	if err != nil {
		return nil, wrap("vpc", err)
	}
	igw, err := ec2.NewInternetGateway(ctx, name, &ec2.InternetGatewayArgs{
		VpcId: vpc.ID(),
		Tags:  tags(map[string]string{"Name": args.ClusterName}),
	}, parent)
	if err != nil {
		return nil, wrap("internet gateway", err)
	}
	publicRT, err := ec2.NewRouteTable(ctx, name+"-public", &ec2.RouteTableArgs{
		VpcId: vpc.ID(),
		Tags:  tags(map[string]string{"Name": args.ClusterName + "-public"}),
	}, parent)
	if err != nil {
		return nil, wrap("public route table", err)
	}
	if _, err := ec2.NewRoute(ctx, name+"-public-default", &ec2.RouteArgs{
		RouteTableId:         publicRT.ID(),
		DestinationCidrBlock: pulumi.String("0.0.0.0/0"),
		GatewayId:            igw.ID(),
	}, parent); err != nil {
		return nil, wrap("public default route", err)
	}
	for i, az := range azs {
		pub, err := ec2.NewSubnet(ctx, fmt.Sprintf("%s-public-%s", name, az), &ec2.SubnetArgs{
			VpcId:            vpc.ID(),
			CidrBlock:        pulumi.String(public[i]),
			AvailabilityZone: pulumi.String(az),
			Tags:             tags(map[string]string{"Name": args.ClusterName + "-public-" + az, PublicELBTag: "1"}),
		}, parent)
		if err != nil {
			return nil, wrap("public subnet "+az, err)
		}
		if _, err := ec2.NewRouteTableAssociation(ctx, fmt.Sprintf("%s-public-%s", name, az), &ec2.RouteTableAssociationArgs{
			SubnetId: pub.ID(), RouteTableId: publicRT.ID(),
		}, parent); err != nil {
			return nil, wrap("public route table association "+az, err)
		}
		c.PublicSubnets = append(c.PublicSubnets, pub)
	}
	for i := 0; i < NATCount(args.NATMode, len(azs)); i++ {
		az := azs[i]
		eip, err := ec2.NewEip(ctx, fmt.Sprintf("%s-nat-%s", name, az), &ec2.EipArgs{
			Domain: pulumi.String("vpc"),
			Tags:   tags(map[string]string{"Name": args.ClusterName + "-nat-" + az}),
		}, parent, pulumi.DependsOn([]pulumi.Resource{igw}))
		if err != nil {
			return nil, wrap("nat eip "+az, err)
		}
		nat, err := ec2.NewNatGateway(ctx, fmt.Sprintf("%s-%s", name, az), &ec2.NatGatewayArgs{
			AllocationId: eip.ID(),
			SubnetId:     c.PublicSubnets[i].ID(),
			Tags:         tags(map[string]string{"Name": args.ClusterName + "-" + az}),
		}, parent, pulumi.DependsOn([]pulumi.Resource{igw}))
		if err != nil {
			return nil, wrap("nat gateway "+az, err)
		}
		c.NATGateways = append(c.NATGateways, nat)
		c.NATEIPs = append(c.NATEIPs, eip)
	}
	for i, az := range azs {
		priv, err := ec2.NewSubnet(ctx, fmt.Sprintf("%s-private-%s", name, az), &ec2.SubnetArgs{
			VpcId:            vpc.ID(),
			CidrBlock:        pulumi.String(private[i]),
			AvailabilityZone: pulumi.String(az),
			Tags:             tags(map[string]string{"Name": args.ClusterName + "-private-" + az, InternalELBTag: "1"}),
		}, parent)
		if err != nil {
			return nil, wrap("private subnet "+az, err)
		}
		rt, err := ec2.NewRouteTable(ctx, fmt.Sprintf("%s-private-%s", name, az), &ec2.RouteTableArgs{
			VpcId: vpc.ID(),
			Tags:  tags(map[string]string{"Name": args.ClusterName + "-private-" + az}),
		}, parent)
		if err != nil {
			return nil, wrap("private route table "+az, err)
		}
		nat := c.NATGateways[min(i, len(c.NATGateways)-1)]
		route, err := ec2.NewRoute(ctx, fmt.Sprintf("%s-private-%s-default", name, az), &ec2.RouteArgs{
			RouteTableId:         rt.ID(),
			DestinationCidrBlock: pulumi.String("0.0.0.0/0"),
			NatGatewayId:         nat.ID(),
		}, parent)
		if err != nil {
			return nil, wrap("private default route "+az, err)
		}
		if _, err := ec2.NewRouteTableAssociation(ctx, fmt.Sprintf("%s-private-%s", name, az), &ec2.RouteTableAssociationArgs{
			SubnetId: priv.ID(), RouteTableId: rt.ID(),
		}, parent); err != nil {
			return nil, wrap("private route table association "+az, err)
		}
		c.PrivateSubnets = append(c.PrivateSubnets, priv)
		c.PrivateRoutes = append(c.PrivateRoutes, route)
	}
	ids := func(ss []*ec2.Subnet) pulumi.StringArray {
		out := pulumi.StringArray{}
		for _, s := range ss {
			out = append(out, s.ID().ToStringOutput())
		}
		return out
	}

	// Secrets encryption key.
	key, err := kms.NewKey(ctx, name+"-secrets", &kms.KeyArgs{
		Description:          pulumi.String("EKS secrets encryption for " + args.ClusterName),
		EnableKeyRotation:    pulumi.Bool(true),
		DeletionWindowInDays: pulumi.Int(30),
		Tags:                 tags(nil),
	}, parent)
	if err != nil {
		return nil, wrap("secrets kms key", err)
	}

	// Node role: made before the cluster so pulumi-eks gets it as the
	// cluster's only instance role instead of creating an unused one.
	nodeRole, err := iam.NewRole(ctx, name+"-node", &iam.RoleArgs{
		Name: pulumi.String(args.ClusterName + "-node"),
		AssumeRolePolicy: pulumi.String(policydoc.NewDocument(policydoc.Statement{
			Effect: policydoc.Allow, Principal: map[string]any{"Service": "ec2.amazonaws.com"},
			Action: []string{"sts:AssumeRole"},
		}).MustJSON()),
		Tags: tags(nil),
	}, parent)
	if err != nil {
		return nil, wrap("node role", err)
	}

	// Control-plane log group, owned so it has a retention and goes with
	// the stack; the cluster depends on it so EKS finds it. A hub deployed
	// before the program owned it has one EKS made (NM9): it is adopted
	// (imported, then given the retention and tags) instead of failing with
	// ResourceAlreadyExistsException.
	logName := LogGroupName(args.ClusterName)
	existing, err := cloudwatch.GetLogGroups(ctx, &cloudwatch.GetLogGroupsArgs{LogGroupNamePrefix: pulumi.StringRef(logName)}, parent)
	if err != nil {
		return nil, wrap("existing control-plane log group", err)
	}
	logOpts := []pulumi.ResourceOption{parent}
	if slices.Contains(existing.LogGroupNames, logName) {
		logOpts = append(logOpts, AdoptLogGroup(logName))
	}
	logGroup, err := cloudwatch.NewLogGroup(ctx, name+"-control-plane", &cloudwatch.LogGroupArgs{
		Name:            pulumi.String(logName),
		RetentionInDays: pulumi.Int(args.LogRetentionDays),
		Tags:            tags(nil),
	}, logOpts...)
	if err != nil {
		return nil, wrap("control-plane log group", err)
	}

	// Cluster. Access entries are keyed by the principal, not by list
	// position: removing or reordering admins leaves the others alone.
	entries := map[string]eks.AccessEntryArgs{}
	for _, arn := range args.AdminPrincipalARNs {
		entries[AccessEntryKey(arn)] = eks.AccessEntryArgs{
			PrincipalArn: pulumi.String(arn),
			AccessPolicies: map[string]eks.AccessPolicyAssociationInput{
				"cluster-admin": eks.AccessPolicyAssociationArgs{
					PolicyArn:   pulumi.Sprintf("arn:%s:eks::aws:cluster-access-policy/%s", args.Partition, ClusterAdminPolicy),
					AccessScope: awseks.AccessPolicyAssociationAccessScopeArgs{Type: pulumi.String("cluster")},
				},
			},
		}
	}
	api := eks.AuthenticationModeApi
	skip, defaultCNI := true, true
	cidrs := pulumi.StringArray{}
	for _, s := range args.PublicAccessCIDRs {
		cidrs = append(cidrs, pulumi.String(s))
	}
	cluster, err := eks.NewCluster(ctx, name, &eks.ClusterArgs{
		Name:                   pulumi.String(args.ClusterName),
		Version:                pulumi.String(args.KubernetesVersion),
		VpcId:                  vpc.ID(),
		PublicSubnetIds:        ids(c.PublicSubnets),
		PrivateSubnetIds:       ids(c.PrivateSubnets),
		EndpointPrivateAccess:  pulumi.Bool(true),
		EndpointPublicAccess:   pulumi.Bool(true),
		PublicAccessCidrs:      cidrs,
		AuthenticationMode:     &api,
		AccessEntries:          entries,
		CreateOidcProvider:     pulumi.Bool(true),
		EnabledClusterLogTypes: pulumi.ToStringArray(LogTypes),
		EncryptionConfigKeyArn: key.Arn,
		SkipDefaultNodeGroup:   &skip,
		// The node group's role is the only instance role: without it
		// pulumi-eks v2.8.1 creates an unused instanceRole and an
		// EC2_LINUX access entry for it.
		InstanceRoles: iam.RoleArray{nodeRole},
		// EKS installs the VPC CNI itself; pulumi-eks would otherwise apply
		// its own copy with kubectl.
		UseDefaultVpcCni: &defaultCNI,
		Tags:             tags(nil),
	}, parent, pulumi.DependsOn([]pulumi.Resource{logGroup}),
		pulumi.Transforms([]pulumi.ResourceTransform{
			LegacyAccessEntryAliases(name, args.AdminPrincipalARNs),
			TagOIDCProvider(args.ClusterName, args.Tags),
		}))
	if err != nil {
		return nil, wrap("eks cluster", err)
	}
	eksCluster := cluster.EksCluster

	// Node group.
	var policyAttachments []pulumi.Resource
	for _, p := range NodePolicies {
		att, err := iam.NewRolePolicyAttachment(ctx, name+"-node-"+p, &iam.RolePolicyAttachmentArgs{
			Role:      nodeRole.Name,
			PolicyArn: pulumi.Sprintf("arn:%s:iam::aws:policy/%s", args.Partition, p),
		}, parent)
		if err != nil {
			return nil, wrap("node role policy "+p, err)
		}
		policyAttachments = append(policyAttachments, att)
	}
	// The cluster first: on an upgrade the control plane moves before the
	// nodes follow it.
	nodeDeps := append([]pulumi.Resource{cluster}, policyAttachments...)
	for _, r := range c.PrivateRoutes {
		nodeDeps = append(nodeDeps, r)
	}
	// IMDSv2 only, one hop: pods (not on the host network) cannot reach the
	// instance metadata service and so cannot use the node role; every hub
	// workload that calls AWS has its own IRSA role.
	// A name prefix: the template is replaced with the node group.
	launchTemplate, err := ec2.NewLaunchTemplate(ctx, name+"-nodes", &ec2.LaunchTemplateArgs{
		NamePrefix:           pulumi.String(NodeGroupNamePrefix(args.ClusterName)),
		Description:          pulumi.String("hub system nodes: IMDSv2, hop limit 1"),
		UpdateDefaultVersion: pulumi.Bool(true),
		MetadataOptions: ec2.LaunchTemplateMetadataOptionsArgs{
			HttpEndpoint:            pulumi.String("enabled"),
			HttpTokens:              pulumi.String("required"),
			HttpPutResponseHopLimit: pulumi.Int(IMDSHopLimit),
		},
		TagSpecifications: ec2.LaunchTemplateTagSpecificationArray{
			ec2.LaunchTemplateTagSpecificationArgs{ResourceType: pulumi.String("instance"), Tags: tags(nil)},
			ec2.LaunchTemplateTagSpecificationArgs{ResourceType: pulumi.String("volume"), Tags: tags(nil)},
		},
		Tags: tags(nil),
	}, parent)
	if err != nil {
		return nil, wrap("node launch template", err)
	}
	nodeGroup, err := eks.NewManagedNodeGroup(ctx, name+"-nodes", &eks.ManagedNodeGroupArgs{
		LaunchTemplate: awseks.NodeGroupLaunchTemplateArgs{
			Id:      launchTemplate.ID(),
			Version: launchTemplate.LatestVersion.ApplyT(func(v int) string { return strconv.Itoa(v) }).(pulumi.StringOutput),
		},
		Cluster: cluster,
		// A prefix, not a name: instance types, AMI type and subnets are
		// ForceNew, and the replacement is created before the old group
		// is deleted, so it needs a fresh name.
		NodeGroupNamePrefix: pulumi.String(NodeGroupNamePrefix(args.ClusterName)),
		// Nodes follow the control plane: the cluster is updated first
		// (the group depends on it), then the group rolls to the version.
		Version:       pulumi.String(args.KubernetesVersion),
		NodeRole:      nodeRole,
		AmiType:       pulumi.String(args.AMIType),
		InstanceTypes: pulumi.ToStringArray(args.InstanceTypes),
		ScalingConfig: awseks.NodeGroupScalingConfigArgs{
			MinSize:     pulumi.Int(args.MinSize),
			DesiredSize: pulumi.Int(args.DesiredSize),
			MaxSize:     pulumi.Int(args.MaxSize),
		},
		SubnetIds: ids(c.PrivateSubnets),
		Tags:      tags(nil),
	}, parent, pulumi.DependsOn(nodeDeps))
	if err != nil {
		return nil, wrap("node group", err)
	}

	// Kubeconfig and provider.
	kubeconfig := pulumi.ToSecret(pulumi.All(eksCluster.Name(), eksCluster.Endpoint(), eksCluster.CertificateAuthority().Data()).
		ApplyT(func(v []any) (string, error) {
			ca := ""
			if p, ok := v[2].(*string); ok && p != nil {
				ca = *p
			}
			return Kubeconfig(v[0].(string), v[1].(string), ca, args.Region)
		})).(pulumi.StringOutput)
	provider, err := kubernetes.NewProvider(ctx, name, ProviderArgs(kubeconfig, eksCluster.Arn()), parent)
	if err != nil {
		return nil, wrap("kubernetes provider", err)
	}

	issuer := eksCluster.Identities().Index(pulumi.Int(0)).Oidcs().Index(pulumi.Int(0)).Issuer().ApplyT(func(s *string) string {
		if s == nil {
			return ""
		}
		return strings.TrimPrefix(*s, "https://")
	}).(pulumi.StringOutput)

	c.LogGroup = logGroup
	c.VPC, c.SecretsKey, c.Cluster, c.NodeRole, c.NodeGroup, c.Provider = vpc, key, cluster, nodeRole, nodeGroup, provider
	c.ClusterName = eksCluster.Name()
	c.ClusterArn = eksCluster.Arn()
	c.Kubeconfig = kubeconfig
	c.OIDCProviderArn = cluster.Core.OidcProvider().Arn()
	c.OIDCIssuer = issuer
	c.VpcID = vpc.ID().ToStringOutput()
	c.SubnetIDs = ids(c.PrivateSubnets).ToStringArrayOutput()
	egress := pulumi.StringArray{}
	for _, eip := range c.NATEIPs {
		egress = append(egress, pulumi.Sprintf("%s/32", eip.PublicIp))
	}
	c.EgressCIDRs = egress.ToStringArrayOutput()
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"clusterName":      c.ClusterName,
		"clusterArn":       c.ClusterArn,
		"kubeconfig":       kubeconfig,
		"oidcProviderArn":  c.OIDCProviderArn,
		"oidcIssuer":       issuer,
		"vpcId":            c.VpcID,
		"privateSubnetIds": c.SubnetIDs,
		"egressCidrs":      c.EgressCIDRs,
	}); err != nil {
		return nil, wrap("outputs", err)
	}
	return c, nil
}

// LogGroupName is the log group EKS writes a cluster's control-plane logs to.
func LogGroupName(clusterName string) string {
	return workloadcluster.ControlPlaneLogGroup(clusterName)
}

// NodeGroupNamePrefix is the prefix of the hub node group's generated name.
func NodeGroupNamePrefix(clusterName string) string { return clusterName + "-system-" }

// AccessEntryKey is the stable key (and so the logical name suffix) of an
// admin's access entry: a hash of the principal ARN, so the entry of one
// admin never changes when others are added, removed or reordered.
func AccessEntryKey(principalARN string) string {
	sum := sha256.Sum256([]byte(principalARN))
	return "admin-" + hex.EncodeToString(sum[:6])
}

// AdoptLogGroup imports the log group named name. On a stack that already
// holds it the import ID equals its ID and the engine treats it as any
// other resource (pulumi/pulumi developer-docs/architecture/import.md, "the
// import resource option", case 2), so the option may stay.
func AdoptLogGroup(name string) pulumi.ResourceOption { return pulumi.Import(pulumi.ID(name)) }

// LegacyAccessEntryAliases is a transform for the pulumi-eks Cluster's
// children: the version before stable access-entry keys named an admin's
// entry by list position (admin-<i>); pulumi-eks v2.8.1 names the entry
// <component>-<key> and its policy association <component>-<key>-<policy>
// (its nodejs createAccessEntries). Each entry and
// association named by AccessEntryKey gets the alias of its position in
// admins, so a hub deployed by that version renames them instead of
// creating a second entry for the same principal (EKS: 409) before deleting
// the first (NM9). The admin list must be the one that version deployed.
func LegacyAccessEntryAliases(component string, admins []string) pulumi.ResourceTransform {
	legacy := map[string]string{}
	for i, arn := range admins {
		legacy[component+"-"+AccessEntryKey(arn)] = fmt.Sprintf("%s-admin-%d", component, i)
	}
	return func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		var old string
		switch a.Type {
		case "aws:eks/accessEntry:AccessEntry":
			old = legacy[a.Name]
		case "aws:eks/accessPolicyAssociation:AccessPolicyAssociation":
			for key, was := range legacy {
				if rest, ok := strings.CutPrefix(a.Name, key+"-"); ok {
					old = was + "-" + rest
				}
			}
		}
		if old == "" {
			return nil
		}
		opts := a.Opts
		opts.Aliases = append(slices.Clone(opts.Aliases), pulumi.Alias{Name: pulumi.String(old)})
		return &pulumi.ResourceTransformResult{Props: a.Props, Opts: opts}
	}
}

// TagOIDCProvider is a transform for the pulumi-eks Cluster's children: the
// OIDC provider it creates (without tags, pulumi-eks v2.8.1 nodejs cluster
// "Create the OIDC provider for the cluster") is tagged
// eksfleet.io/cluster=<hub>, with the stack's tags. The hub's Crossplane may
// write only providers tagged as one of the hub's spokes (<hub>-*) and may
// not re-tag one tagged otherwise, so the hub's own stays out of its reach.
func TagOIDCProvider(hub string, tags map[string]string) pulumi.ResourceTransform {
	return func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		if a.Type != "aws:iam/openIdConnectProvider:OpenIdConnectProvider" {
			return nil
		}
		t := pulumi.StringMap{}
		for k, v := range tags {
			t[k] = pulumi.String(v)
		}
		t[fence.TagCluster] = pulumi.String(hub)
		props := pulumi.Map{}
		for k, v := range a.Props {
			props[k] = v
		}
		props["tags"] = t
		return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
	}
}

// StandardZones returns the first n of names that are the region's own
// availability zones (<region><letter>), in order; Local and Wavelength
// Zones (<region>-<location>-<n><letter>) are skipped, and so are the zones
// whose ID (ids, parallel to names) EKS refuses for cluster subnets
// (internal/contract/ekszones, e.g. use1-az3).
func StandardZones(region string, names, ids []string, n int) ([]string, error) {
	usable, skipped, err := ekszones.Usable(region, names, ids)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, z := range usable {
		out = append(out, z.Name)
	}
	if len(out) < n {
		msg := fmt.Sprintf("availabilityZones %d: region %s has %d standard availability zones EKS supports (%s); allowed: 2 to %d here", n, region, len(out), strings.Join(out, ", "), len(out))
		if len(skipped) > 0 {
			msg += "; EKS does not accept cluster subnets in " + strings.Join(skipped, ", ")
		}
		return nil, errors.New(msg)
	}
	return out[:n], nil
}

// IMDSHopLimit is the hub nodes' instance metadata hop limit: 1 keeps pods
// off the node's credentials.
const IMDSHopLimit = 1

// NodePolicies are the AWS managed policies of the node role.
var NodePolicies = []string{
	"AmazonEKSWorkerNodePolicy",
	"AmazonEKS_CNI_Policy",
	"AmazonEC2ContainerRegistryReadOnly",
}

// Kubeconfig is a kubeconfig (JSON, which kubectl reads as YAML) for the
// cluster that gets tokens from `aws eks get-token`: nothing in it expires
// and nothing in it is a credential.
func Kubeconfig(clusterName, endpoint, caData, region string) (string, error) {
	cfg := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"current-context": clusterName,
		"clusters": []any{map[string]any{
			"name": clusterName,
			"cluster": map[string]any{
				"server":                     endpoint,
				"certificate-authority-data": caData,
			},
		}},
		"contexts": []any{map[string]any{
			"name":    clusterName,
			"context": map[string]any{"cluster": clusterName, "user": clusterName},
		}},
		"users": []any{map[string]any{
			"name": clusterName,
			"user": map[string]any{"exec": map[string]any{
				"apiVersion":      "client.authentication.k8s.io/v1beta1",
				"command":         "aws",
				"args":            []string{"eks", "get-token", "--cluster-name", clusterName, "--region", region, "--output", "json"},
				"interactiveMode": "Never",
			}},
		}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("render kubeconfig: %w", err)
	}
	return string(b), nil
}

// ProviderArgs are the hub's Kubernetes provider settings: kubeconfig
// reaches the cluster, clusterID names it (the cluster ARN, not the
// kubeconfig text, identifies the cluster: editing the kubeconfig must not
// replace every Kubernetes resource), and objects are applied server-side.
// ConfigMaps and Secrets are updated in place: the provider's default
// replaces one on any change of its data and, its name being fixed,
// deletes it first, so a sealing-key rotation deleted cluster-info under
// every Kustomization that substitutes from it (pulumi-kubernetes
// provider/pkg/provider/provider.go:586-616 and forceNewProperties,
// enableConfigMapMutable and enableSecretMutable; found when the suite ran the
// rotation's `pulumi up` through the real engine). The real-controller
// suite runs FluxBootstrap through the real engine with these settings.
//
// Its requests may take ClientTimeout seconds. The provider reads the API
// server's whole OpenAPI v2 document when it starts (pulumi-kubernetes
// provider/pkg/provider/provider.go:879-883 at versions.PulumiKubernetesProvider),
// with client-go's discovery default of 32 s (client-go v0.33.3
// discovery/discovery_client.go:57) unless kubeClientSettings sets a
// timeout (provider.go:825-858); a hub's document holds every CRD Flux
// and Crossplane install, and the first read after they changed is
// rebuilt by the API server. When that took longer, the provider marked
// the cluster unreachable and `pulumi destroy` failed on its first step
// (the suite's landing run at 2f8434f; pulumi-kubernetes#1839, #2365).
func ProviderArgs(kubeconfig, clusterID pulumi.StringInput) *kubernetes.ProviderArgs {
	return &kubernetes.ProviderArgs{
		Kubeconfig:             kubeconfig,
		ClusterIdentifier:      clusterID,
		EnableServerSideApply:  pulumi.Bool(true),
		EnableConfigMapMutable: pulumi.Bool(true),
		EnableSecretMutable:    pulumi.Bool(true),
		KubeClientSettings:     &kubernetes.KubeClientSettingsArgs{Timeout: pulumi.IntPtr(ClientTimeout)},
	}
}

// ClientTimeout is the hub provider's request timeout in seconds: twice
// kube-apiserver's own limit for a request (--request-timeout, 1 minute),
// so the API server, not the client, decides when a slow read has failed.
// The watches behind the provider's awaits end at this age too; their
// informers start new ones.
const ClientTimeout = 120
