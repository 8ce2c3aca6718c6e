package test

import (
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// TestSecretStoresServeOnlyTheirNamespaces runs `fleet validate` on the
// repository's tree and on copies whose ClusterSecretStores would serve a
// tenant: each must fail with the secret-store finding.
// The store's role reads the fleet's sealing key, so a store that serves a
// team's namespace hands the key to anyone who may create an
// ExternalSecret there. Spokes have no store: the hub hands them the keys.
func TestSecretStoresServeOnlyTheirNamespaces(t *testing.T) {
	const (
		hub  = "gitops-system/infrastructure/secret-store/cluster-secret-store.yaml"
		cond = "  conditions:\n    - namespaces:\n        - flux-system\n        - sealed-secrets\n"
	)
	tests := []plantedTree{
		{"committed tree", nil, nil},
		{"hub store without conditions", []plant.Edit{{File: hub, Old: cond, New: ""}},
			[]string{"[secret-store]", hub, "serves every namespace"}},
		{"hub store open to a team's namespace", []plant.Edit{{File: hub, Old: "        - sealed-secrets\n", New: "        - sealed-secrets\n        - payments\n"}},
			[]string{"[secret-store]", hub, "serves namespace payments"}},
		{"hub store open to every namespace by regex", []plant.Edit{{File: hub, Old: "    - namespaces:\n        - flux-system\n        - sealed-secrets\n", New: "    - namespaceRegexes: ['.*']\n"}},
			[]string{"serves namespace tenant-probe"}},
		{"hub store that refuses the sealing keys' namespace", []plant.Edit{{File: hub, Old: "        - sealed-secrets\n", New: "        - sealing\n"}},
			[]string{"does not serve namespace sealed-secrets"}},
		{"hub store that refuses the keys the spokes get", []plant.Edit{{File: hub, Old: "        - flux-system\n", New: ""}},
			[]string{"does not serve namespace flux-system"}},
	}
	validatePlanted(t, tests)
}
