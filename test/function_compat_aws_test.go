package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

// awsKeyFields are the forProvider fields of the IAM and EKS objects that
// reach AWS and are not documents or references: they must be equal.
var awsKeyFields = []string{"region", "version", "description", "permissionsBoundary", "policyArn", "principalArn",
	"type", "accessScope", "accessConfig", "enabledClusterLogTypes", "amiType", "capacityType", "instanceTypes",
	"scalingConfig", "updateConfig", "url", "clientIdList"}

// TestFunctionAWSMatchesComposition renders the committed claim and
// variants with the P&T Composition and checks that every IAM and EKS
// object, and every usage holding an AWS object, that it composes is
// composed by the function under the same composition-resource-name with the
// same apiVersion, kind, metadata.name, external name and key fields. The
// listed differences are checked too: roles carry spokeiam's fence tags on
// top of the old tags, IAM documents are spokeiam's, the function adds the
// log group (and its hold) and holds for the admin role and entries.
func TestFunctionAWSMatchesComposition(t *testing.T) {
	info := clusterinfo.Example()
	raw, err := os.ReadFile("../manifests/gitops-system/workload-clusters/apps-staging.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := compose.InputFrom(info)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mut  func(*workloadcluster.Spec)
	}{
		{"committed", nil},
		{"v2az-single", func(s *workloadcluster.Spec) {
			s.VPCCIDR, s.NATMode, s.AvailabilityZones = "10.40.128.0/17", "single", 2
		}},
		{"v3az-peraz-noadmins", func(s *workloadcluster.Spec) {
			s.VPCCIDR, s.NATMode, s.AvailabilityZones, s.AdminPrincipalARNs = "10.50.64.0/18", "per-az", 3, nil
		}},
		{"v136-hubonly-notags", func(s *workloadcluster.Spec) {
			s.VPCCIDR, s.NATMode, s.AvailabilityZones = "10.60.0.0/16", "per-az", 2
			s.KubernetesVersion, s.PublicAccessCIDRs, s.Tags = "1.36", nil, nil
			s.Nodes = workloadcluster.Nodes{InstanceTypes: []string{"m7i.large", "m6i.large"}, Min: 1, Desired: 1, Max: 10}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var claim workloadcluster.Claim
			if err := yaml.Unmarshal(raw, &claim); err != nil {
				t.Fatal(err)
			}
			if tc.mut != nil {
				// A new name: a claim the tree applies is taken as the tree holds it.
				claim.Metadata.Name = tc.name
				tc.mut(&claim.Spec)
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
			old := map[string]*unstructured.Unstructured{}
			issuer := ""
			paused := map[string]bool{}
			for _, o := range objs {
				if mp, ok, _ := unstructured.NestedSlice(o.Object, "spec", "managementPolicies"); ok && len(mp) == 0 {
					paused[o.GetKind()+"/"+o.GetName()] = true
				}
			}
			dropped := 0
			for _, o := range objs {
				if !isAWSOrAWSUsage(o) {
					continue
				}
				if paused[o.GetKind()+"/"+o.GetName()] {
					continue // paused slots: not composed by the function (k9a)
				}
				ofKind, _, _ := unstructured.NestedString(o.Object, "spec", "of", "kind")
				ofName, _, _ := unstructured.NestedString(o.Object, "spec", "of", "resourceRef", "name")
				if paused[ofKind+"/"+ofName] {
					dropped++ // a hold on a paused slot goes with it
					continue
				}
				upgradeLegacy(o)
				old[o.GetAnnotations()["crossplane.io/composition-resource-name"]] = o
				if o.GetKind() == "OpenIDConnectProvider" {
					u, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "url")
					issuer = strings.TrimPrefix(u, "https://")
				}
			}
			got := convergeWithIssuer(t, compose.Params{Input: in, Spoke: claim.Metadata.Name, Spec: claim.Spec}, issuer)
			diffs := compareAWS(t, old, got.Objects)
			t.Logf("%s: %d old AWS objects/holds compared (%d holds on paused slots dropped), function composes %d; differences: %s", tc.name, len(old), dropped, len(got.Objects), strings.Join(diffs, "; "))
		})
	}
}

func isAWSOrAWSUsage(o *unstructured.Unstructured) bool {
	if strings.Contains(o.GetAPIVersion(), ".aws.upbound.io/") {
		return true
	}
	if o.GetKind() == "ClusterUsage" || o.GetKind() == "Usage" {
		av, _, _ := unstructured.NestedString(o.Object, "spec", "of", "apiVersion")
		return strings.Contains(av, ".aws.upbound.io/")
	}
	return false
}

