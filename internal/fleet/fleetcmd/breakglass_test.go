package fleetcmd

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

// needsSpoke models kustomize-controller v1.9.3 finalize: the finalizer
// builds a client for spec.kubeConfig (and fails forever when the spoke is
// unreachable) exactly when finalizerShouldDeleteResources is true.
func needsSpoke(spec map[string]any) bool {
	if spec["kubeConfig"] == nil || spec["suspend"] == true {
		return false
	}
	switch spec["deletionPolicy"] {
	case "Delete", "WaitForTermination":
		return true
	case "Orphan":
		return false
	default: // MirrorPrune, the default
		return spec["prune"] == true
	}
}

// releaseNeedsSpoke models helm-controller v1.6.2 reconcileDelete: a
// HelmRelease's deletion uninstalls from its cluster unless it is
// suspended (internal/controller/helmrelease_controller.go:452-463), and
// a suspended one leaves its HelmChart for someone else to delete.
func releaseNeedsSpoke(suspended bool) bool { return !suspended }

// applyBreakGlass applies the printed kubectl patches to the composed
// Kustomizations (by name) and to the hub-side HelmReleases of spoke, and
// returns those still needing the spoke and the HelmCharts left behind.
func applyBreakGlass(t *testing.T, spoke string, composed map[string]compose.Object, cmds []string) (stuck, charts []string) {
	t.Helper()
	byName := map[string]map[string]any{}
	for _, o := range composed {
		if o["kind"] == "Kustomization" {
			byName[o["metadata"].(compose.Object)["name"].(string)] = o["spec"].(compose.Object)
		}
	}
	// The hub-side steps' releases, from the step table (the tree's
	// release names are checked against it in test/).
	releases := map[string]bool{}
	chartsLeft := map[string]bool{}
	for _, s := range compose.BootstrapSteps() {
		if !s.Remote && s.DeletionPolicy != "Orphan" {
			if s.Release == "" {
				t.Fatalf("hub-side step %s names no HelmRelease", s.Part)
			}
			releases[compose.BootstrapName(spoke, s.Release)] = false
		}
	}
	// A kept retired eso-controller step still has its hub-side release
	// (external-secrets, installing onto the spoke). Commands naming a
	// retired object the spoke does not have find nothing (NotFound).
	retired := map[string]bool{}
	retiredParts, retiredReleases := compose.RetiredBreakGlass()
	for _, n := range append(retiredParts, retiredReleases...) {
		retired[compose.BootstrapName(spoke, n)] = true
	}
	if _, ok := byName[compose.BootstrapName(spoke, "eso-controller")]; ok {
		releases[compose.BootstrapName(spoke, "external-secrets")] = false
	}
	for _, c := range cmds {
		f := strings.Fields(c)
		if len(f) >= 6 && f[0] == "kubectl" && f[2] == compose.BootstrapNamespace && f[3] == "delete" && f[4] == "helmcharts.source.toolkit.fluxcd.io" {
			chartsLeft[f[5]] = false
			continue
		}
		if len(f) != 8 || f[0] != "kubectl" || f[2] != compose.BootstrapNamespace || f[3] != "patch" {
			t.Fatalf("unexpected command %q", c)
		}
		if f[4] == "helmreleases.helm.toolkit.fluxcd.io" {
			if _, ok := releases[f[5]]; !ok && retired[f[5]] {
				continue // NotFound
			} else if !ok {
				t.Fatalf("%q names no hub-side release of %s", c, spoke)
			}
			releases[f[5]] = strings.Contains(f[7], `"suspend":true`)
			if _, deleted := chartsLeft[compose.BootstrapNamespace+"-"+f[5]]; !deleted {
				chartsLeft[compose.BootstrapNamespace+"-"+f[5]] = true
			}
			continue
		}
		if f[4] != "kustomizations.kustomize.toolkit.fluxcd.io" {
			t.Fatalf("unexpected command %q", c)
		}
		spec, ok := byName[f[5]]
		if !ok && retired[f[5]] {
			continue // NotFound
		} else if !ok {
			t.Fatalf("%q names no composed Kustomization", c)
		}
		var p struct {
			Spec map[string]any `json:"spec"`
		}
		if err := json.Unmarshal([]byte(strings.Trim(strings.TrimPrefix(f[7], "--patch="), "'")), &p); err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		for k, v := range p.Spec {
			spec[k] = v
		}
	}
	for n, spec := range byName {
		if needsSpoke(spec) {
			stuck = append(stuck, n)
		}
	}
	for n, suspended := range releases {
		if releaseNeedsSpoke(suspended) {
			stuck = append(stuck, n)
		}
	}
	for c, left := range chartsLeft {
		if left {
			charts = append(charts, c)
		}
	}
	sort.Strings(stuck)
	sort.Strings(charts)
	return stuck, charts
}

