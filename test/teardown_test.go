package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// Teardown is a chain of waits, each Flux Kustomization with
// deletionPolicy WaitForTermination waiting for the ones it applied. Flux
// stops waiting when a Kustomization's timeout passes; if a parent gave up
// before its child, the hub (or a spoke's cluster) would be deleted while
// AWS resources still exist. checkTeardownTimeouts asserts every link of the
// chain is strictly longer than the one it waits for:
//
//	app Kustomization (spoke: payment-app, and every app `fleet app add`
//	writes, fleetcmd.AppTimeout) < workloads (spoke) < <spoke>-workloads (hub,
//	composed) < workload-clusters (hub) < root Kustomization (Pulumi) <
//	Pulumi's delete timeout.
func checkTeardownTimeouts(t *testing.T, tree string) []string {
	t.Helper()
	var problems []string
	read := func(rel string) (time.Duration, bool) {
		d, err := kustomizationTimeout(filepath.Join(tree, rel))
		if err != nil {
			problems = append(problems, err.Error())
			return 0, false
		}
		return d, true
	}
	app, ok1 := read("gitops-workloads/clusters/apps-staging/payment-app.yaml")
	spoke, ok2 := read("gitops-system/spoke-bootstrap/workloads/workloads.yaml")
	hubSpoke, herr := composedWorkloadsTimeout(t, tree)
	ok3 := herr == nil
	if herr != nil {
		problems = append(problems, herr.Error())
	}
	fleet, ok4 := read("gitops-system/clusters/mgmt/workload-clusters.yaml")
	root, err := time.ParseDuration(fluxbootstrap.KustomizationTimeout)
	if err != nil {
		problems = append(problems, fmt.Sprintf("fluxbootstrap.KustomizationTimeout: %v", err))
	}
	fleetApp, ferr := time.ParseDuration(fleetcmd.AppTimeout)
	if ferr != nil {
		problems = append(problems, fmt.Sprintf("fleetcmd.AppTimeout: %v", ferr))
	}
	if fleetcmd.AppDeletionPolicy != "WaitForTermination" {
		problems = append(problems, fmt.Sprintf("fleetcmd.AppDeletionPolicy %q: want WaitForTermination, or the teardown of apps fleet writes is not waited for", fleetcmd.AppDeletionPolicy))
	}
	if !(ok1 && ok2 && ok3 && ok4 && err == nil && ferr == nil) {
		return problems
	}
	// Apps written by `fleet app add` wait in parallel with payment-app:
	// the spoke's workloads Kustomization waits for both.
	if spoke <= fleetApp {
		problems = append(problems, fmt.Sprintf("teardown wait of workloads (spoke) (%s) is not longer than that of apps written by fleet app add (fleetcmd.AppTimeout, %s) it waits for",
			spoke, fleetApp))
	}
	chain := []struct {
		name string
		d    time.Duration
	}{
		{"payment-app (spoke)", app},
		{"workloads (spoke)", spoke},
		{"<spoke>-workloads (hub, composed)", hubSpoke},
		{"workload-clusters (hub)", fleet},
		{"root Kustomization (fluxbootstrap.KustomizationTimeout)", root},
		{"Pulumi delete (fluxbootstrap.DefaultRootDeleteTimeout)", fluxbootstrap.DefaultRootDeleteTimeout},
	}
	for i := 1; i < len(chain); i++ {
		if chain[i].d <= chain[i-1].d {
			problems = append(problems, fmt.Sprintf("teardown wait of %s (%s) is not longer than that of %s (%s) it waits for",
				chain[i].name, chain[i].d, chain[i-1].name, chain[i-1].d))
		}
	}
	return problems
}

