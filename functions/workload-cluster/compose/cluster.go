package compose

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

const (
	eksV1 = "eks.aws.upbound.io/v1beta1"
	// eksV2 is the storage version of Cluster and NodeGroup (v1beta1 is
	// deprecated since provider-upjet-aws v2.6.0): singleton blocks are
	// objects, not one-element lists.
	eksV2  = "eks.aws.upbound.io/v1beta2"
	logsV1 = "cloudwatchlogs.aws.upbound.io/v1beta1"
	// ec2V2 is the storage version of LaunchTemplate.
	ec2V2 = "ec2.aws.upbound.io/v1beta2"
	// externalName is the annotation naming a managed resource in AWS.
	externalName = "crossplane.io/external-name"
	// NodeGroupName is the managed node group's name inside its cluster.
	NodeGroupName = "default"
)

// ControlPlaneLogTypes are the EKS control-plane logs every spoke sends to
// its log group.
var controlPlaneLogTypes = []any{"api", "audit", "authenticator", "controllerManager", "scheduler"}

// ClusterPart composes the spoke's control-plane log group, EKS cluster,
// the nodes' launch template, node group, OIDC provider and the access
// entries (hub Flux, spoke admin role) with the cluster-admin access
// policy.
//
// The log group comes first: the cluster is composed only once the log
// group is Ready (or the cluster already exists), so EKS never creates
// /aws/eks/<cluster>/cluster itself without a retention. On teardown the
// log group is deleted, not orphaned (deletionPolicy Delete, skipDestroy
// false), after the cluster (a ClusterUsage holds it by the cluster), so
// EKS cannot recreate it behind us.
func ClusterPart(p Params, c *Composed) error {
	if err := checkSpec(p.Spec); err != nil {
		return err
	}
	hub := p.env()
	eks := spokeiam.ClusterName(hub, p.Spoke)
	name := func(part string) string { return p.Spoke + "-" + part }
	tags := func() map[string]any {
		t := map[string]any{}
		for k, v := range p.Spec.Tags {
			t[k] = v
		}
		t[fence.TagCluster] = eks
		return t
	}
	mr := func(apiVersion, kind, metaName, extName string, fp Object) Object {
		md := Object{"name": metaName}
		if extName != "" {
			md["annotations"] = Object{externalName: extName}
		}
		return Object{"apiVersion": apiVersion, "kind": kind, "metadata": md, "spec": Object{"forProvider": fp}}
	}
	ref := func(n string) Object { return Object{"name": n} }

	logGroup := mr(logsV1, "Group", name("logs"), workloadcluster.ControlPlaneLogGroup(eks), Object{
		"region": p.Spec.Region, "retentionInDays": p.Input.LogRetentionDays, "skipDestroy": false, "tags": tags()})
	logGroup["spec"].(Object)["deletionPolicy"] = "Delete"
	if err := c.add("log-group", logGroup); err != nil {
		return err
	}
	_, clusterExists := p.Observed["cluster"]
	if !clusterExists && !IsReady(p.Observed["log-group"]) {
		c.Pending = append(c.Pending, "cluster, node group and access entries wait for log group "+workloadcluster.ControlPlaneLogGroup(eks))
		return nil
	}

	var subnets, private []any
	for _, z := range AZSuffixes[:p.Spec.AvailabilityZones] {
		subnets = append(subnets, ref(name("public-"+z)), ref(name("private-"+z)))
		private = append(private, ref(name("private-"+z)))
	}
	cidrs := slices.Clone(p.Input.HubEgressCIDRs)
	for _, x := range p.Spec.PublicAccessCIDRs {
		if !slices.Contains(cidrs, x) {
			cidrs = append(cidrs, x)
		}
	}
	steps := p.kubernetesSteps()
	if u := p.upgrading(); u != "" {
		c.Progressing = append(c.Progressing, u)
	}
	publicAccess := make([]any, len(cidrs))
	for i, x := range cidrs {
		publicAccess[i] = x
	}
	if err := c.add("cluster", mr(eksV2, "Cluster", name("eks"), eks, Object{
		"region":     p.Spec.Region,
		"version":    steps.Cluster,
		"roleArnRef": ref(spokeiam.RoleName(hub, p.Spoke, spokeiam.RoleCluster)),
		"accessConfig": Object{
			"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": false},
		"enabledClusterLogTypes": slices.Clone(controlPlaneLogTypes),
		"vpcConfig": Object{
			"endpointPrivateAccess": true, "endpointPublicAccess": true,
			// The hub's NAT egress first: a claim never locks out the
			// hub's Flux, which bootstraps the spoke through it.
			"publicAccessCidrs": publicAccess,
			"subnetIdRefs":      subnets,
		},
		"tags": tags(),
	})); err != nil {
		return err
	}
	// The nodes' launch template tags what EKS launches from it (the
	// instances, their primary network interfaces and volumes) as the
	// spoke's: the VPC CNI, running under the node role and so under the
	// spoke's permissions boundary, assigns pod IPs on the primary
	// interface, which EKS would leave untagged and the boundary would
	// refuse.
	launchTemplate := workloadcluster.NodeLaunchTemplateName(eks)
	var tagSpecs []any
	for _, rt := range NodeTaggedResourceTypes {
		tagSpecs = append(tagSpecs, Object{"resourceType": rt, "tags": tags()})
	}
	if err := c.add("launch-template", mr(ec2V2, "LaunchTemplate", name("nodes"), "", Object{
		"region": p.Spec.Region, "name": launchTemplate, "updateDefaultVersion": true,
		"tagSpecifications": tagSpecs,
		// IMDSv2 only, one hop: pods off the host network cannot reach
		// it and borrow the node role; what needs AWS runs with IRSA, and
		// the host-network add-ons (VPC CNI, kube-proxy) are one hop away.
		"metadataOptions": Object{"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1},
		"tags":            tags(),
	})); err != nil {
		return err
	}
	version := launchTemplateVersion(p.Observed["launch-template"])
	want := Object{
		"region":         p.Spec.Region,
		"version":        steps.Nodes,
		"clusterNameRef": ref(name("eks")),
		"nodeRoleArnRef": ref(spokeiam.RoleName(hub, p.Spoke, spokeiam.RoleNode)),
		"subnetIdRefs":   private,
		"amiType":        "AL2023_x86_64_STANDARD",
		"capacityType":   "ON_DEMAND",
		"instanceTypes":  toAny(p.Spec.Nodes.InstanceTypes),
		"launchTemplate": Object{"name": launchTemplate},
		"updateConfig":   Object{"maxUnavailable": 1},
		"scalingConfig":  Object{"minSize": p.Spec.Nodes.Min, "desiredSize": p.Spec.Nodes.Desired, "maxSize": p.Spec.Nodes.Max},
		"tags":           tags(),
	}
	plan := planNodeGroups(p.Observed, shapeOf(want))
	for _, sp := range plan.Slots {
		fp := maps.Clone(want)
		lt := Object{"name": launchTemplate}
		switch {
		case version != "":
			lt["version"] = version
		case !sp.New:
			if v := observedLaunchTemplateVersion(p.Observed[sp.Slot.Key]); v != "" {
				lt["version"] = v // keep what the nodes run until the template reports
			}
		}
		fp["launchTemplate"] = lt
		if k := sp.Keep; k != nil {
			// What EKS fixed at the group's creation stays as it runs; the
			// rest (scaling, Kubernetes version, template version) is
			// updated in place.
			if k.InstanceTypes != "" {
				fp["instanceTypes"] = toAny(strings.Split(k.InstanceTypes, ","))
			}
			for f, v := range map[string]string{"amiType": k.AMIType, "capacityType": k.CapacityType} {
				if v != "" {
					fp[f] = v
				}
			}
			if k.LaunchTemplate == "" {
				// made by a release before the launch template
				delete(fp, "launchTemplate")
			} else {
				lt["name"] = k.LaunchTemplate
			}
		}
		if sp.New {
			switch {
			case !IsReady(p.Observed["cluster"]):
				// EKS refuses CreateNodegroup until the cluster is ACTIVE, so
				// the provider resolves the node group's cluster only then
				// (provider-upjet-aws ExternalNameIfClusterActive,
				// apis/cluster/eks/v1beta2/reference.go:15) and until then
				// fails the reconcile, backing off up to a minute; composed
				// once the cluster is Ready, the node group is created at
				// once. A replacement waits the same way.
				c.Pending = append(c.Pending, "node group "+sp.Slot.Name+" waits for cluster "+eks+" to be active")
				continue
			case version == "":
				c.Pending = append(c.Pending, "node group "+sp.Slot.Name+" waits for launch template "+launchTemplate)
				continue
			}
		}
		if err := c.add(sp.Slot.Key, mr(eksV2, "NodeGroup", name(sp.Slot.Part), sp.Slot.Name, fp)); err != nil {
			return err
		}
	}
	nodeGroupNotices(p, c, plan, eks, launchTemplate)
	if err := addonsPart(p, c, steps, mr, tags); err != nil {
		return err
	}
	admin := fmt.Sprintf("arn:%s:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy", hub.Partition)
	for _, a := range []struct{ who, principal string }{
		{"flux", p.Input.FluxRoleARN},
		{"admin", spokeiam.RoleARN(hub, p.Spoke, spokeiam.RoleAdmin)},
	} {
		if err := c.add("access-entry-"+a.who, mr(eksV1, "AccessEntry", name(a.who), "", Object{
			"region": p.Spec.Region, "clusterNameRef": ref(name("eks")), "type": "STANDARD", "principalArn": a.principal,
			// The hub's Crossplane may associate a policy with, change
			// and delete only access entries tagged as the fleet's.
			"tags": tags(),
		})); err != nil {
			return err
		}
		if err := c.add("access-policy-"+a.who, mr(eksV1, "AccessPolicyAssociation", name(a.who), "", Object{
			"region": p.Spec.Region, "clusterNameRef": ref(name("eks")), "principalArn": a.principal,
			"policyArn": admin, "accessScope": Object{"type": "cluster"},
		})); err != nil {
			return err
		}
	}
	c.Status["eksClusterName"] = eks
	if arn, ok := atProvider(p.Observed["cluster"], "arn").(string); ok && arn != "" {
		c.Status["clusterArn"] = arn
	}
	// The spoke's IRSA identity provider, from the issuer the cluster
	// reports. No thumbprint: IAM trusts the EKS issuer's CA itself.
	if issuer := p.oidcIssuer(); issuer != "" {
		c.Status["oidcIssuer"] = issuer
		return c.add("oidc-provider", mr(iamV1, "OpenIDConnectProvider", name("oidc"), "", Object{
			"url": "https://" + issuer, "clientIdList": []any{"sts.amazonaws.com"}, "tags": tags(),
		}))
	}
	return nil
}

// addonsPart composes EKS's managed vpc-cni, kube-proxy and coredns, so
// that they upgrade with the spoke (EKS installs them self-managed, and
// never upgrades those). Each runs EKS's default version for the
// Kubernetes version the nodes report (kubernetesSteps), as the hub read
// it (cluster-info SPOKE_ADDON_VERSIONS). They come once the node group is
// Ready: coredns becomes active only on nodes. EKS takes over the
// self-managed ones it installed (resolveConflictsOnCreate OVERWRITE) and
// its own defaults win on an update except for the one setting the fleet
// gives, the VPC CNI's interface tags (vpcCNIConfiguration). The VPC CNI
// keeps the node role's permissions (no service-account role), which the
// spoke's boundary fences.
func addonsPart(p Params, c *Composed, steps kubernetesSteps, mr func(apiVersion, kind, metaName, extName string, fp Object) Object, tags func() map[string]any) error {
	nodesReady := slices.ContainsFunc(liveNodeGroups(p.Observed), IsReady)
	started := false
	for _, a := range versions.EKSAddons() {
		if _, ok := p.Observed["addon-"+a]; ok {
			started = true
		}
	}
	if !started && !nodesReady {
		c.Pending = append(c.Pending, "EKS add-ons wait for the node group")
		return nil
	}
	for _, a := range versions.EKSAddons() {
		key := "addon-" + a
		v, ok := p.addonVersion(steps.Addons, a)
		if !ok {
			// Keep what runs; the hub has not looked this version up.
			v = str(field(p.Observed[key], "spec", "forProvider"), "addonVersion")
			c.Pending = append(c.Pending, fmt.Sprintf("EKS add-on %s: cluster-info %s has no version for Kubernetes %s in %s (run pulumi up on the hub)",
				a, clusterinfo.SpokeAddonVersions, steps.Addons, p.Spec.Region))
			if v == "" {
				continue
			}
		}
		fp := Object{
			"region": p.Spec.Region, "clusterNameRef": Object{"name": p.Spoke + "-eks"},
			"addonName": a, "addonVersion": v,
			"resolveConflictsOnCreate": "OVERWRITE", "resolveConflictsOnUpdate": "OVERWRITE",
			"tags": tags(),
		}
		if a == VPCCNIAddon {
			cfg, err := vpcCNIConfiguration(spokeiam.ClusterName(p.env(), p.Spoke))
			if err != nil {
				return err
			}
			fp["configurationValues"] = cfg
		}
		if err := c.add(key, mr(eksV1, "Addon", p.Spoke+"-"+a, "", fp)); err != nil {
			return err
		}
	}
	return nil
}

// VPCCNIAddon is the EKS add-on name of the VPC CNI.
const VPCCNIAddon = "vpc-cni"

// vpcCNIConfiguration is the VPC CNI add-on's configurationValues: the
// network interfaces the CNI creates for pod IPs carry the fleet's cluster
// tag (ADDITIONAL_ENI_TAGS), the one tag the spokes' boundary lets the node
// role attach, assign IPs on and delete by. Without it they carry only the
// CNI's node.k8s.amazonaws.com/instance_id unless CLUSTER_NAME is set
// (amazon-vpc-cni-k8s pkg/awsutils/awsutils.go, eniClusterTagKey and
// clusterNameEnvVar), which nothing in the fleet set and no EKS document
// says the managed add-on sets: then the boundary refuses to attach them,
// pods past the primary interface's IPs never start, and the interfaces
// leak and hold the subnets at teardown.
// The CNI refuses only keys under k8s.amazonaws.com (reservedTagKeyPrefix).
func vpcCNIConfiguration(cluster string) (string, error) {
	tags, err := json.Marshal(map[string]string{fence.TagCluster: cluster})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(Object{"env": Object{"ADDITIONAL_ENI_TAGS": string(tags)}})
	return string(b), err
}

// NodeTaggedResourceTypes are what the nodes' launch template tags as the
// spoke's (EC2 TagSpecification resource types).
var NodeTaggedResourceTypes = []string{"instance", "network-interface", "volume"}

// launchTemplateVersion is the observed launch template's latest version,
// as the node group names it ("" until AWS reports one).
func launchTemplateVersion(o Object) string {
	switch v := atProvider(o, "latestVersion").(type) {
	case float64:
		if v > 0 {
			return fmt.Sprintf("%d", int64(v))
		}
	case int64:
		if v > 0 {
			return fmt.Sprintf("%d", v)
		}
	case int:
		if v > 0 {
			return fmt.Sprintf("%d", v)
		}
	}
	return ""
}

// NodeLaunchTemplateCondition is the XR (and claim) condition that says
// whether the spoke's node group runs from the fleet's launch template.
const NodeLaunchTemplateCondition = "NodeLaunchTemplate"

// observedLaunchTemplateVersion is the version the observed node group runs.
func observedLaunchTemplateVersion(o Object) string {
	lt, _ := atProvider(o, "launchTemplate").(map[string]any)
	v, _ := lt["version"].(string)
	return v
}

// checkSpec refuses the spec fields the cluster is built from, naming them.
func checkSpec(s workloadcluster.Spec) error {
	switch {
	case s.Region == "":
		return fmt.Errorf("spec.region is empty")
	case versions.ValidateKubernetes(s.KubernetesVersion) != nil:
		return fmt.Errorf("spec.kubernetesVersion: %w", versions.ValidateKubernetes(s.KubernetesVersion))
	case len(s.Nodes.InstanceTypes) == 0:
		return fmt.Errorf("spec.nodes.instanceTypes is empty")
	case s.Nodes.Min < 0 || s.Nodes.Min > s.Nodes.Desired || s.Nodes.Desired > s.Nodes.Max || s.Nodes.Max < 1:
		return fmt.Errorf("spec.nodes min %d, desired %d, max %d: want 0 <= min <= desired <= max, max >= 1", s.Nodes.Min, s.Nodes.Desired, s.Nodes.Max)
	}
	return nil
}

func toAny[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
