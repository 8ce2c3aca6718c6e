package proof

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/proof/rbacproof"
)

// checkImpersonation: every Flux Kustomization with serviceAccountName may,
// as that account on the cluster it applies to, apply and prune every
// object of its build and make the reads kstatus makes to health-check
// them (internal/proof/rbacproof).
func (r *run) checkImpersonation() {
	byOrigin := map[string][]kbuild.Built{}
	byCluster := map[string][]*unstructured.Unstructured{}
	for _, b := range r.w.Results {
		byOrigin[b.Origin] = append(byOrigin[b.Origin], b)
		byCluster[b.Cluster] = append(byCluster[b.Cluster], b.Object)
	}
	policies := map[string]*rbacproof.Policy{}
	for _, b := range r.w.Results {
		o := b.Object
		if o.GroupVersionKind().Group != "kustomize.toolkit.fluxcd.io" || o.GetKind() != "Kustomization" {
			continue
		}
		sa, _, _ := unstructured.NestedString(o.Object, "spec", "serviceAccountName")
		if sa == "" {
			continue
		}
		built := byOrigin["Kustomization "+b.Cluster+": "+o.GetNamespace()+"/"+o.GetName()]
		if len(built) == 0 {
			continue // not built: the build check reports why
		}
		target := built[0].Cluster
		pol, ok := policies[target]
		if !ok {
			var err error
			if pol, err = rbacproof.NewPolicy(byCluster[target]); err != nil {
				r.add(CheckImpersonation, "", "cluster "+target, "%v", err)
				continue
			}
			policies[target] = pol
		}
		wait, _, _ := unstructured.NestedBool(o.Object, "spec", "wait")
		checks, _, _ := unstructured.NestedSlice(o.Object, "spec", "healthChecks")
		var objs []*unstructured.Unstructured
		for _, x := range built {
			objs = append(objs, x.Object)
		}
		missing := pol.Missing(rbacproof.Account{Namespace: o.GetNamespace(), Name: sa}, rbacproof.Needs(objs, wait || len(checks) > 0))
		sort.Strings(missing)
		for _, m := range missing {
			r.add(CheckImpersonation, r.fileOf(b), objectName(o, b.Cluster), "%s", m)
		}
	}
}