func bootstrapObjects(t *testing.T, spoke string) map[string]compose.Object {
	t.Helper()
	return bootstrapObjectsObserving(t, spoke, nil)
}

// migratingObjects is what the function composes for a spoke bootstrapped
// before function v0.2.0 that became unreachable before its sealing-keys
// step got Ready: its retired steps, as that release composed them, kept.
func migratingObjects(t *testing.T, spoke string) map[string]compose.Object {
	t.Helper()
	ks := func(name string, spec map[string]any) compose.Object {
		return compose.Object{"apiVersion": compose.KustomizationAPI, "kind": "Kustomization",
			"metadata": map[string]any{"name": name, "namespace": compose.BootstrapNamespace},
			"spec":     spec, "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}}
	}
	src := map[string]any{"kind": "GitRepository", "name": "flux-system"}
	return bootstrapObjectsObserving(t, spoke, map[string]compose.Object{
		compose.StepKeyPrefix + "eso-controller": ks(spoke+"-eso-controller", map[string]any{
			"path": "./manifests/gitops-system/spoke-bootstrap/external-secrets", "sourceRef": src, "prune": true,
			"deletionPolicy": "WaitForTermination", "wait": true, "timeout": "5m"}),
		compose.StepKeyPrefix + "secret-store": ks(spoke+"-secret-store", map[string]any{
			"path": "./manifests/gitops-system/spoke-bootstrap/secret-store", "sourceRef": src, "prune": true,
			"deletionPolicy": "Orphan", "wait": true, "timeout": "10m",
			"kubeConfig": map[string]any{"configMapRef": map[string]any{"name": spoke + "-kubeconfig"}}}),
	})
}

func bootstrapObjectsObserving(t *testing.T, spoke string, extra map[string]compose.Object) map[string]compose.Object {
	t.Helper()
	obs := map[string]compose.Object{
		"vpc": {"status": map[string]any{"atProvider": map[string]any{"id": "vpc-1"}}},
		"cluster": {"status": map[string]any{"atProvider": map[string]any{"arn": "arn:aws:eks:eu-west-1:111122223333:cluster/mgmt-" + spoke,
			"identity": []any{map[string]any{"oidc": []any{map[string]any{"issuer": "https://oidc.example/id/1"}}}}}}},
	}
	for k, o := range extra {
		obs[k] = o
	}
	out, _, err := compose.Bootstrap(compose.Params{Input: compose.Input{HubName: "mgmt", AccountID: "111122223333", Partition: "aws"}, Spoke: spoke,
		Spec: workloadcluster.Spec{Region: "eu-west-1"}}, compose.BootstrapIn{SystemPath: "manifests/gitops-system", Observed: obs})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// After the printed commands no composed Kustomization's finalizer
// needs the unreachable spoke; without them (or with one dropped) some do.
func TestBreakGlassReleasesEveryFinalizer(t *testing.T) {
	f := newFixture(t)
	r := f.run(testDeps(), "cluster", "break-glass", "apps-staging")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	for _, tc := range []struct {
		name    string
		objects func(*testing.T, string) map[string]compose.Object
		// every: dropping any one command leaves something stuck (on a
		// spoke without the retired steps, their commands find nothing)
		every bool
	}{
		{"spoke on the current steps", bootstrapObjects, false},
		{"spoke still moving to the hub's sealing keys", migratingObjects, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if stuck, charts := applyBreakGlass(t, "apps-staging", tc.objects(t, "apps-staging"), cmds); len(stuck)+len(charts) != 0 {
				t.Errorf("after break-glass still needing the spoke: %v; HelmCharts left: %v", stuck, charts)
			}
			if stuck, _ := applyBreakGlass(t, "apps-staging", tc.objects(t, "apps-staging"), nil); len(stuck) == 0 {
				t.Error("without break-glass nothing needs the spoke: the model cannot fail")
			}
			if !tc.every {
				return
			}
			// Planted: each command dropped in turn.
			for i := range cmds {
				rest := append(append([]string{}, cmds[:i]...), cmds[i+1:]...)
				if stuck, charts := applyBreakGlass(t, "apps-staging", tc.objects(t, "apps-staging"), rest); len(stuck)+len(charts) == 0 {
					t.Errorf("dropping %q went unnoticed", cmds[i])
				}
			}
		})
	}
}

func TestBreakGlassRefusesBadName(t *testing.T) {
	f := newFixture(t)
	for _, args := range [][]string{{"Bad_Name"}, {"a-name-that-is-far-too-long"}, {}} {
		r := f.run(testDeps(), append([]string{"cluster", "break-glass"}, args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, "NAME") {
			t.Errorf("%v: exit %d, stderr %q: want a refusal naming NAME", args, r.code, r.stderr)
		}
		if strings.Contains(r.stdout, "kubectl") {
			t.Errorf("%v: printed commands despite the error", args)
		}
	}
}
