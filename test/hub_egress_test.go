package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// The hub's Flux reaches a spoke's EKS API through the spoke's public
// endpoint, from the hub's NAT gateways (HUB_EGRESS_CIDRS). The composition
// function must allow them whatever the claim lists, and keep the claim's
// own list; the Composition hands them to it as its input hubEgressCidrs.

const (
	egressClaim       = "gitops-system/workload-clusters/apps-staging.yaml"
	egressComposition = "gitops-system/platform-apis/workload-cluster/composition.yaml"
	egressDefinition  = "gitops-system/platform-apis/workload-cluster/definition.yaml"
	// eksMaxPublicCIDRs is EKS's limit on an endpoint's public access CIDRs.
	eksMaxPublicCIDRs = 40
)

// TestSpokeAdmitsHubEgress renders the example claim on the repository's
// tree and on copies with the hub egress planted out; the check must pass
// on the first and report the missing hub CIDRs on the others.
func TestSpokeAdmitsHubEgress(t *testing.T) {
	info := clusterinfo.Example()
	hubCIDRs, err := clusterinfo.ParseCIDRs(info.HubEgressCIDRs)
	if err != nil || len(hubCIDRs) == 0 {
		t.Fatalf("example %s %q: %v", clusterinfo.HubEgressCIDRs, info.HubEgressCIDRs, err)
	}
	other := info
	other.HubEgressCIDRs = clusterinfo.FormatCIDRs([]string{"192.0.2.77/32"})
	cases := []struct {
		name  string
		edits []plant.Edit
		// rendered is the hub the spoke is rendered for (default info).
		rendered *clusterinfo.Values[string]
		// want is a problem the check must report; "" means none at all.
		want string
	}{
		{"repository tree", nil, nil, ""},
		{"hub egress not in the function input", []plant.Edit{{File: egressComposition, Old: "        hubEgressCidrs: ${HUB_EGRESS_CIDRS}\n", New: "        hubEgressCidrs: []\n"}}, nil, "hubEgressCidrs"},
		{"spoke rendered for another hub's egress", nil, &other, hubCIDRs[0]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tree := "../manifests"
			if len(c.edits) > 0 {
				tree = plant.Repo(t, c.edits...)
			}
			rendered := info
			if c.rendered != nil {
				rendered = *c.rendered
			}
			problems := checkHubEgress(t, tree, rendered, info)
			if c.want == "" {
				for _, p := range problems {
					t.Error(p)
				}
				return
			}
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("check did not report %q; problems: %q", c.want, problems)
			}
		})
	}
}

// checkHubEgress renders egressClaim on tree for the hub rendered and
// returns what the composed EKS Cluster's publicAccessCidrs lacks: any of
// hub's egress CIDRs or any of the claim's own CIDRs. A render the function
// refuses is a problem too.
func checkHubEgress(t *testing.T, tree string, rendered, hub clusterinfo.Values[string]) []string {
	t.Helper()
	hubCIDRs, err := clusterinfo.ParseCIDRs(hub.HubEgressCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(egressClaim)))
	if err != nil {
		t.Fatal(err)
	}
	var claim struct {
		Spec struct {
			PublicAccessCIDRs []string `yaml:"publicAccessCidrs"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &claim); err != nil {
		t.Fatalf("%s: %v", egressClaim, err)
	}
	if len(claim.Spec.PublicAccessCIDRs) == 0 {
		t.Fatalf("%s lists no publicAccessCidrs: the check would not see the claim's list kept", egressClaim)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	objs, err := xrender.RenderClaim(ctx, tree, filepath.Join(tree, filepath.FromSlash(egressClaim)), rendered)
	if err != nil {
		return []string{fmt.Sprintf("render %s: %v", egressClaim, err)}
	}
	var clusters []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Cluster" && o.GetAPIVersion() == "eks.aws.upbound.io/v1beta2" {
			clusters = append(clusters, o)
		}
	}
	if len(clusters) != 1 {
		t.Fatalf("%s composes %d EKS Clusters, want 1", egressClaim, len(clusters))
	}
	got, _, _ := unstructured.NestedStringSlice(clusters[0].Object, "spec", "forProvider", "vpcConfig", "publicAccessCidrs")
	var problems []string
	for _, c := range hubCIDRs {
		if !slices.Contains(got, c) {
			problems = append(problems, fmt.Sprintf("EKS Cluster %s: publicAccessCidrs %v lacks hub egress %s: the hub's Flux cannot reach the spoke", clusters[0].GetName(), got, c))
		}
	}
	for _, c := range claim.Spec.PublicAccessCIDRs {
		if !slices.Contains(got, c) {
			problems = append(problems, fmt.Sprintf("EKS Cluster %s: publicAccessCidrs %v lacks the claim's %s", clusters[0].GetName(), got, c))
		}
	}
	if n := len(got); n > eksMaxPublicCIDRs {
		problems = append(problems, fmt.Sprintf("EKS Cluster %s: %d publicAccessCidrs, EKS allows %d", clusters[0].GetName(), n, eksMaxPublicCIDRs))
	}
	return problems
}

// TestPublicAccessCIDRsLimit: the claim's list plus one hub CIDR per hub
// NAT gateway fits EKS's limit, and fleet validate's limit is the XRD's.
func TestPublicAccessCIDRsLimit(t *testing.T) {
	var xrd map[string]any
	b, err := os.ReadFile(filepath.Join("../manifests", filepath.FromSlash(egressDefinition)))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &xrd); err != nil {
		t.Fatal(err)
	}
	versions, _ := factField(xrd, "spec", "versions").([]any)
	if len(versions) == 0 {
		t.Fatalf("%s has no versions", egressDefinition)
	}
	for _, v := range versions {
		field := factField(v, "schema", "openAPIV3Schema", "properties", "spec", "properties", "publicAccessCidrs")
		max, ok := factField(field, "maxItems").(int)
		if !ok {
			t.Fatalf("%s: publicAccessCidrs has no integer maxItems: %v", egressDefinition, field)
		}
		if hubNATs := stacks.MaxAvailabilityZones; max+hubNATs > eksMaxPublicCIDRs {
			t.Errorf("publicAccessCidrs maxItems %d + up to %d hub NAT CIDRs exceeds EKS's %d", max, hubNATs, eksMaxPublicCIDRs)
		}
		if max != policy.APIMaxPublic {
			t.Errorf("publicAccessCidrs maxItems %d, policy.APIMaxPublic %d: fleet validate and the API disagree", max, policy.APIMaxPublic)
		}
		if d := factStr(field, "description"); !strings.Contains(d, "hub") {
			t.Errorf("publicAccessCidrs description does not say the hub is added: %q", d)
		}
	}
}
