package test

import (
	"testing"
)

// TestSecretStoresServeOnlyTheirNamespaces runs `fleet validate` on the
// repository's tree and on copies whose ClusterSecretStores would serve a
// tenant: each must fail with the secret-store finding (issue 10 item 6).
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
		{"hub store without conditions", []factEdit{{hub, cond, ""}},
			[]string{"[secret-store]", hub, "serves every namespace"}},
		{"spoke store open to a team's namespace", []factEdit{{spoke, "        - sealed-secrets\n", "        - sealed-secrets\n        - payments\n"}},
			[]string{"[secret-store]", "on flux-system/apps-staging-kubeconfig", "serves namespace payments"}},
		{"spoke store open to every namespace by regex", []factEdit{{spoke, "    - namespaces:\n        - sealed-secrets\n", "    - namespaceRegexes: ['.*']\n"}},
			[]string{"serves namespace tenant-probe"}},
		{"hub store that refuses the sealing keys' namespace", []factEdit{{hub, "        - sealed-secrets\n", "        - sealing\n"}},
			[]string{"does not serve namespace sealed-secrets"}},
	}
	validatePlanted(t, tests)
}
