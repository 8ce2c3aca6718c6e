package appinfra

import (
	"slices"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
)

// TestVariablesAreSpokeInfoKeys: every variable the app path substitutes
// is a key of the spoke-info ConfigMap, the one the apps' Kustomizations
// substitute from, so strict substitution never meets an unset variable.
func TestVariablesAreSpokeInfoKeys(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"ConfigMap", SpokeInfoConfigMap, spokeinfo.Name},
		{"account", VarAccountID, spokeinfo.AccountID},
		{"partition", VarPartition, spokeinfo.Partition},
		{"region", VarRegion, spokeinfo.Region},
		{"EKS cluster", VarEKSClusterName, spokeinfo.EKSClusterName},
		{"OIDC issuer", VarOIDCIssuer, spokeinfo.OIDCIssuer},
		{"OIDC provider", VarOIDCProviderARN, spokeinfo.OIDCProviderARN},
		{"app role prefix", VarAppRolePrefix, spokeinfo.AppRolePrefix},
		{"boundary", VarBoundaryARN, spokeinfo.BoundaryARN},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("%q, spokeinfo says %q", tt.got, tt.want)
			}
		})
	}
	for _, v := range Variables() {
		if !slices.Contains(spokeinfo.Names(), v) {
			t.Errorf("Variables() has %s, which spoke-info does not carry (keys: %v)", v, spokeinfo.Names())
		}
	}
}
