package test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/fleetcmd"
)

// TestImpersonationRBAC runs `fleet validate` on the repository's tree and
// on copies with planted RBAC errors: each must fail with the impersonation
// finding that names what the team's account may not do (review M6).
func TestImpersonationRBAC(t *testing.T) {
	const (
		role    = "gitops-workloads/teams/payments/role.yaml"
		binding = "gitops-workloads/teams/payments/rolebinding.yaml"
		rw      = "verbs: [get, list, watch, create, update, patch, delete]"
	)
	tests := []struct {
		name  string
		edits []factEdit
		want  []string // every one in the output; none: validate passes
	}{
		{"committed tree", nil, nil},
		{"missing delete verb: prune fails", []factEdit{{role, "resources: [deployments]\n    " + rw, "resources: [deployments]\n    verbs: [get, list, watch, create, update, patch]"}},
			[]string{"[impersonation]", "prune Deployment payments/payment-app", "may not delete deployments.apps in namespace payments"}},
		{"missing patch verb: apply fails", []factEdit{{role, "resources: [appinfrastructures]\n    " + rw, "resources: [appinfrastructures]\n    verbs: [get, list, watch, create, update, delete]"}},
			[]string{"apply AppInfrastructure payments/payment-app", "may not patch appinfrastructures.platform.eksfleet.io"}},
		{"no ReplicaSet list: kstatus health check fails", []factEdit{{role, "resources: [replicasets]\n    verbs: [get, list, watch]", "resources: [replicasets]\n    verbs: [get, watch]"}},
			[]string{"health-check Deployment payments/payment-app (kstatus lists its replicasets)", "may not list replicasets.apps"}},
		{"no Pod reads", []factEdit{{role, "resources: [pods]", "resources: [events]"}},
			[]string{"kstatus lists its pods", "may not get,list pods.core"}},
		{"binding to another account", []factEdit{{binding, "name: team-payments", "name: team-other"}},
			[]string{"service account flux-system/team-payments may not create deployments.apps in namespace payments", "may not get,patch deployments.apps"}},
		{"binding in another namespace", []factEdit{{binding, "namespace: flux-system", "namespace: payments"}},
			[]string{"service account flux-system/team-payments may not"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := "../manifests"
			if tt.edits != nil {
				tree = mutateRepo(t, tt.edits...)
			}
			var out, errOut bytes.Buffer
			code := fleetcmd.Run(context.Background(), []string{"validate", tree}, &out, &errOut)
			all := out.String() + errOut.String()
			if tt.want == nil {
				if code != 0 {
					t.Fatalf("fleet validate exit %d:\n%s", code, all)
				}
				return
			}
			if code == 0 {
				t.Fatalf("fleet validate passed a planted error:\n%s", all)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}
