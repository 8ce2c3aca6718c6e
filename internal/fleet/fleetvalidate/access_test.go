package fleetvalidate

import (
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
)

func TestAccessReasons(t *testing.T) {
	const rel = fleettree.ClaimsDir + "/pay.yaml"
	claim := func(admins, cidrs []string) []fleettree.ClaimFile {
		c := &workloadcluster.Claim{APIVersion: workloadcluster.APIVersion, Kind: workloadcluster.ClaimKind,
			Metadata: workloadcluster.Metadata{Name: "pay", Namespace: workloadcluster.ClaimNamespace}}
		c.Spec.AdminPrincipalARNs, c.Spec.PublicAccessCIDRs = admins, cidrs
		return []fleettree.ClaimFile{{Rel: rel, Claim: c}}
	}
	baseFile := func(y string) func(string) ([]byte, error) {
		return func(string) ([]byte, error) {
			if y == "" {
				return nil, nil
			}
			return []byte(y), nil
		}
	}
	const old = "apiVersion: " + workloadcluster.APIVersion + "\nkind: WorkloadCluster\nmetadata: {name: pay, namespace: workload-clusters}\n" +
		"spec: {adminPrincipalArns: ['arn:aws:iam::111122223333:role/a'], publicAccessCidrs: ['203.0.113.0/24']}\n"
	a := []string{"arn:aws:iam::111122223333:role/a"}
	cidr := []string{"203.0.113.0/24"}
	tests := []struct {
		name   string
		claims []fleettree.ClaimFile
		base   func(string) ([]byte, error)
		review int
	}{
		{"new claim without access fields", claim(nil, nil), baseFile(""), 0},
		{"new claim with admins", claim(a, nil), baseFile(""), 1},
		{"new claim with public CIDRs", claim(nil, cidr), baseFile(""), 1},
		{"unchanged access (other fields edited)", claim(a, cidr), baseFile(old), 0},
		{"admin added", claim(append(a, "arn:aws:iam::111122223333:role/b"), cidr), baseFile(old), 1},
		{"CIDR changed", claim(a, []string{"198.51.100.0/24"}), baseFile(old), 1},
		{"both removed", claim(nil, nil), baseFile(old), 2},
		{"base unknown, access set", claim(a, cidr), nil, 2},
		{"base unknown, no access", claim(nil, nil), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := accessReasons(tt.claims, []string{rel}, tt.base)
			if len(got) != tt.review {
				t.Errorf("reasons %q: want %d", got, tt.review)
			}
			if n := len(accessReasons(tt.claims, []string{"gitops-workloads/clusters/pay/x.yaml"}, tt.base)); n != 0 {
				t.Errorf("claim file not changed, got %d reasons", n)
			}
		})
	}
}
