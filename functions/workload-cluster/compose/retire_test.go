package compose

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// retiredObserved is what a spoke bootstrapped before the hub handed over
// the sealing keys has of its retired steps, as that release composed them.
func retiredObserved() map[string]Object {
	spec := func(path, deletionPolicy string, deps ...string) Object {
		s := Object{"path": "./manifests/gitops-system/spoke-bootstrap/" + path, "deletionPolicy": deletionPolicy,
			"timeout": "10m", "prune": true, "wait": true, "sourceRef": Object{"kind": "GitRepository", "name": "flux-system"}}
		if len(deps) > 0 {
			s["dependsOn"] = []any{Object{"name": deps[0]}}
		}
		return s
	}
	ks := func(name string, spec Object) Object {
		return Object{"apiVersion": KustomizationAPI, "kind": "Kustomization",
			"metadata": Object{"name": name, "namespace": BootstrapNamespace, "uid": "observed"},
			"spec":     spec, "status": Object{"conditions": []any{Object{"type": "Ready", "status": "False"}}}}
	}
	return map[string]Object{
		"bootstrap-eso-controller": ks("pay-eso-controller", spec("external-secrets", "WaitForTermination")),
		"bootstrap-secret-store":   ks("pay-secret-store", spec("secret-store", "Orphan", "pay-eso-controller")),
	}
}

func TestRetiringSteps(t *testing.T) {
	keysReady := Object{"status": Object{"conditions": []any{Object{"type": "Ready", "status": "True"}}}}
	keysNotReady := Object{"status": Object{"conditions": []any{Object{"type": "Ready", "status": "False"}}}}
	// As observed, with only metadata the function sets and deletionPolicy
	// as given.
	kept := func(key, deletionPolicy string) Object {
		o := retiredObserved()[key]
		spec := o["spec"].(Object)
		if deletionPolicy != "" {
			spec["deletionPolicy"] = deletionPolicy
		}
		return Object{"apiVersion": o["apiVersion"], "kind": o["kind"],
			"metadata": Object{"name": field(o, "metadata", "name"), "namespace": BootstrapNamespace}, "spec": spec}
	}
	kubeconfigHeld := Object{"apiVersion": UsageAPI, "kind": "Usage",
		"metadata": Object{"name": "pay-uses-kubeconfig-by-eso-controller", "namespace": BootstrapNamespace},
		"spec": Object{"replayDeletion": true,
			"of": Object{"apiVersion": "v1", "kind": "ConfigMap", "resourceRef": Object{"name": "pay-kubeconfig", "namespace": BootstrapNamespace}},
			"by": Object{"apiVersion": KustomizationAPI, "kind": "Kustomization", "resourceRef": Object{"name": "pay-eso-controller"}}}}
	bothKept := map[string]Object{
		"bootstrap-eso-controller":           kept("bootstrap-eso-controller", ""),
		"bootstrap-secret-store":             kept("bootstrap-secret-store", "Delete"),
		"usage-kubeconfig-by-eso-controller": kubeconfigHeld,
	}
	tests := []struct {
		name     string
		reason   string
		observed []string // of retiredObserved's
		keys     Object   // the observed sealing-keys step; nil: not yet
		want     map[string]Object
	}{
		{name: "NewSpoke", reason: "a spoke bootstrapped by this release has nothing to retire",
			want: map[string]Object{}},
		{name: "KeysNotThere", reason: "until the keys the hub hands over are on the spoke, both stay; the store will prune what it applied",
			observed: []string{"bootstrap-eso-controller", "bootstrap-secret-store"},
			want:     bothKept},
		{name: "KeysNotReady", reason: "a sealing-keys step that is not Ready does not retire them",
			observed: []string{"bootstrap-eso-controller", "bootstrap-secret-store"}, keys: keysNotReady,
			want: bothKept},
		{name: "KeysReady", reason: "the store goes first, while External Secrets runs to remove its objects' finalizers",
			observed: []string{"bootstrap-eso-controller", "bootstrap-secret-store"}, keys: keysReady,
			want: map[string]Object{
				"bootstrap-eso-controller":           kept("bootstrap-eso-controller", ""),
				"usage-kubeconfig-by-eso-controller": kubeconfigHeld,
			}},
		{name: "StoreGone", reason: "External Secrets is uninstalled once the store is gone",
			observed: []string{"bootstrap-eso-controller"}, keys: keysReady,
			want: map[string]Object{}},
		{name: "StoreGoneKeysNotReady", reason: "a sealing-keys step that is no longer Ready brings nothing back",
			observed: []string{"bootstrap-eso-controller"}, keys: keysNotReady,
			want: map[string]Object{}},
		{name: "Retired", reason: "nothing comes back",
			keys: keysReady, want: map[string]Object{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := map[string]Object{}
			for _, k := range tt.observed {
				obs[k] = retiredObserved()[k]
			}
			if tt.keys != nil {
				obs[StepKeyPrefix+SealingKeysPart] = tt.keys
			}
			got := retiringSteps("pay", obs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s: retiringSteps (-want +got):\n%s", tt.reason, diff)
			}
			// Bootstrap composes them beside the current steps.
			all, _ := mustBootstrap(t, "pay", func() map[string]Object { m := awsObserved("pay"); maps.Copy(m, obs); return m }())
			for k := range tt.want {
				if diff := cmp.Diff(tt.want[k], all[k]); diff != "" {
					t.Errorf("%s: Bootstrap's %s (-want +got):\n%s", tt.reason, k, diff)
				}
			}
			for _, k := range []string{"bootstrap-eso-controller", "bootstrap-secret-store"} {
				if _, composed := all[k]; composed != slices.Contains(slices.Collect(maps.Keys(tt.want)), k) {
					t.Errorf("%s: Bootstrap composes %s: %v", tt.reason, k, composed)
				}
			}
		})
	}
}
