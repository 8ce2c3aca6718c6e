package test

import (
	"context"
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
	"github.com/gitops-fleet/eks-fleet/internal/contract/deploykey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

// bootstrapFixed are the fields the function changes on purpose, per
// composition-resource-name: the deploy-key step checks the deploy key on
// the spoke by name instead of only what it applied, which is nothing when
// the folder is empty, and it fails, rather than waits out its timeout, on a
// key the spoke's Sealed Secrets cannot decrypt; the hub-side
// steps time out with their HelmRelease's install (5m, not 10m or 15m): a
// claim deleted during their health check waited it out (measured on the
// real controllers: 5 to 17 minutes of a `pulumi destroy`).
var bootstrapFixed = map[string][]string{
	compose.StepKeyPrefix + compose.DeployKeyPart: {"wait", "healthChecks", "healthCheckExprs"},
	compose.StepKeyPrefix + "sealed-secrets":      {"timeout"},
	compose.StepKeyPrefix + "flux-operator":       {"timeout"},
}

// The steps the function replaced: the spoke ran its own External Secrets
// (eso-controller, secret-store), reading the sealing keys with a role of
// its own, which a role the hub's Crossplane can make could too (issue 24);
// the hub now hands the keys over (sealing-keys). The Composition's two and
// the function's one are compared by what they are, not field by field; a
// Usage either holds by them is left out, and the variable only the
// retired release read.
var (
	bootstrapRetired  = compose.RetiredParts()
	bootstrapReplaces = compose.SealingKeysPart
	retiredVariable   = "SPOKE_ESO_ROLE_ARN"
)

// replacedStepObject reports whether key is a retired or replacing step,
// or a Usage whose holder is one.
func replacedStepObject(key string) bool {
	for _, p := range append(slices.Clone(bootstrapRetired), bootstrapReplaces) {
		if key == compose.StepKeyPrefix+p || strings.HasPrefix(key, "usage-") && strings.HasSuffix(key, "-by-"+p) {
			return true
		}
	}
	return false
}

// TestFunctionBootstrapMatchesComposition renders the committed claim and a
// variant (other name and region) with the P&T Composition and compares
// the kubeconfig, every bootstrap Kustomization and every Usage that holds
// one with the function's: same key, kind, name, namespace and spec (path,
// kubeConfig, substitutions, dependsOn, timeouts, deletion policy, health
// checks), except the listed fixed defects.
func TestFunctionBootstrapMatchesComposition(t *testing.T) {
	info := clusterinfo.Example()
	raw, err := os.ReadFile("../manifests/gitops-system/workload-clusters/apps-staging.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, region string }{
		{"committed", ""},
		{"boot-variant", "us-east-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var claim workloadcluster.Claim
			if err := yaml.Unmarshal(raw, &claim); err != nil {
				t.Fatal(err)
			}
			if tc.region != "" {
				claim.Metadata.Name, claim.Spec.Region = tc.name, tc.region
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
			aws := map[string]compose.Object{}
			for _, o := range objs {
				key := o.GetAnnotations()["crossplane.io/composition-resource-name"]
				switch {
				case key == compose.KubeconfigKey || strings.HasPrefix(key, compose.StepKeyPrefix):
					old[key] = o
				case strings.HasPrefix(key, "usage-") && o.GetKind() == "Usage":
					upgradeLegacy(o)
					old[key] = o
				}
			}
			// What AWS reported in the render (its fake provider status), as
			// the Composition read it back: the VPC ID, the cluster ARN and
			// the OIDC issuer. Everything else the function derives in Go.
			if old[compose.KubeconfigKey] == nil || old["bootstrap-sync"] == nil {
				t.Fatal("Composition rendered no kubeconfig or sync step")
			}
			sub, _, _ := unstructured.NestedStringMap(old["bootstrap-sync"].Object, "spec", "postBuild", "substitute")
			arn, _, _ := unstructured.NestedString(old[compose.KubeconfigKey].Object, "data", "cluster")
			aws["vpc"] = compose.Object{"status": map[string]any{"atProvider": map[string]any{"id": sub[spokeinfo.VPCID]}}}
			aws["cluster"] = compose.Object{"status": map[string]any{"atProvider": map[string]any{"arn": arn,
				"identity": []any{map[string]any{"oidc": []any{map[string]any{"issuer": "https://" + sub[spokeinfo.OIDCIssuer]}}}}}}}
			hub := hubiam.Env{HubName: info.HubName, AccountID: info.AccountID, Partition: info.Partition, Region: info.Region}
			got, _, err := compose.Bootstrap(compose.Params{
				Input: compose.Input{HubName: hub.HubName, AccountID: hub.AccountID, Partition: hub.Partition, HubRegion: hub.Region},
				Spoke: claim.Metadata.Name, Spec: claim.Spec,
			}, compose.BootstrapIn{SystemPath: info.SystemPath, Observed: aws})
			if err != nil {
				t.Fatal(err)
			}
			if len(old) < 1+8+10 {
				t.Fatalf("Composition rendered only %d bootstrap objects", len(old))
			}
			keys := map[string]bool{}
			for k := range old {
				keys[k] = true
			}
			for k := range got {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			var stepHolds []string
			for _, p := range bootstrapRetired {
				if old[compose.StepKeyPrefix+p] == nil || got[compose.StepKeyPrefix+p] != nil {
					t.Errorf("step %s: in Composition %v, in function %v; want only in the Composition", p, old[compose.StepKeyPrefix+p] != nil, got[compose.StepKeyPrefix+p] != nil)
				}
			}
			if got[compose.StepKeyPrefix+bootstrapReplaces] == nil || old[compose.StepKeyPrefix+bootstrapReplaces] != nil {
				t.Errorf("step %s: in Composition %v, in function %v; want only in the function", bootstrapReplaces, old[compose.StepKeyPrefix+bootstrapReplaces] != nil, got[compose.StepKeyPrefix+bootstrapReplaces] != nil)
			}
			for _, key := range sorted {
				o, n := old[key], got[key]
				if replacedStepObject(key) {
					continue
				}
				var nm map[string]any
				if n != nil {
					nm = roundTrip(t, n)
				}
				if (o != nil && holdsStep(o.Object)) || holdsStep(nm) {
					// Changed on purpose: the function's holds among the
					// steps tear the bootstrap down in three waves
					// (compose.BootstrapUsages; TestTeardownOrder, and the
					// real-controller suite's teardown), where the
					// Composition chained every step to the next, a 30 s
					// Usage poll each.
					stepHolds = append(stepHolds, key)
					continue
				}
				if o == nil || n == nil {
					t.Errorf("%s: in Composition %v, in function %v", key, o != nil, n != nil)
					continue
				}
				nu := &unstructured.Unstructured{Object: roundTrip(t, n)}
				if nu.GetKind() != o.GetKind() || nu.GetAPIVersion() != o.GetAPIVersion() || nu.GetName() != o.GetName() || nu.GetNamespace() != o.GetNamespace() {
					t.Errorf("%s: function %s %s %s/%s, Composition %s %s %s/%s", key,
						nu.GetAPIVersion(), nu.GetKind(), nu.GetNamespace(), nu.GetName(), o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName())
				}
				field := "spec"
				if o.GetKind() == "ConfigMap" {
					field = "data"
				}
				os, _, _ := unstructured.NestedMap(o.Object, field)
				ns, _, _ := unstructured.NestedMap(nu.Object, field)
				// Per-spoke fence: app roles are named
				// <prefix><spoke>_..., which no other spoke's prefix covers;
				// the Composition's <prefix><spoke>-app- is covered by spoke
				// "<spoke>-app-x"'s. The crossplane role's policy follows
				// spokeiam (k9c), so the value must be spokeiam's.
				if subOld, ok, _ := unstructured.NestedMap(os, "postBuild", "substitute"); ok {
					delete(subOld, retiredVariable)
					want := spokeiam.AppRolePrefix(hub, claim.Metadata.Name)
					subNew, _, _ := unstructured.NestedMap(ns, "postBuild", "substitute")
					if subNew[spokeinfo.AppRolePrefix] != want || subOld[spokeinfo.AppRolePrefix] != strings.TrimSuffix(want, fence.MintedRoleSeparator)+"-app-" {
						t.Errorf("%s %s: function %v, Composition %v, want %s", key, spokeinfo.AppRolePrefix, subNew[spokeinfo.AppRolePrefix], subOld[spokeinfo.AppRolePrefix], want)
					}
					subOld[spokeinfo.AppRolePrefix] = want
					_ = unstructured.SetNestedMap(os, subOld, "postBuild", "substitute")
				}
				// A namespaced Usage's of without a namespace is in the
				// Usage's namespace (crossplane v2.2.1 finder.go Deref);
				// the function writes it explicitly.
				if o.GetKind() == "Usage" {
					if _, set, _ := unstructured.NestedFieldNoCopy(os, "of", "resourceRef", "namespace"); !set {
						_ = unstructured.SetNestedField(os, o.GetNamespace(), "of", "resourceRef", "namespace")
					}
				}
				// The step after the replaced ones depends on the one that
				// replaced them.
				if deps, _ := os["dependsOn"].([]any); len(deps) == 1 {
					if m, _ := deps[0].(map[string]any); m["name"] == compose.BootstrapName(claim.Metadata.Name, bootstrapRetired[len(bootstrapRetired)-1]) {
						m["name"] = compose.BootstrapName(claim.Metadata.Name, bootstrapReplaces)
					}
				}
				for _, f := range bootstrapFixed[key] {
					delete(os, f)
					delete(ns, f)
				}
				if !reflect.DeepEqual(os, ns) {
					for _, f := range union(os, ns) {
						if !reflect.DeepEqual(os[f], ns[f]) {
							t.Errorf("%s %s.%s: function %v, Composition %v", key, field, f, ns[f], os[f])
						}
					}
				}
			}
			// The fixed defect itself: the Composition's deploy-key step
			// (wait: true, no healthChecks) checks nothing when the folder is
			// empty; the function's names the key's Secret on the spoke.
			dk := compose.StepKeyPrefix + compose.DeployKeyPart
			if w, _, _ := unstructured.NestedBool(old[dk].Object, "spec", "wait"); !w {
				t.Errorf("Composition %s: wait false; the B1 comparison is stale", dk)
			}
			if _, has, _ := unstructured.NestedSlice(old[dk].Object, "spec", "healthChecks"); has {
				t.Errorf("Composition %s has healthChecks; the B1 comparison is stale", dk)
			}
			dkNew := roundTrip(t, got[dk])
			nw, _, _ := unstructured.NestedBool(dkNew, "spec", "wait")
			hc, _, _ := unstructured.NestedSlice(dkNew, "spec", "healthChecks")
			secret := false
			for _, h := range hc {
				m, _ := h.(map[string]any)
				if m["kind"] == "Secret" && m["name"] == deploykey.SecretName && m["namespace"] == deploykey.SecretNamespace {
					secret = true
				}
			}
			// The second fixed defect: a key sealed for another certificate
			// fails the step (the failed expression) instead of waiting it out.
			exprs, _, _ := unstructured.NestedSlice(dkNew, "spec", "healthCheckExprs")
			failed := ""
			for _, e := range exprs {
				if m, _ := e.(map[string]any); m["kind"] == "SealedSecret" {
					failed, _ = m["failed"].(string)
				}
			}
			if !strings.Contains(failed, "no key could decrypt secret") {
				t.Errorf("function %s: SealedSecret health check has no failed expression for an undecryptable key: %q", dk, failed)
			}
			if nw || !secret {
				t.Errorf("function %s: wait %v, checks Secret %s/%s %v: an empty deploy-key folder would pass", dk, nw, deploykey.SecretNamespace, deploykey.SecretName, secret)
			}
			if len(stepHolds) == 0 {
				t.Error("no holds among the steps: the Composition and the function both hold steps by steps")
			}
			t.Logf("%s: %d bootstrap objects compared (kubeconfig, %d steps, usages); fixed: %v; holds among the steps changed: %v", tc.name, len(old), len(compose.BootstrapSteps()), bootstrapFixed, stepHolds)
		})
	}
}

func union(a, b map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// holdsStep reports whether o is a Usage holding a bootstrap step (a
// Kustomization).
func holdsStep(o map[string]any) bool {
	kind, _, _ := unstructured.NestedString(o, "spec", "of", "kind")
	return o["kind"] == "Usage" && kind == "Kustomization"
}
