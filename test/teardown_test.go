package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/internal/fleetcmd"
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
	hubSpoke, ok3 := composedWorkloadsTimeout(filepath.Join(tree, "gitops-system/platform-apis/workload-cluster/composition.yaml"))
	if !ok3 {
		problems = append(problems, "composition: no timeout on the <spoke>-workloads Kustomization")
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

// composedWorkloadsTimeout finds the timeout of the composed
// <spoke>-workloads Kustomization: the base whose path is spoke-bootstrap/workloads.
var workloadsBaseRE = regexp.MustCompile(`(?m)^\s+timeout: (\S+)\n\s+path: \./\$\{GITOPS_SYSTEM_PATH\}/spoke-bootstrap/workloads\s*$`)

func composedWorkloadsTimeout(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	m := workloadsBaseRE.FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(string(m[1]))
	return d, err == nil
}

func TestTeardownTimeoutsPlanted(t *testing.T) {
	cases := []struct {
		name  string
		edits []factEdit
		want  string
	}{
		{"spoke workloads gives up before the app", []factEdit{{"gitops-system/spoke-bootstrap/workloads/workloads.yaml", "timeout: 20m", "timeout: 10m"}}, "workloads (spoke)"},
		{"hub gives up before its spokes", []factEdit{{"gitops-system/clusters/mgmt/workload-clusters.yaml", "timeout: 90m", "timeout: 20m"}}, "workload-clusters (hub)"},
		{"root outlived by workload-clusters", []factEdit{{"gitops-system/clusters/mgmt/workload-clusters.yaml", "timeout: 90m", "timeout: 3h"}}, "root Kustomization"},
		{"app teardown not waited for", []factEdit{{"gitops-workloads/clusters/apps-staging/payment-app.yaml", "deletionPolicy: WaitForTermination", "deletionPolicy: Delete"}}, "WaitForTermination"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problems := checkTeardownTimeouts(t, mutateRepo(t, c.edits...))
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
