package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// compatFields are the forProvider fields that reach AWS (names, CIDRs,
// zones, tags); references are compared separately, by target name.
var compatFields = []string{"region", "cidrBlock", "availabilityZone", "tags", "mapPublicIpOnLaunch",
	"domain", "connectivityType", "destinationCidrBlock", "enableDnsSupport", "enableDnsHostnames"}

// TestFunctionNetworkMatchesComposition renders the committed claim and
// variants of it (2/3 AZs, single/per-az NAT, /16../18) with the P&T
// Composition and compares the network objects with the function's: same
// composition-resource-names, kinds, metadata names and AWS fields. The only
// allowed differences are the fixed defects: the paused slots
// (managementPolicies: []) are not composed, and a per-az private route
// points at its own AZ's NAT.
func TestFunctionNetworkMatchesComposition(t *testing.T) {
	info := clusterinfo.Example()
	base := "gitops-system/workload-clusters/apps-staging.yaml"
	raw, err := os.ReadFile(filepath.Join("../manifests", base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, vpc, nat string
		azs            int
	}{
		{"committed", "", "", 0},
		{"v2az-single", "10.40.128.0/17", "single", 2},
		{"v3az-peraz", "10.50.64.0/18", "per-az", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var claim workloadcluster.Claim
			if err := yaml.Unmarshal(raw, &claim); err != nil {
				t.Fatal(err)
			}
			if tc.vpc != "" {
				// A new name: a claim the tree applies is taken as the tree holds it.
				claim.Metadata.Name = tc.name
				claim.Spec.VPCCIDR, claim.Spec.NATMode, claim.Spec.AvailabilityZones = tc.vpc, tc.nat, tc.azs
			}
			path := filepath.Join(t.TempDir(), "claim.yaml")
			b, err := yaml.Marshal(claim)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			objs, err := xrender.RenderClaim(ctx, legacyTree(t), path, info)
			if err != nil {
				t.Fatal(err)
			}
			checkPoliciesHeld(t, objs)
			old := map[string]*unstructured.Unstructured{}
			paused := 0
			for _, o := range objs {
				if !strings.HasPrefix(o.GetAPIVersion(), "ec2.aws.upbound.io/") {
					continue
				}
				if mp, ok, _ := unstructured.NestedSlice(o.Object, "spec", "managementPolicies"); ok && len(mp) == 0 {
					paused++
					continue
				}
				old[o.GetAnnotations()["crossplane.io/composition-resource-name"]] = o
			}
			// A spoke the Composition made has its subnets by zone name:
			// observed, the function keeps them there (placement is
			// immutable) rather than moving them to zone IDs.
			observed := map[string]compose.Object{}
			for key, o := range old {
				if strings.HasPrefix(key, "subnet-") {
					observed[key] = o.Object
				}
			}
			got, err := compose.Network(compose.Params{Input: compose.Input{HubName: info.HubName, SpokeZoneIDs: clusterinfo.ExampleZoneIDs()},
				Spoke: claim.Metadata.Name, Spec: claim.Spec, Observed: observed})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(old) {
				t.Errorf("function composes %d network objects, Composition %d active (+%d paused)", len(got), len(old), paused)
			}
			keys := make([]string, 0, len(old))
			for k := range old {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, key := range keys {
				o := old[key]
				n, ok := got[key]
				if !ok {
					t.Errorf("%s: composed by the Composition, not by the function", key)
					continue
				}
				nu := &unstructured.Unstructured{Object: roundTrip(t, n)}
				if nu.GetKind() != o.GetKind() || nu.GetAPIVersion() != o.GetAPIVersion() || nu.GetName() != o.GetName() {
					t.Errorf("%s: function %s %s %s, Composition %s %s %s", key, nu.GetAPIVersion(), nu.GetKind(), nu.GetName(), o.GetAPIVersion(), o.GetKind(), o.GetName())
				}
				for _, f := range compatFields {
					ov, _, _ := unstructured.NestedFieldCopy(o.Object, "spec", "forProvider", f)
					nv, _, _ := unstructured.NestedFieldCopy(nu.Object, "spec", "forProvider", f)
					if !reflect.DeepEqual(ov, nv) {
						t.Errorf("%s forProvider.%s: function %v, Composition %v", key, f, nv, ov)
					}
				}
				if strings.HasPrefix(key, "route-private-") {
					via, _, _ := unstructured.NestedString(nu.Object, "spec", "forProvider", "natGatewayIdRef", "name")
					az := strings.TrimSuffix(strings.TrimPrefix(key, "route-private-"), "-default")
					want := claim.Metadata.Name + "-nat-a"
					if claim.Spec.NATMode == workloadcluster.NATPerAZ {
						want = claim.Metadata.Name + "-nat-" + az
					}
					if via != want {
						t.Errorf("%s routes via %s, want %s", key, via, want)
					}
				}
			}
			t.Logf("%s: %d network objects equal; %d paused slots dropped", tc.name, len(old), paused)
		})
	}
}

func roundTrip(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(fmt.Errorf("round-trip: %w", err))
	}
	return out
}

// checkPoliciesHeld: every composed IAM RolePolicy of a workload role is the "of" of a
// ClusterUsage, so teardown keeps it until its user is gone.
func checkPoliciesHeld(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	held := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "ClusterUsage" {
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "of", "kind")
			name, _, _ := unstructured.NestedString(o.Object, "spec", "of", "resourceRef", "name")
			held[kind+"/"+name] = true
		}
	}
	n := 0
	for _, o := range objs {
		// The admin role's policy serves people, not a composed workload:
		// nothing composed uses it, so nothing holds it.
		if o.GetKind() == "RolePolicy" && o.GetAnnotations()["crossplane.io/composition-resource-name"] != "role-admin-policy" {
			n++
			if !held["RolePolicy/"+o.GetName()] {
				t.Errorf("RolePolicy %s (%s) is held by no ClusterUsage", o.GetName(), o.GetAnnotations()["crossplane.io/composition-resource-name"])
			}
		}
	}
	if n == 0 {
		t.Error("no RolePolicy rendered: the check would see nothing")
	}
}

// legacyComposition is the patch-and-transform Composition the function
// replaced, frozen at the switch.
const legacyComposition = "testdata/legacy/workload-cluster-composition.yaml"

// legacyTree is a copy of the repository's tree with the WorkloadCluster
// Composition replaced by legacyComposition (patch-and-transform then
// runs as a subprocess, as it did).
func legacyTree(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(legacyComposition)
	if err != nil {
		t.Fatal(err)
	}
	tree := plant.Repo(t)
	if err := os.WriteFile(filepath.Join(tree, "gitops-system", "platform-apis", "workload-cluster", "composition.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return tree
}
