package aws

import (
	"fmt"
	"strings"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// eksRefusal is AWS's refusal of creating or changing a resource of
// Terraform type tf (old is nil on create) against the cluster's state and
// the Kubernetes versions EKS allows, "" if EKS takes the call:
//
//   - UpdateClusterVersion moves a control plane one minor version at a
//     time ("Unsupported Kubernetes minor version update from %s to %s"),
//     and only once every managed node group of the cluster runs the
//     cluster's version ("Nodegroups %s must be updated to match cluster
//     version %s before updating cluster version", the API's message as
//     hashicorp/terraform-provider-aws#19478 quotes it);
//   - CreateNodegroup and CreateAddon need the cluster ACTIVE ("Cluster '%s'
//     is not in ACTIVE status", InvalidRequestException, as
//     eksctl-io/eksctl#2244 quotes it for a node group);
//   - CreateNodegroup and UpdateNodegroupVersion take no version newer than
//     the cluster's (EKS user guide, update-managed-node-group: "you can't
//     update a node group to a version newer than the control plane");
//   - CreateAddon and UpdateAddon take only an add-on version
//     DescribeAddonVersions lists for the cluster's Kubernetes version
//     (compat), here the versions the suite's hub looked up.
//
// The messages other than the first three are paraphrased.
func (p *Provider) eksRefusal(in *session, tf string, old *Resource, args map[string]any) string {
	s := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	now := time.Now()
	reported := func(r Resource, k string) string { v, _ := r.Reported(k, now).(string); return v }
	// The cluster's version as EKS reports it: the old one while an
	// upgrade runs.
	clusterVersion := func(name string) (string, bool) {
		for _, c := range in.ledger.Find("eks.aws.upbound.io/Cluster", nil) {
			if c.Name == name {
				return reported(c, "version"), true
			}
		}
		return "", false
	}
	switch tf {
	case "aws_eks_cluster":
		if old == nil || s(old.Attrs, "version") == s(args, "version") {
			return ""
		}
		from, to := reported(*old, "version"), s(args, "version")
		if from != s(old.Attrs, "version") {
			return fmt.Sprintf("api error ResourceInUseException: Cluster %s is already being updated to %s", old.Name, s(old.Attrs, "version"))
		}
		if fMaj, fMin, err := versions.ParseMinor(from); err == nil {
			if tMaj, tMin, err := versions.ParseMinor(to); err != nil || tMaj != fMaj || tMin != fMin+1 {
				return fmt.Sprintf("api error InvalidParameterException: Unsupported Kubernetes minor version update from %s to %s", from, to)
			}
		}
		var behind []string
		for _, ng := range in.ledger.Find("eks.aws.upbound.io/NodeGroup", nil) {
			if s(ng.Attrs, "clusterName") == old.Name && reported(ng, "version") != from {
				behind = append(behind, ng.Name)
			}
		}
		if len(behind) > 0 {
			return fmt.Sprintf("api error InvalidRequestException: Nodegroups %s must be updated to match cluster version %s before updating cluster version",
				strings.Join(behind, ", "), from)
		}
	case "aws_eks_node_group", "aws_eks_addon":
		if old == nil {
			for _, c := range in.ledger.Find("eks.aws.upbound.io/Cluster", nil) {
				if c.Name == s(args, "clusterName") && now.Before(c.ReadyAt) {
					return fmt.Sprintf("api error InvalidRequestException: Cluster '%s' is not in ACTIVE status", c.Name)
				}
			}
		}
		key := map[string]string{"aws_eks_node_group": "version", "aws_eks_addon": "addonVersion"}[tf]
		v := s(args, key)
		if v == "" || (old != nil && s(old.Attrs, key) == v) {
			return ""
		}
		cv, ok := clusterVersion(s(args, "clusterName"))
		switch {
		case !ok:
			return "api error ResourceNotFoundException: No cluster found for name: " + s(args, "clusterName")
		case tf == "aws_eks_node_group" && versions.Before(cv, v):
			return fmt.Sprintf("api error InvalidParameterException: Requested Nodegroup Kubernetes version %s is newer than the cluster's version %s", v, cv)
		case tf == "aws_eks_addon" && !addonCompatible(p.AddonVersions, s(args, "region"), cv, s(args, "addonName"), v):
			offered, _ := p.AddonVersions.Version(s(args, "region"), cv, s(args, "addonName"))
			return fmt.Sprintf("api error InvalidParameterException: Addon version %s of %s is not supported on Kubernetes %s (DescribeAddonVersions lists %q)",
				v, s(args, "addonName"), cv, offered)
		}
	}
	return ""
}

// addonCompatible reports whether version of addon is one EKS offers for
// Kubernetes k8s in region.
func addonCompatible(a clusterinfo.AddonVersions, region, k8s, addon, version string) bool {
	v, ok := a.Version(region, k8s, addon)
	return ok && v == version
}
