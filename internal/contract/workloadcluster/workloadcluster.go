// Package workloadcluster is the Go face of the WorkloadCluster API that the
// platform team serves from the hub (XRD in
// manifests/gitops-system/platform-apis/workload-cluster). fleet writes
// claims with these types; tests check the XRD against them.
package workloadcluster

import (
	"maps"
	"regexp"
	"slices"
)

// TeamLabel on a claim names the team that owns the cluster (a team of the
// fleet policy's spec.teams). fleet cluster add --team writes it; the pull
// request gate auto-approves a change of the claim only for that team's
// members, and never a change of the label itself.
const TeamLabel = "eksfleet.io/team"

// TeamNameRE is the form of a team name: a lower-case DNS label, so that
// it is a valid label value.
var TeamNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// API coordinates.
const (
	Group          = "platform.eksfleet.io"
	Version        = "v1alpha1"
	APIVersion     = Group + "/" + Version
	ClaimKind      = "WorkloadCluster"
	CompositeKind  = "XWorkloadCluster"
	ClaimNamespace = "workload-clusters"
	// MaxNameLength keeps every derived AWS name (IAM roles are limited to
	// 64 characters: <hub>-spoke-<name>-<suffix>) within bounds.
	MaxNameLength = 20
	// MaxHubNameLength is the matching limit for the hub's name.
	MaxHubNameLength = 20
)

// NAT modes.
const (
	NATSingle = "single"
	NATPerAZ  = "per-az"
)

// Claim is a WorkloadCluster claim as stored in Git.
type Claim struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// DeepCopy returns a copy of c that shares nothing with it.
func (c *Claim) DeepCopy() *Claim {
	if c == nil {
		return nil
	}
	out := *c
	out.Metadata.Labels = maps.Clone(c.Metadata.Labels)
	out.Spec.PublicAccessCIDRs = slices.Clone(c.Spec.PublicAccessCIDRs)
	out.Spec.AdminPrincipalARNs = slices.Clone(c.Spec.AdminPrincipalARNs)
	out.Spec.Tags = maps.Clone(c.Spec.Tags)
	out.Spec.Nodes.InstanceTypes = slices.Clone(c.Spec.Nodes.InstanceTypes)
	return &out
}

// Metadata is the part of ObjectMeta a claim file carries.
type Metadata struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Spec is what an application team may choose for its cluster.
type Spec struct {
	// Account is the AWS account the spoke lives in, one of the fleet's
	// spoke accounts; empty: the hub's. Fixed once the spoke exists.
	Account            string            `json:"account,omitempty"`
	Region             string            `json:"region"`
	KubernetesVersion  string            `json:"kubernetesVersion"`
	VPCCIDR            string            `json:"vpcCidr"`
	AvailabilityZones  int               `json:"availabilityZones"`
	NATMode            string            `json:"natMode"`
	Nodes              Nodes             `json:"nodes"`
	PublicAccessCIDRs  []string          `json:"publicAccessCidrs,omitempty"`
	AdminPrincipalARNs []string          `json:"adminPrincipalArns,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
}

// A spoke has 2 or 3 availability zones (the XRD's bounds): EKS needs
// subnets in at least two.
const (
	MinAvailabilityZones = 2
	MaxAvailabilityZones = 3
)

// Nodes is the managed node group's shape.
type Nodes struct {
	InstanceTypes []string `json:"instanceTypes"`
	Min           int      `json:"min"`
	Desired       int      `json:"desired"`
	Max           int      `json:"max"`
}

// ControlPlaneLogGroup is the CloudWatch Logs group EKS writes a cluster's
// control-plane logs to; the hub's and every spoke's is created (with a
// retention) before its cluster so EKS does not create one without.
func ControlPlaneLogGroup(clusterName string) string { return "/aws/eks/" + clusterName + "/cluster" }

// ElasticIPs is how many Elastic IPs the spoke's NAT gateways take: one
// with natMode single, one per zone with per-az.
func (s Spec) ElasticIPs() int {
	if s.NATMode == NATPerAZ {
		return s.AvailabilityZones
	}
	return 1
}

// NodeLaunchTemplateName is the EC2 launch template of a spoke's managed
// node group.
func NodeLaunchTemplateName(clusterName string) string { return clusterName + "-nodes" }

// LogRetentionDays are the retention values CloudWatch Logs accepts (the
// hub's logRetentionDays setting, cluster-info LOG_RETENTION_DAYS).
var LogRetentionDays = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}
