package rbacproof

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func objs(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

const (
	deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app, namespace: team}\n"
	policyObj  = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: app, namespace: team}\n"
	namespace  = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n"
	role       = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: flux-team, namespace: team}
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, create, patch, delete]
- apiGroups: [apps]
  resources: [replicasets]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
`
	binding = `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: flux-team, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: flux-team}
subjects:
- {kind: ServiceAccount, name: team-sa, namespace: flux-system}
`
)

func TestMissing(t *testing.T) {
	acct := Account{Namespace: "flux-system", Name: "team-sa"}
	tests := []struct {
		name  string
		rbac  []string
		build []string
		wait  bool
		want  []string // substrings, one per expected message; nil: none
		wantN int
	}{
		{"role covers apply, prune and kstatus reads", []string{role, binding}, []string{deployment}, true, nil, 0},
		{"no wait: kstatus reads not needed", []string{strings.Replace(role, "resources: [pods]", "resources: [events]", 1), binding}, []string{deployment}, false, nil, 0},
		{"wait needs pods", []string{strings.Replace(role, "resources: [pods]", "resources: [events]", 1), binding}, []string{deployment}, true, []string{"may not get,list pods.core in namespace team"}, 1},
		{"missing delete", []string{strings.Replace(role, "verbs: [get, create, patch, delete]", "verbs: [get, create, patch]", 1), binding}, []string{deployment}, true, []string{"prune Deployment team/app", "may not delete deployments.apps"}, 1},
		{"binding names another account", []string{role, strings.Replace(binding, "team-sa", "other", 1)}, []string{deployment}, false, []string{"may not create deployments.apps", "may not get,patch deployments.apps", "may not delete"}, 3},
		{"ServiceAccount subject defaults to the binding's namespace", []string{role, strings.Replace(binding, ", namespace: flux-system}", "}", 1)}, []string{deployment}, false, []string{"apply", "prune"}, 3},
		{"user subject for the account", []string{role, strings.Replace(binding, "{kind: ServiceAccount, name: team-sa, namespace: flux-system}", "{kind: User, name: \"system:serviceaccount:flux-system:team-sa\"}", 1)}, []string{deployment}, true, nil, 0},
		{"group of the account's namespace", []string{role, strings.Replace(binding, "{kind: ServiceAccount, name: team-sa, namespace: flux-system}", "{kind: Group, name: \"system:serviceaccounts:flux-system\"}", 1)}, []string{deployment}, true, nil, 0},
		{"role in another namespace does not count", []string{strings.Replace(role, "namespace: team}", "namespace: other}", 1), binding}, []string{deployment}, false, []string{"apply", "prune"}, 3},
		{"wildcard verbs and resources (Kubernetes' rule comparison)", []string{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: admin-ish}\nrules:\n- {apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}\n",
			strings.Replace(strings.Replace(binding, "kind: Role, name: flux-team", "kind: ClusterRole, name: admin-ish", 1), "kind: RoleBinding", "kind: RoleBinding", 1)}, []string{deployment, policyObj}, true, nil, 0},
		{"resourceNames restrict: not enough for create", []string{strings.Replace(role, "  resources: [deployments]\n", "  resources: [deployments]\n  resourceNames: [app]\n", 1), binding}, []string{deployment}, false, []string{"apply Deployment team/app: service account flux-system/team-sa may not create deployments.apps"}, 1},
		{"cluster-scoped object needs a ClusterRoleBinding", []string{role, binding}, []string{namespace}, false, []string{"namespaces.core cluster-wide"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := NewPolicy(objs(t, tt.rbac...))
			if err != nil {
				t.Fatal(err)
			}
			got := pol.Missing(acct, Needs(objs(t, tt.build...), tt.wait))
			if len(got) != tt.wantN {
				t.Fatalf("got %d messages, want %d: %q", len(got), tt.wantN, got)
			}
			all := strings.Join(got, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("messages lack %q: %q", w, got)
				}
			}
		})
	}
}