// convergeWithIssuer composes as Crossplane's reconciles would, every
// composed object observed Ready and the cluster reporting issuer.
func convergeWithIssuer(t *testing.T, p compose.Params, issuer string) compose.Composed {
	t.Helper()
	var prev int
	for i := 0; i < 6; i++ {
		c, err := compose.Compose(p)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && len(c.Objects) == prev {
			return c
		}
		prev = len(c.Objects)
		p.Observed = map[string]compose.Object{}
		for k, o := range c.Objects {
			st := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
			if k == "cluster" {
				st["atProvider"] = map[string]any{"identity": []any{map[string]any{"oidc": []any{map[string]any{"issuer": "https://" + issuer}}}}}
			}
			if k == "launch-template" {
				st["atProvider"] = map[string]any{"latestVersion": float64(1)}
			}
			p.Observed[k] = compose.Object{"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": o["metadata"], "status": st}
		}
	}
	t.Fatal("function did not converge")
	return compose.Composed{}
}

// compareAWS fails on any old object the function does not compose alike,
// and returns the allowed differences it saw.
// retiredAWS are what the Composition composed for the spoke's own External
// Secrets, which the function no longer does (issue 24: the hub hands the
// sealing keys to each spoke with its own Flux).
var retiredAWS = []string{"role-eso", "role-eso-policy", "usage-role-eso", "usage-role-eso-policy-by-nodes"}

// droppedHolds are the Composition's holds that function v0.4.0 no longer
// composes (issue 45): AWS refuses those deletes itself while in use (the
// VPC and subnets, the cluster by its node group), or the order is not
// needed (the cluster by an access entry, which goes with it).
// compose.Holds says why; TestHoldsKeepEveryTeardownOrder checks that
// every order the teardown needs is still kept.
var droppedHolds = []string{"usage-cluster-by-flux-entry", "usage-cluster-by-nodes", "usage-vpc-by-cluster",
	"usage-private-a-by-cluster", "usage-private-b-by-cluster", "usage-private-c-by-cluster",
	"usage-public-a-by-cluster", "usage-public-b-by-cluster", "usage-public-c-by-cluster"}

