package fleetvalidate

import (
	"context"
	"slices"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
)

func TestChangeScope(t *testing.T) {
	claim := func(rel, name string) fleettree.ClaimFile {
		return fleettree.ClaimFile{Rel: rel, Claim: &workloadcluster.Claim{Metadata: workloadcluster.Metadata{Name: name}}}
	}
	claims := []fleettree.ClaimFile{
		claim("gitops-system/workload-clusters/pay.yaml", "pay"),
		claim("gitops-system/workload-clusters/pay-eu.yaml", "pay-eu"),
		claim("gitops-system/workload-clusters/batch.yaml", "batch"),
	}
	cases := []struct {
		name    string
		changed []string
		want    []string
		ok      bool
	}{
		{"new claim with scaffolding", []string{
			"gitops-system/workload-clusters/pay-eu.yaml",
			"gitops-system/workload-clusters/kustomization.yaml",
			"gitops-workloads/clusters/pay-eu/kustomization.yaml",
			"gitops-workloads/clusters/pay-eu/flux-system/deploy-key.yaml",
		}, []string{"pay-eu"}, true},
		{"two claims edited", []string{"gitops-system/workload-clusters/pay.yaml", "gitops-system/workload-clusters/batch.yaml"}, []string{"batch", "pay"}, true},
		{"app added to a spoke", []string{"gitops-workloads/clusters/batch/kustomization.yaml"}, []string{"batch"}, true},
		{"claim removed", []string{"gitops-system/workload-clusters/gone.yaml", "gitops-system/workload-clusters/kustomization.yaml"}, []string{}, true},
		{"policy changed", []string{"gitops-system/workload-clusters/fleet-policy.yaml"}, []string{}, true},
		{"outside the tree", []string{"../README.md", "gitops-system/workload-clusters/pay.yaml"}, []string{"pay"}, true},
		{"spoke bootstrap changed: every spoke", []string{"gitops-system/workload-clusters/pay.yaml", "gitops-system/spoke-bootstrap/flux/kustomization.yaml"}, nil, false},
		{"composition changed: every spoke", []string{"gitops-system/platform-apis/workload-cluster/composition.yaml"}, nil, false},
		{"an app changed: its spokes", []string{"apps/payment-app/base/deployment.yaml"}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ChangeScope(c.changed, claims)
			if ok != c.ok || (ok && !slices.Equal(got, c.want)) {
				t.Fatalf("ChangeScope = %v, %t; want %v, %t", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestWithClaims(t *testing.T) {
	ctx := context.Background()
	if _, ok := ClaimsScope(ctx); ok {
		t.Fatal("a context without a scope is scoped")
	}
	names, ok := ClaimsScope(WithClaims(ctx, nil))
	if !ok || names == nil || len(names) != 0 {
		t.Fatalf("WithClaims(nil) = %v, %t; want an empty scope (no claim renders)", names, ok)
	}
	in := []string{"a"}
	names, _ = ClaimsScope(WithClaims(ctx, in))
	in[0] = "b"
	if !slices.Equal(names, []string{"a"}) {
		t.Fatalf("scope %v shares the caller's slice", names)
	}
}
