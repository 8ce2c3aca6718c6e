package test

import (
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// TestSecretStoresServeOnlyTheirNamespaces runs `fleet validate` on the
// repository's tree and on copies whose ClusterSecretStores would serve a
// tenant: each must fail with the secret-store finding.
// The stores' role reads the fleet's sealing key, so a store that serves a
// team's namespace hands the key to anyone who may create an
// ExternalSecret there.
func TestSecretStoresServeOnlyTheirNamespaces(t *testing.T) {
	const (
		hub   = "gitops-system/infrastructure/secret-store/cluster-secret-store.yaml"
		spoke = "gitops-system/spoke-bootstrap/secret-store/cluster-secret-store.yaml"
		cond  = "  conditions:\n    - namespaces:\n        - sealed-secrets\n"
	)
	tests := []plantedTree{
		{"committed tree", nil, nil},
		{"hub store without conditions", []plant.Edit{{File: hub, Old: cond, New: ""}},
			[]string{"[secret-store]", hub, "serves every namespace"}},
		{"spoke store open to a team's namespace", []plant.Edit{{File: spoke, Old: "        - sealed-secrets\n", New: "        - sealed-secrets\n        - payments\n"}},
			[]string{"[secret-store]", "on flux-system/apps-staging-kubeconfig", "serves namespace payments"}},
		{"spoke store open to every namespace by regex", []plant.Edit{{File: spoke, Old: "    - namespaces:\n        - sealed-secrets\n", New: "    - namespaceRegexes: ['.*']\n"}},
			[]string{"serves namespace tenant-probe"}},
		{"hub store that refuses the sealing keys' namespace", []plant.Edit{{File: hub, Old: "        - sealed-secrets\n", New: "        - sealing\n"}},
			[]string{"does not serve namespace sealed-secrets"}},
	}
	validatePlanted(t, tests)
}