func compareAWS(t *testing.T, old map[string]*unstructured.Unstructured, got map[string]compose.Object) []string {
	t.Helper()
	keys := make([]string, 0, len(old))
	for k := range old {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[string]bool{}
	var diffs []string
	for _, key := range keys {
		o := old[key]
		g, ok := got[key]
		if !ok {
			// The holds by a bootstrap Kustomization come with the
			// bootstrap part (k9d), not composed here yet.
			if by, _, _ := unstructured.NestedString(o.Object, "spec", "by", "kind"); by == "Kustomization" {
				diffs = append(diffs, key+" waits for the bootstrap part")
				continue
			}
			// The spoke's External Secrets role, its policy and their
			// holds are gone: the hub hands the sealing keys over.
			if slices.Contains(retiredAWS, key) {
				diffs = append(diffs, key+" retired")
				continue
			}
			if slices.Contains(droppedHolds, key) {
				if slices.ContainsFunc(compose.Holds(), func(h compose.Hold) bool { return "usage-"+h.Name == key }) {
					t.Errorf("%s: listed as dropped, but compose.Holds still has it", key)
				}
				diffs = append(diffs, key+" dropped")
				continue
			}
			t.Errorf("%s: composed by the Composition, not by the function", key)
			continue
		}
		seen[key] = true
		n := &unstructured.Unstructured{Object: roundTrip(t, g)}
		if n.GetKind() != o.GetKind() || n.GetAPIVersion() != o.GetAPIVersion() || n.GetName() != o.GetName() || n.GetNamespace() != o.GetNamespace() {
			t.Errorf("%s: function %s %s %s/%s, Composition %s %s %s/%s", key, n.GetAPIVersion(), n.GetKind(), n.GetNamespace(), n.GetName(), o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName())
		}
		if a, b := n.GetAnnotations()["crossplane.io/external-name"], o.GetAnnotations()["crossplane.io/external-name"]; a != b {
			t.Errorf("%s external name: function %q, Composition %q", key, a, b)
		}
		if o.GetKind() == "ClusterUsage" || o.GetKind() == "Usage" {
			for _, end := range []string{"of", "by"} {
				for _, f := range [][]string{{"apiVersion"}, {"kind"}, {"resourceRef", "name"}, {"resourceRef", "namespace"}} {
					ov, _, _ := unstructured.NestedFieldCopy(o.Object, append([]string{"spec", end}, f...)...)
					nv, _, _ := unstructured.NestedFieldCopy(n.Object, append([]string{"spec", end}, f...)...)
					if !reflect.DeepEqual(ov, nv) {
						t.Errorf("%s spec.%s.%s: function %v, Composition %v", key, end, strings.Join(f, "."), nv, ov)
					}
				}
			}
			continue
		}
		for _, f := range awsKeyFields {
			ov, _, _ := unstructured.NestedFieldCopy(o.Object, "spec", "forProvider", f)
			nv, _, _ := unstructured.NestedFieldCopy(n.Object, "spec", "forProvider", f)
			if !reflect.DeepEqual(ov, nv) {
				t.Errorf("%s forProvider.%s: function %v, Composition %v", key, f, nv, ov)
			}
		}
		// Tags: every old tag kept; the only additions are the fence tags,
		// and access entries, untagged before, carry the spoke's tags (the
		// hub's Crossplane changes only entries tagged as the fleet's, NM7).
		ot, _, _ := unstructured.NestedStringMap(o.Object, "spec", "forProvider", "tags")
		nt, _, _ := unstructured.NestedStringMap(n.Object, "spec", "forProvider", "tags")
		if o.GetKind() == "AccessEntry" && len(ot) == 0 {
			if nt[fence.TagCluster] == "" {
				t.Errorf("%s: not tagged %s", key, fence.TagCluster)
			}
			diffs = append(diffs, key+" tagged")
			nt = nil
		}
		for k, v := range ot {
			if nt[k] != v {
				t.Errorf("%s tag %s: function %q, Composition %q", key, k, nt[k], v)
			}
		}
		for k := range nt {
			if _, ok := ot[k]; !ok {
				if o.GetKind() != "Role" || (k != fence.TagSpoke && k != fence.TagOIDC) {
					t.Errorf("%s: function adds tag %s", key, k)
				} else {
					diffs = append(diffs, fmt.Sprintf("%s +tag %s", key, k))
				}
			}
		}
		// Cluster: public access is the hub's egress then the claim's.
		if key == "cluster" {
			ov, _, _ := unstructured.NestedFieldCopy(o.Object, "spec", "forProvider", "vpcConfig")
			nv, _, _ := unstructured.NestedFieldCopy(n.Object, "spec", "forProvider", "vpcConfig")
			oc := ov.(map[string]any)["publicAccessCidrs"]
			nc := nv.(map[string]any)["publicAccessCidrs"]
			if !reflect.DeepEqual(oc, nc) {
				t.Errorf("cluster publicAccessCidrs: function %v, Composition %v", nc, oc)
			}
		}
		for _, doc := range []string{"policy", "assumeRolePolicy"} {
			ov, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", doc)
			nv, _, _ := unstructured.NestedString(n.Object, "spec", "forProvider", doc)
			if ov != "" && nv == "" {
				t.Errorf("%s: %s missing", key, doc)
			}
			if ov != nv {
				diffs = append(diffs, key+" "+doc+" from spokeiam")
			}
		}
	}
	var added []string
	for k, g := range got {
		api, _ := g["apiVersion"].(string)
		if !seen[k] && !strings.HasPrefix(api, "ec2.") && !strings.Contains(k, "-by-cluster") || k == "usage-log-group-by-cluster" {
			if !seen[k] {
				added = append(added, k)
			}
		}
	}
	sort.Strings(added)
	if len(added) > 0 {
		diffs = append(diffs, "added: "+strings.Join(added, ", "))
	}
	return diffs
}

// legacySingletons are the forProvider blocks that were one-element lists in
// eks.aws.upbound.io/v1beta1 Cluster and NodeGroup and are objects in
// v1beta2, their storage version since provider-upjet-aws v2.6.0
// (package/crds/eks.aws.upbound.io_{clusters,nodegroups}.yaml); the
// function composes v1beta2.
var legacySingletons = map[string][]string{
	"Cluster":   {"accessConfig", "vpcConfig"},
	"NodeGroup": {"updateConfig", "scalingConfig"},
}

// upgradeLegacy turns a frozen Composition's v1beta1 Cluster or NodeGroup
// (or a hold of one) into v1beta2, as the provider's conversion does.
func upgradeLegacy(o *unstructured.Unstructured) {
	const v1, v2 = "eks.aws.upbound.io/v1beta1", "eks.aws.upbound.io/v1beta2"
	for _, end := range []string{"of", "by"} {
		if kind, _, _ := unstructured.NestedString(o.Object, "spec", end, "kind"); legacySingletons[kind] != nil {
			if av, _, _ := unstructured.NestedString(o.Object, "spec", end, "apiVersion"); av == v1 {
				_ = unstructured.SetNestedField(o.Object, v2, "spec", end, "apiVersion")
			}
		}
	}
	if o.GetAPIVersion() != v1 || legacySingletons[o.GetKind()] == nil {
		return
	}
	o.SetAPIVersion(v2)
	for _, f := range legacySingletons[o.GetKind()] {
		if l, ok, _ := unstructured.NestedSlice(o.Object, "spec", "forProvider", f); ok && len(l) == 1 {
			_ = unstructured.SetNestedField(o.Object, l[0], "spec", "forProvider", f)
		}
	}
}
