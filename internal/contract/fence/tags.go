package fence

import (
	"fmt"
	"strings"
)

// The tag keys AWS and the spokes' controllers write on a spoke's network,
// value the spoke's EKS cluster name. The spokes' permissions boundary
// grants writes on an existing resource by "this key equals my cluster"
// (internal/iam/hubiam SpokeBoundary), so whoever may set one of these
// keys on a resource hands it to that cluster's roles.
const (
	// TagEKSCluster is the tag EKS puts on the cluster security group and
	// the control plane's network interfaces.
	TagEKSCluster = "aws:eks:cluster-name"
	// TagEKSNodeCluster is the tag EKS puts on a managed node group's
	// instances.
	TagEKSNodeCluster = "eks:cluster-name"
	// TagCNICluster is the tag the VPC CNI puts on the network interfaces
	// it creates (amazon-vpc-cni-k8s pkg/awsutils, eniClusterTagKey).
	TagCNICluster = "cluster.k8s.amazonaws.com/name"
	// TagLBCCluster is the tag the AWS Load Balancer Controller puts on
	// what it creates.
	TagLBCCluster = "elbv2.k8s.aws/cluster"
)

// TrustedTags are the tag keys the spokes' boundary grants writes by: the
// fleet's own and every key above. Each lies under a ReservedTagPrefixes
// entry (a test derives them from the boundary and holds them to it).
func TrustedTags() []string {
	return []string{TagCluster, TagEKSCluster, TagEKSNodeCluster, TagCNICluster, TagLBCCluster}
}

// ReservedPrefix is a tag-key namespace that AWS, the fleet or a
// controller running on spokes writes in, and no user tag may use.
type ReservedPrefix struct {
	// Prefix is lower case; keys are compared with it case-insensitively,
	// because IAM matches the tag key of aws:ResourceTag/<key> and
	// aws:RequestTag/<key> without regard to case.
	Prefix string
	// Owner is who writes keys under it.
	Owner string
}

// ReservedTagPrefixes are the namespaces a claim's spec.tags and the hub
// stack's tags may not use. Every key the boundary trusts, every key the
// fleet puts on roles and resources, and every key the spokes' controllers
// write (the VPC CNI's node and cluster keys, the load balancer
// controller's ingress, service and elbv2 keys, Kubernetes' subnet and
// cluster-ownership keys) lies under one.
func ReservedTagPrefixes() []ReservedPrefix {
	return []ReservedPrefix{
		{"aws:", "AWS"},
		{"eksfleet.io/", "the fleet"},
		{"kubernetes.io/", "Kubernetes and the load balancer controller (subnet roles, cluster ownership)"},
		{"eks:", "EKS"},
		{"cluster.k8s.amazonaws.com/", "the VPC CNI"},
		{"node.k8s.amazonaws.com/", "the VPC CNI"},
		{"cni.networking.k8s.aws/", "the VPC CNI (subnet discovery)"},
		{"elbv2.k8s.aws/", "the AWS Load Balancer Controller"},
		{"ingress.k8s.aws/", "the AWS Load Balancer Controller"},
		{"service.k8s.aws/", "the AWS Load Balancer Controller"},
	}
}

// CheckUserTagKey refuses a user tag key (a claim's or the hub stack's)
// under a reserved prefix, naming the prefix and who writes it.
func CheckUserTagKey(key string) error {
	lower := strings.ToLower(key)
	for _, r := range ReservedTagPrefixes() {
		if strings.HasPrefix(lower, r.Prefix) {
			return fmt.Errorf("tag key %q is reserved: keys starting with %s (any case) are written by %s and the spokes' permissions fence reads them; reserved prefixes: %s",
				key, r.Prefix, r.Owner, strings.Join(ReservedTagPrefixList(), ", "))
		}
	}
	return nil
}

// ReservedTagPrefixList is ReservedTagPrefixes' prefixes, in order.
func ReservedTagPrefixList() []string {
	var out []string
	for _, r := range ReservedTagPrefixes() {
		out = append(out, r.Prefix)
	}
	return out
}

// ReservedTagsCEL is the CEL rule the WorkloadCluster XRD's spec.tags
// carries (x-kubernetes-validations on the map, keys named k): every key 1
// to 128 characters and under no reserved prefix, in any case.
func ReservedTagsCEL() string { return "self.all(k, " + tagKeyOK() + ")" }

func tagKeyOK() string {
	quoted := make([]string, 0, len(ReservedTagPrefixes()))
	for _, p := range ReservedTagPrefixList() {
		quoted = append(quoted, "'"+p+"'")
	}
	return "size(k) >= 1 && size(k) <= 128 && ![" + strings.Join(quoted, ", ") + "].exists(p, k.lowerAscii().startsWith(p))"
}

// ReservedTagsMessage is the message of that rule. The rule carries no
// messageExpression naming the refused keys: with map keys of unbounded
// length (a CRD schema cannot bound them) the API server estimates its cost
// at more than 100 times the budget and refuses the CRD
// (TestTreeCRDsPassTheAPIServer); fleet validate, fleet cluster add and the
// function name the keys.
func ReservedTagsMessage() string {
	return "keys must be 1-128 characters and must not start with (in any case) " + strings.Join(ReservedTagPrefixList(), ", ") +
		" (AWS, the fleet and the controllers on spokes write those keys, and the permissions fence of the spokes reads them)"
}
