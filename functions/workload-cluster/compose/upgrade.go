package compose

import (
	"fmt"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// kubernetesSteps are the Kubernetes versions composed for the control
// plane and the node group, and the version whose add-ons the spoke runs.
type kubernetesSteps struct {
	Cluster, Nodes, Addons string
}

// kubernetesSteps takes a spoke from the versions AWS reports to the
// claim's spec.kubernetesVersion in the order EKS requires, so that no step
// is refused:
//   - the control plane moves one minor version at a time, and only once
//     every managed node group runs its current version (UpdateClusterVersion
//     refuses otherwise: "Nodegroups ... must be updated to match cluster
//     version ... before updating cluster version");
//   - the nodes follow the control plane and never pass it (a node group
//     version newer than the cluster's is refused);
//   - the add-ons follow the nodes (kube-proxy must not be newer than the
//     kubelets it runs beside): their versions are those of the Kubernetes
//     version the nodes report.
//
// When the observation lacks a version (a cluster being created, a status
// written without atProvider), the versions last composed are kept.
func (p Params) kubernetesSteps() kubernetesSteps {
	spec := p.Spec.KubernetesVersion
	composed := func(key string) string {
		return str(field(p.Observed[key], "spec", "forProvider"), "version")
	}
	reported := func(key string) string {
		v, _ := atProvider(p.Observed[key], "version").(string)
		return v
	}
	// The nodes' version is the oldest any node group reports (two while
	// one replaces the other, NodeGroupSlot), the composed one the first
	// group's that has one.
	live := liveNodeGroups(p.Observed)
	nodesExist := len(live) > 0
	cluster := reported("cluster")
	var nodes, nodesComposed string
	for _, o := range live {
		if v, _ := atProvider(o, "version").(string); v != "" && (nodes == "" || versions.Before(v, nodes)) {
			nodes = v
		}
		if nodesComposed == "" {
			nodesComposed = str(field(o, "spec", "forProvider"), "version")
		}
	}

	var s kubernetesSteps
	switch {
	case cluster == "":
		s.Cluster = orDefault(composed("cluster"), spec)
		s.Nodes = orDefault(nodesComposed, s.Cluster)
	case !versions.Before(cluster, spec):
		s.Cluster, s.Nodes = spec, spec
	case nodesExist && nodes != cluster:
		// The nodes catch up before the control plane moves on.
		s.Cluster, s.Nodes = cluster, cluster
	default:
		s.Cluster, s.Nodes = versions.NextMinor(cluster), cluster
	}
	s.Addons = orDefault(nodes, s.Nodes)
	return s
}

// upgrading says what of a Kubernetes upgrade is still under way, "" when
// nothing is: the control plane, or a node group, reported older than the
// claim's spec.kubernetesVersion. Each stage is an AWS update that only
// the provider's next observation shows ends (the resources stay Ready
// throughout), and the next stage is composed when it does.
func (p Params) upgrading() string {
	spec := p.Spec.KubernetesVersion
	var at []string
	if v, _ := atProvider(p.Observed["cluster"], "version").(string); v != "" && versions.Before(v, spec) {
		at = append(at, "control plane at "+v)
	}
	nodes := ""
	for _, o := range liveNodeGroups(p.Observed) {
		if v, _ := atProvider(o, "version").(string); v != "" && versions.Before(v, spec) && (nodes == "" || versions.Before(v, nodes)) {
			nodes = v
		}
	}
	if nodes != "" {
		at = append(at, "nodes at "+nodes)
	}
	if len(at) == 0 {
		return ""
	}
	return fmt.Sprintf("Kubernetes upgrade to %s: %s", spec, strings.Join(at, ", "))
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
