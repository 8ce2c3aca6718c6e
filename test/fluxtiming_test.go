package test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// Flux timing at fleet scale. kustomize-controller runs health
// checks (wait: true) and WaitForTermination inside Reconcile (v1.9.4
// kustomization_controller.go WaitForSetWithContext / WaitForSetTermination),
// so each waiting Kustomization holds one of its --concurrent workers for
// up to its timeout. A spoke's composed steps run one at a time (dependsOn
// on the way up, Crossplane Usages on the way down), so a spoke holds at
// most one worker at once.
//
// The model, from the tree's own timeouts:
//   - teardown: the root and every hub Kustomization with WaitForTermination
//     (workload-clusters) hold a worker for the whole teardown; the spokes
//     share the rest, each needing at most the sum of its WaitForTermination
//     steps' timeouts plus one retryInterval per step (Flux's requeue).
//     Worst case N spokes: ceil(N / free) rounds of that chain.
//   - bootstrap: each spoke needs at most the sum of its wait: true steps'
//     timeouts; the hub's own Kustomizations must still get a worker while
//     every spoke holds one (no starvation).
//
// Teardown must end inside workload-clusters' timeout (else Flux gives up
// and the hub goes before its spokes), which is inside the root's, which is
// inside Pulumi's delete timeout.

type kstep struct {
	Name           string
	Timeout        time.Duration
	RetryInterval  time.Duration
	Wait           bool
	WaitForDeletes bool
}

type fluxTree struct {
	Spoke          []kstep // composed per spoke
	Hub            []kstep // clusters/mgmt
	WorkloadsFleet time.Duration
	Root           time.Duration
	Pulumi         time.Duration
}

func parseKStep(name string, spec map[string]any) (kstep, error) {
	s := kstep{Name: name}
	str := func(k string) string { v, _ := spec[k].(string); return v }
	var err error
	if s.Timeout, err = time.ParseDuration(str("timeout")); err != nil {
		return s, fmt.Errorf("%s: spec.timeout %q: %w (Flux's default would apply; set it)", name, str("timeout"), err)
	}
	if ri := str("retryInterval"); ri != "" {
		if s.RetryInterval, err = time.ParseDuration(ri); err != nil {
			return s, fmt.Errorf("%s: spec.retryInterval: %w", name, err)
		}
	} else if s.RetryInterval, err = time.ParseDuration(str("interval")); err != nil {
		return s, fmt.Errorf("%s: spec.interval: %w", name, err)
	}
	s.Wait, _ = spec["wait"].(bool)
	s.WaitForDeletes = str("deletionPolicy") == "WaitForTermination"
	return s, nil
}

