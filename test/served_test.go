package test

import (
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// TestControllerStalls plants, in a copy of the repository's tree, what
// the real controllers refuse although the objects are well formed: a
// Kustomization whose health checks kustomize-controller cannot build (it
// stalls before applying anything), and a composed managed resource no
// installed and activated provider serves (it never becomes Ready).
func TestControllerStalls(t *testing.T) {
	const (
		appInfra  = "gitops-system/spoke-tools/app-infra.yaml"
		providers = "gitops-system/infrastructure/crossplane-packages/providers.yaml"
		release   = "gitops-system/infrastructure/crossplane/release.yaml"
		xrdCheck  = "    - apiVersion: apiextensions.crossplane.io/v1\n      kind: CompositeResourceDefinition\n"
	)
	tests := []plantedTree{
		{"committed tree", nil, nil},
		{"two health checks for one GroupKind", []plant.Edit{{File: appInfra, Old: xrdCheck, New: "    - apiVersion: apiextensions.crossplane.io/v2\n      kind: CompositeResourceDefinition\n      current: status.conditions.exists(c, c.type == 'Established')\n" + xrdCheck}},
			[]string{"[graph]", "Kustomization flux-system/app-infra", "would stall", "duplicate custom health check for GroupKind CompositeResourceDefinition.apiextensions.crossplane.io"}},
		{"health check that does not compile", []plant.Edit{{File: appInfra, Old: "c.type == 'Offered' && c.status == 'True')", New: "c.type == 'Offered' && c.status == 'True'"}},
			[]string{"[graph]", "Kustomization flux-system/app-infra", "would stall", "healthchecks[0]"}},
		{"composed kind no installed provider serves", []plant.Edit{{File: providers, Old: "  name: provider-aws-cloudwatchlogs\n", New: "  name: provider-aws-logs\n"}, {File: providers, Old: "provider-aws-cloudwatchlogs:v", New: "provider-aws-logs:v"}},
			[]string{"[render]", "Group cloudwatchlogs.aws.upbound.io is not served on the hub", "install provider-aws-cloudwatchlogs"}},
		{"composed kind not activated", []plant.Edit{{File: release, Old: "        - groups.cloudwatchlogs.aws.upbound.io\n", New: ""}},
			[]string{"[render]", "no ManagedResourceActivationPolicy activates groups.cloudwatchlogs.aws.upbound.io"}},
	}
	validatePlanted(t, tests)
}
