package proof

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/awsgroups"
)

// keptComposed returns the composed objects of a claim that the walk and
// the fleet-wide checks read once the claim's own checks ran (examine):
// everything that is not an AWS managed resource or a Usage (the Flux
// objects the walk builds from, ConfigMaps, Secrets, namespaces: read by
// the graph, secret-store, impersonation and IRSA checks), and IAM roles
// (checkIRSA reads their trust policies). AWS managed resources and Usages
// are read only by the claim's own checks and by checkUnique, which keeps
// their names (composedNames). At 1,000 claims they are ~400 MB.
func keptComposed(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if keepWhole(o) {
			out = append(out, o)
		}
	}
	return out
}

// keepWhole reports whether the checks after the claim's own read o.
func keepWhole(o *unstructured.Unstructured) bool {
	g, k := o.GroupVersionKind().Group, o.GetKind()
	switch {
	case (g == "protection.crossplane.io" || g == "apiextensions.crossplane.io") && (k == "Usage" || k == "ClusterUsage"):
		return false
	case awsgroups.Managed(g):
		return strings.HasPrefix(g, "iam.") && k == "Role"
	}
	return true
}