// readFluxTree reads the timeouts from the tree.
func readFluxTree(tree string) (*fluxTree, error) {
	ft := &fluxTree{Pulumi: fluxbootstrap.DefaultRootDeleteTimeout}
	var err error
	if ft.Root, err = time.ParseDuration(fluxbootstrap.KustomizationTimeout); err != nil {
		return nil, err
	}
	// The composed steps are what the function composes for the example
	// claim, named by composition-resource-name.
	objs, err := renderExampleClaim(tree)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() != "Kustomization" || !strings.HasPrefix(o.GetAPIVersion(), "kustomize.toolkit.fluxcd.io/") {
			continue
		}
		spec, _, _ := unstructured.NestedMap(o.Object, "spec")
		s, err := parseKStep(o.GetAnnotations()["crossplane.io/composition-resource-name"], spec)
		if err != nil {
			return nil, err
		}
		ft.Spoke = append(ft.Spoke, s)
	}
	if len(ft.Spoke) == 0 {
		return nil, fmt.Errorf("the function composes no Kustomization for %s", egressClaim)
	}
	sort.Slice(ft.Spoke, func(i, j int) bool { return ft.Spoke[i].Name < ft.Spoke[j].Name })
	files, err := filepath.Glob(filepath.Join(tree, "gitops-system/clusters/mgmt/*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var k struct {
			Kind     string                `yaml:"kind"`
			Metadata struct{ Name string } `yaml:"metadata"`
			Spec     map[string]any        `yaml:"spec"`
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if k.Kind != "Kustomization" || k.Spec == nil {
			continue
		}
		s, err := parseKStep(k.Metadata.Name, k.Spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		ft.Hub = append(ft.Hub, s)
		if s.Name == "workload-clusters" {
			ft.WorkloadsFleet = s.Timeout
		}
	}
	if len(ft.Spoke) == 0 || ft.WorkloadsFleet == 0 {
		return nil, fmt.Errorf("no composed Kustomizations (%d) or no workload-clusters Kustomization", len(ft.Spoke))
	}
	return ft, nil
}

type fluxTiming struct {
	Bootstrap, Teardown time.Duration
	Problems            []string
}

// timing is the worst case for n spokes with concurrency workers.
func (ft *fluxTree) timing(n, workers int) fluxTiming {
	var out fluxTiming
	var up, down time.Duration
	for _, s := range ft.Spoke {
		if s.Wait {
			up += s.Timeout + s.RetryInterval
		}
		if s.WaitForDeletes {
			down += s.Timeout + s.RetryInterval
		}
	}
	held := 1 // the root, waiting for what it applied
	for _, s := range ft.Hub {
		if s.WaitForDeletes {
			held++
		}
	}
	rounds := func(free int) int {
		if free < 1 {
			return -1
		}
		return (n + free - 1) / free
	}
	if r := rounds(workers - len(ft.Hub)); r < 0 {
		out.Problems = append(out.Problems, fmt.Sprintf("bootstrap: %d workers leave none for %d spokes next to the hub's %d Kustomizations", workers, n, len(ft.Hub)))
	} else {
		out.Bootstrap = time.Duration(r) * up
		if n+len(ft.Hub) > workers {
			out.Problems = append(out.Problems, fmt.Sprintf("bootstrap: %d spokes waiting hold %d workers; the hub's %d Kustomizations starve (need --concurrent >= %d)", n, min(n, workers), len(ft.Hub), n+len(ft.Hub)))
		}
	}
	r := rounds(workers - held)
	if r < 0 {
		out.Problems = append(out.Problems, fmt.Sprintf("teardown: %d workers, %d held by the root and workload-clusters: none left for spokes", workers, held))
		return out
	}
	out.Teardown = time.Duration(r) * down
	if out.Teardown >= ft.WorkloadsFleet {
		out.Problems = append(out.Problems, fmt.Sprintf("teardown of %d spokes takes up to %v (%d round(s) of %v), not inside workload-clusters' timeout %v: the hub would go before its spokes", n, out.Teardown, r, down, ft.WorkloadsFleet))
	}
	if ft.WorkloadsFleet >= ft.Root {
		out.Problems = append(out.Problems, fmt.Sprintf("workload-clusters' timeout %v is not inside the root's %v", ft.WorkloadsFleet, ft.Root))
	}
	if ft.Root >= ft.Pulumi {
		out.Problems = append(out.Problems, fmt.Sprintf("the root's timeout %v is not inside Pulumi's delete timeout %v", ft.Root, ft.Pulumi))
	}
	return out
}

func TestFluxTimingAtFleetScale(t *testing.T) {
	ft, err := readFluxTree(filepath.Join("..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	w := stacks.Defaults().FluxConcurrency
	for _, n := range []int{1, 10, 50} {
		tm := ft.timing(n, w)
		t.Logf("%2d spokes, --concurrent=%d: bootstrap <= %v, teardown <= %v (workload-clusters %v, root %v, Pulumi %v)",
			n, w, tm.Bootstrap, tm.Teardown, ft.WorkloadsFleet, ft.Root, ft.Pulumi)
		if len(tm.Problems) > 0 {
			t.Errorf("%d spokes: %v", n, tm.Problems)
		}
	}
}

// Planted: upstream's default concurrency, too many spokes for the
// default, a workload-clusters timeout below a spoke's teardown, a spoke
// step without a timeout.
func TestFluxTimingPlanted(t *testing.T) {
	base, err := readFluxTree(filepath.Join("..", "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	w := stacks.Defaults().FluxConcurrency
	tests := []struct {
		name    string
		spokes  int
		workers int
		mutate  func(ft *fluxTree)
		want    string
	}{
		{"default holds 50 spokes", 50, w, nil, ""},
		{"upstream default --concurrent=4, 10 spokes", 10, 4, nil, "not inside workload-clusters' timeout"},
		{"more spokes than the default sizes for", w, w, nil, "starve"},
		{"workload-clusters shorter than a spoke's teardown", 1, w, func(ft *fluxTree) { ft.WorkloadsFleet = 30 * time.Minute }, "not inside workload-clusters' timeout"},
		{"root shorter than workload-clusters", 1, w, func(ft *fluxTree) { ft.Root = 80 * time.Minute }, "not inside the root's"},
		{"Pulumi shorter than the root", 1, w, func(ft *fluxTree) { ft.Pulumi = 90 * time.Minute }, "not inside Pulumi's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := *base
			ft.Spoke = append([]kstep(nil), base.Spoke...)
			if tt.mutate != nil {
				tt.mutate(&ft)
			}
			got := strings.Join(ft.timing(tt.spokes, tt.workers).Problems, "; ")
			if tt.want == "" && got != "" {
				t.Fatalf("unexpected: %s", got)
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("problems %q, want one containing %q", got, tt.want)
			}
		})
	}
	// A step without a timeout is an error, not a silent 0.
	dir := plant.Repo(t, plant.Edit{File: "gitops-system/clusters/mgmt/workload-clusters.yaml", Old: "\n  timeout: 90m\n", New: "\n"})
	if _, err := readFluxTree(dir); err == nil || !strings.Contains(err.Error(), "spec.timeout") {
		t.Fatalf("workload-clusters without a timeout: err %v, want a spec.timeout error", err)
	}
	// The composed steps are read from the function's output: a step
	// without a timeout there fails the same way.
	if _, err := parseKStep("bootstrap-workloads", map[string]any{"interval": "10m"}); err == nil || !strings.Contains(err.Error(), "spec.timeout") {
		t.Fatalf("composed step without a timeout: err %v, want a spec.timeout error", err)
	}
}
