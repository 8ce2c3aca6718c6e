package test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/proof/apivalidate"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/fleetdocs"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// fenceTagKeys derives, from the documents the fleet writes (the spokes'
// boundary, every spoke role's own policy, the hub Crossplane's policy),
// every tag key an IAM condition reads on a resource or a request.
func fenceTagKeys(t *testing.T) []string {
	t.Helper()
	docs, err := fleetdocs.Documents()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range docs {
		for _, st := range d.Statement {
			for _, cond := range st.Condition {
				for key := range cond {
					for _, prefix := range []string{"aws:resourcetag/", "aws:requesttag/"} {
						if strings.HasPrefix(strings.ToLower(key), prefix) {
							seen[key[len(prefix):]] = true
						}
					}
				}
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestClaimTagsCannotCarryFenceKeys holds every tag key the fleet's IAM
// documents grant by to the refusals of user tags: a claim carrying one,
// as written or in another case (IAM matches the key of aws:ResourceTag/
// without regard to case), is refused by fleet validate and fleet cluster
// add (policy.CheckClaim), by the XRD on the API server (its CEL rule, run
// by the real apiextensions validator), and by the composition function;
// the hub stack's tags likewise. The keys are read from the documents, so
// a key added to the boundary without its reservation fails here.
func TestClaimTagsCannotCarryFenceKeys(t *testing.T) {
	keys := fenceTagKeys(t)
	// The documents are the source: each trusted key must show up in them,
	// and every key in them must be one the fence package names.
	for _, k := range fence.TrustedTags() {
		if !slices.Contains(keys, k) {
			t.Errorf("fence.TrustedTags() has %s, which no IAM document of the fleet reads", k)
		}
	}
	for _, k := range keys {
		if !slices.Contains(fence.TrustedTags(), k) && !slices.Contains(fence.ProtectedTags(), k) {
			t.Errorf("the IAM documents grant by tag %s, which fence.TrustedTags() and fence.ProtectedTags() do not name", k)
		}
	}

	ctx := context.Background()
	v := apivalidate.NewWithCRDs(nil)
	xrdFile := filepath.Join("..", "manifests", "gitops-system", "platform-apis", "workload-cluster", "definition.yaml")
	b, err := os.ReadFile(xrdFile)
	if err != nil {
		t.Fatal(err)
	}
	xrd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &xrd.Object); err != nil {
		t.Fatal(err)
	}
	if err := v.AddDefinitions([]*unstructured.Unstructured{xrd}, xrdFile); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(mustRead(t, filepath.Join("..", "manifests", filepath.FromSlash(policy.RelPath))), policy.RelPath)
	if err != nil {
		t.Fatal(err)
	}
	hub, errs := stacks.ParseFile(filepath.Join("..", "Pulumi.mgmt.yaml"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	in, err := compose.InputFrom(clusterinfo.Example())
	if err != nil {
		t.Fatal(err)
	}
	claim := func(tags map[string]string) *workloadcluster.Claim {
		return &workloadcluster.Claim{
			APIVersion: workloadcluster.APIVersion, Kind: workloadcluster.ClaimKind,
			Metadata: workloadcluster.Metadata{Name: "victim", Namespace: workloadcluster.ClaimNamespace},
			Spec: workloadcluster.Spec{Region: "eu-west-1", KubernetesVersion: "1.35", VPCCIDR: "10.1.0.0/16", AvailabilityZones: 3,
				NATMode: "single", Nodes: workloadcluster.Nodes{InstanceTypes: []string{"m7i.large"}, Min: 1, Desired: 2, Max: 3},
				Tags: tags},
		}
	}
	refusals := []struct {
		by      string
		refuses func(tags map[string]string) string // the refusal's text; "" when accepted
		// names says what the refusal names besides the field: the key,
		// or (the XRD, whose message cannot name it) the prefix
		names func(key string) string
	}{
		{"fleet validate and fleet cluster add (policy.CheckClaim)", func(tags map[string]string) string {
			var out []string
			for _, vi := range pol.CheckClaim(claim(tags)) {
				out = append(out, vi.Error())
			}
			return strings.Join(out, "\n")
		}, theKey},
		{"the XRD's CEL rule on the API server", func(tags map[string]string) string {
			u := &unstructured.Unstructured{}
			raw, err := yaml.Marshal(claim(tags))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(raw, &u.Object); err != nil {
				t.Fatal(err)
			}
			if errs := v.Validate(ctx, u); len(errs) > 0 {
				return errs.ToAggregate().Error()
			}
			return ""
		}, prefixOf},
		{"the composition function", func(tags map[string]string) string {
			c := claim(tags)
			if _, err := compose.Compose(compose.Params{Input: in, Spoke: c.Metadata.Name, Spec: c.Spec}); err != nil {
				return err.Error()
			}
			return ""
		}, theKey},
		{"the hub stack's validation", func(tags map[string]string) string {
			cfg := hub
			cfg.Tags = tags
			var out []string
			for _, err := range stacks.Validate(cfg) {
				out = append(out, err.Error())
			}
			return strings.Join(out, "\n")
		}, theKey},
	}
	for _, r := range refusals {
		t.Run(r.by, func(t *testing.T) {
			if got := r.refuses(map[string]string{"team": "payments", "cost-center": "42"}); got != "" {
				t.Fatalf("a team's own tags are refused: %s", got)
			}
			for _, k := range keys {
				for _, variant := range []string{k, strings.ToUpper(k)} {
					got := r.refuses(map[string]string{"team": "payments", variant: "mgmt-a"})
					if want := r.names(variant); !strings.Contains(got, "tags") || !strings.Contains(got, want) {
						t.Errorf("tag %s=mgmt-a is not refused naming the field and %q; got %q", variant, want, got)
					}
				}
			}
		})
	}
}

// theKey: the refusal names the key itself.
func theKey(k string) string { return k }

// prefixOf is the reserved prefix k is under, as the refusals list it.
func prefixOf(k string) string {
	for _, p := range fence.ReservedTagPrefixList() {
		if strings.HasPrefix(strings.ToLower(k), p) {
			return p
		}
	}
	return "no reserved prefix covers " + k
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
