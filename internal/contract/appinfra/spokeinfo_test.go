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
		{"ConfigMap", spokeinfo.Name, spokeinfo.Name},
		{"account", spokeinfo.AccountID, spokeinfo.AccountID},
		{"partition", spokeinfo.Partition, spokeinfo.Partition},
		{"region", spokeinfo.Region, spokeinfo.Region},
		{"EKS cluster", spokeinfo.EKSClusterName, spokeinfo.EKSClusterName},
		{"OIDC issuer", spokeinfo.OIDCIssuer, spokeinfo.OIDCIssuer},
		{"OIDC provider", spokeinfo.OIDCProviderARN, spokeinfo.OIDCProviderARN},
		{"app role prefix", spokeinfo.AppRolePrefix, spokeinfo.AppRolePrefix},
		{"boundary", spokeinfo.BoundaryARN, spokeinfo.BoundaryARN},
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
