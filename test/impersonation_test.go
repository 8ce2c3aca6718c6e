package test

import (
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// TestImpersonationRBAC runs `fleet validate` on the repository's tree and
// on copies with planted RBAC errors: each must fail with the impersonation
// finding that names what the team's account may not do.
func TestImpersonationRBAC(t *testing.T) {
	const (
		role    = "gitops-workloads/teams/payments/role.yaml"
		binding = "gitops-workloads/teams/payments/rolebinding.yaml"
		rw      = "verbs: [get, list, watch, create, update, patch, delete]"
	)
	tests := []plantedTree{
		{"committed tree", nil, nil},
		{"missing delete verb: prune fails", []plant.Edit{{File: role, Old: "resources: [deployments]\n    " + rw, New: "resources: [deployments]\n    verbs: [get, list, watch, create, update, patch]"}},
			[]string{"[impersonation]", "prune Deployment payments/payment-app", "may not delete deployments.apps in namespace payments"}},
		{"missing patch verb: apply fails", []plant.Edit{{File: role, Old: "resources: [appinfrastructures]\n    " + rw, New: "resources: [appinfrastructures]\n    verbs: [get, list, watch, create, update, delete]"}},
			[]string{"apply AppInfrastructure payments/payment-app", "may not patch appinfrastructures.platform.eksfleet.io"}},
		{"no ReplicaSet list: kstatus health check fails", []plant.Edit{{File: role, Old: "resources: [replicasets]\n    verbs: [get, list, watch]", New: "resources: [replicasets]\n    verbs: [get, watch]"}},
			[]string{"health-check Deployment payments/payment-app (kstatus lists its replicasets)", "may not list replicasets.apps"}},
		{"no Pod reads", []plant.Edit{{File: role, Old: "resources: [pods]", New: "resources: [events]"}},
			[]string{"kstatus lists its pods", "may not get,list pods.core"}},
		{"binding to another account", []plant.Edit{{File: binding, Old: "name: team-payments", New: "name: team-other"}},
			[]string{"service account flux-system/team-payments may not create deployments.apps in namespace payments", "may not get,patch deployments.apps"}},
		{"binding in another namespace", []plant.Edit{{File: binding, Old: "namespace: flux-system", New: "namespace: payments"}},
			[]string{"service account flux-system/team-payments may not"}},
	}
	validatePlanted(t, tests)
}