// kustomizationTimeout reads spec.timeout of the one Flux Kustomization in path.
func kustomizationTimeout(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var k struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Timeout        string `yaml:"timeout"`
			DeletionPolicy string `yaml:"deletionPolicy"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if k.Spec.DeletionPolicy != "WaitForTermination" {
		return 0, fmt.Errorf("%s: deletionPolicy %q: want WaitForTermination, or its teardown is not waited for", path, k.Spec.DeletionPolicy)
	}
	d, err := time.ParseDuration(k.Spec.Timeout)
	if err != nil {
		return 0, fmt.Errorf("%s: spec.timeout %q: %w", path, k.Spec.Timeout, err)
	}
	return d, nil
}

// composedWorkloadsTimeout renders the example claim on tree and returns
// the timeout of the composed <spoke>-workloads Kustomization (the one whose
// path is spoke-bootstrap/workloads), as the function composes it.
func composedWorkloadsTimeout(t *testing.T, tree string) (time.Duration, error) {
	t.Helper()
	objs, err := renderExampleClaim(tree)
	if err != nil {
		return 0, err
	}
	for _, o := range objs {
		p, _, _ := unstructured.NestedString(o.Object, "spec", "path")
		if o.GetKind() != "Kustomization" || !strings.HasSuffix(p, "/spoke-bootstrap/workloads") {
			continue
		}
		if dp, _, _ := unstructured.NestedString(o.Object, "spec", "deletionPolicy"); dp != "WaitForTermination" {
			return 0, fmt.Errorf("composed %s: deletionPolicy %q: want WaitForTermination, or its teardown is not waited for", o.GetName(), dp)
		}
		ts, _, _ := unstructured.NestedString(o.Object, "spec", "timeout")
		d, err := time.ParseDuration(ts)
		if err != nil {
			return 0, fmt.Errorf("composed %s: spec.timeout %q: %w", o.GetName(), ts, err)
		}
		return d, nil
	}
	return 0, fmt.Errorf("the function composes no <spoke>-workloads Kustomization (path .../spoke-bootstrap/workloads) for %s", egressClaim)
}

// renderExampleClaim renders the example claim (egressClaim) on tree with
// the example cluster-info, the function in-process.
func renderExampleClaim(tree string) ([]*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	objs, err := xrender.RenderClaim(ctx, tree, filepath.Join(tree, filepath.FromSlash(egressClaim)), clusterinfo.Example())
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", egressClaim, err)
	}
	return objs, nil
}

func TestTeardownTimeoutsPlanted(t *testing.T) {
	cases := []struct {
		name  string
		edits []plant.Edit
		want  string
	}{
		{"spoke workloads gives up before the app", []plant.Edit{{File: "gitops-system/spoke-bootstrap/workloads/workloads.yaml", Old: "timeout: 20m", New: "timeout: 10m"}}, "workloads (spoke)"},
		{"hub gives up before its spokes", []plant.Edit{{File: "gitops-system/clusters/mgmt/workload-clusters.yaml", Old: "timeout: 90m", New: "timeout: 20m"}}, "workload-clusters (hub)"},
		{"root outlived by workload-clusters", []plant.Edit{{File: "gitops-system/clusters/mgmt/workload-clusters.yaml", Old: "timeout: 90m", New: "timeout: 3h"}}, "root Kustomization"},
		{"composed workloads gives up before the spoke's", []plant.Edit{{File: "gitops-system/spoke-bootstrap/workloads/workloads.yaml", Old: "timeout: 20m", New: "timeout: 25m"}}, "<spoke>-workloads (hub, composed)"},
		{"app teardown not waited for", []plant.Edit{{File: "gitops-workloads/clusters/apps-staging/payment-app.yaml", Old: "deletionPolicy: WaitForTermination", New: "deletionPolicy: Delete"}}, "WaitForTermination"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problems := checkTeardownTimeouts(t, plant.Repo(t, c.edits...))
			found := false
			for _, p := range problems {
				found = found || regexp.MustCompile(regexp.QuoteMeta(c.want)).MatchString(p)
			}
			if !found {
				t.Errorf("want a problem naming %q, got %q", c.want, problems)
			}
		})
	}
}
