package proof

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/proof/secretstore"
)

// probeNamespace stands for any namespace a tenant could create or be
// given later: it is in no build, so no store may serve it.
const probeNamespace = "tenant-probe"

// checkSecretStores: every ClusterSecretStore, on the hub and on each
// spoke, serves exactly the namespaces of the ExternalSecrets that use it
// (internal/proof/secretstore evaluates the conditions as ESO does). A store
// without conditions, or one that admits another namespace of the cluster
// (a team's) or a namespace made later, would let whoever can create an
// ExternalSecret there read what the store's role reads: the sealing key.
func (r *run) checkSecretStores() {
	type consumer struct {
		ns   string
		name string
	}
	stores := map[string]map[string]*unstructured.Unstructured{} // cluster -> name -> store
	storeFile := map[*unstructured.Unstructured]string{}
	users := map[string]map[string][]consumer{} // cluster -> store -> users
	namespaces := map[string]map[string]map[string]string{}
	for _, b := range r.w.Results {
		o := b.Object
		if namespaces[b.Cluster] == nil {
			namespaces[b.Cluster] = map[string]map[string]string{}
		}
		if ns := o.GetNamespace(); ns != "" && namespaces[b.Cluster][ns] == nil {
			namespaces[b.Cluster][ns] = map[string]string{}
		}
		if o.GetAPIVersion() == "v1" && o.GetKind() == "Namespace" {
			namespaces[b.Cluster][o.GetName()] = o.GetLabels()
		}
		if o.GroupVersionKind().Group != "external-secrets.io" {
			continue
		}
		switch o.GetKind() {
		case "ClusterSecretStore":
			if stores[b.Cluster] == nil {
				stores[b.Cluster] = map[string]*unstructured.Unstructured{}
			}
			stores[b.Cluster][o.GetName()] = o
			storeFile[o] = r.fileOf(b)
		case "ExternalSecret":
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "secretStoreRef", "kind")
			name, _, _ := unstructured.NestedString(o.Object, "spec", "secretStoreRef", "name")
			if kind != "ClusterSecretStore" {
				continue
			}
			if users[b.Cluster] == nil {
				users[b.Cluster] = map[string][]consumer{}
			}
			users[b.Cluster][name] = append(users[b.Cluster][name], consumer{o.GetNamespace(), o.GetName()})
		}
	}
	for cluster, byName := range stores {
		for name, o := range byName {
			obj := objectName(o, cluster)
			s, err := secretstore.FromObject(o)
			if err != nil {
				r.add(CheckSecretStore, storeFile[o], obj, "%v", err)
				continue
			}
			if s.Unconditioned() {
				r.add(CheckSecretStore, storeFile[o], obj, "serves every namespace: list the namespaces of its ExternalSecrets in spec.conditions")
				continue
			}
			need := map[string]bool{}
			for _, u := range users[cluster][name] {
				need[u.ns] = true
				if ok, err := s.Serves(u.ns, namespaces[cluster][u.ns]); err != nil || !ok {
					r.add(CheckSecretStore, storeFile[o], obj, "does not serve namespace %s, where ExternalSecret %s uses it (ESO refuses it): add %s to spec.conditions (%v)", u.ns, u.name, u.ns, err)
				}
			}
			cands := append([]string{probeNamespace}, s.NamedNamespaces()...)
			for ns := range namespaces[cluster] {
				cands = append(cands, ns)
			}
			sort.Strings(cands)
			cands = slices.Compact(cands)
			for _, ns := range cands {
				if need[ns] {
					continue
				}
				if ok, err := s.Serves(ns, namespaces[cluster][ns]); err != nil || ok {
					r.add(CheckSecretStore, storeFile[o], obj, "serves namespace %s, where nothing needs it: an ExternalSecret there could read what the store reads (%v)", ns, err)
				}
			}
		}
	}
}
