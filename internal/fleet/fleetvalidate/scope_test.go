package fleetvalidate

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
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

// recordingProver records the requests it is asked to prove.
type recordingProver struct{ got []ProofRequest }

func (p *recordingProver) Prove(_ context.Context, req ProofRequest) (*ProofReport, error) {
	p.got = append(p.got, req)
	return &ProofReport{}, nil
}

// TestRunScopesTheProof: Run asks for a proof scoped to the clusters a
// change touches, and for the whole tree when it cannot tell.
func TestRunScopesTheProof(t *testing.T) {
	root := repoTree(t)
	cases := map[string]struct {
		reason  string
		changed []string
		full    bool
		want    ProofRequest
	}{
		"ClaimChanged": {
			reason:  "a changed claim file scopes rendering to its cluster",
			changed: []string{fleettree.ClaimRel("apps-staging")},
			want:    ProofRequest{Tree: root, Scoped: true, Claims: []string{"apps-staging"}},
		},
		"PolicyChanged": {
			reason:  "the fleet policy is read over every claim: no claim renders",
			changed: []string{policy.RelPath},
			want:    ProofRequest{Tree: root, Scoped: true, Claims: []string{}},
		},
		"UnknownChange": {
			reason:  "a change under gitops-system can reach every spoke: the full proof",
			changed: []string{"gitops-system/spoke-tools/kustomization.yaml"},
			want:    ProofRequest{Tree: root},
		},
		"Full": {
			reason:  "--full proves every claim whatever changed",
			changed: []string{fleettree.ClaimRel("apps-staging")},
			full:    true,
			want:    ProofRequest{Tree: root},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &recordingProver{}
			if _, err := Run(context.Background(), Options{Tree: root, Prover: p, Changed: tc.changed, Full: tc.full}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]ProofRequest{tc.want}, p.got, cmpopts.IgnoreFields(ProofRequest{}, "Info")); diff != "" {
				t.Errorf("%s\nProve requests: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
