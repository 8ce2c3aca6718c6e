package fleetcmd

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
)

// TestAppAddTeardown checks the Kustomization `fleet app add` writes takes
// part in the teardown chain: deleting it waits for the app's objects
// (AppInfrastructure claims, load balancers), within 15 minutes, and it
// substitutes the spoke's spoke-info ConfigMap.
func TestAppAddTeardown(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"fleet repository", []string{"payment-app", "--cluster", "c1", "--repo", "self", "--path", "./manifests/apps/payment-app/overlays/staging"}},
		{"other repository", []string{"web", "--cluster", "c1", "--repo", "https://github.com/example-org/web", "--path", "deploy", "--ref", "tag:v1"}},
		{"ssh repository", []string{"api", "--cluster", "c1", "--repo", "ssh://git@github.com/example-org/api", "--path", "deploy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustAdd("c1")
			if r := f.run(testDeps(), append([]string{"app", "add"}, tt.args...)...); r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			body := f.read(fleettree.WorkloadsRel("c1") + "/" + tt.args[0] + ".yaml")
			var ks struct {
				Kind string `json:"kind"`
				Spec struct {
					DeletionPolicy string `json:"deletionPolicy"`
					Timeout        string `json:"timeout"`
					Wait           bool   `json:"wait"`
					PostBuild      struct {
						SubstituteFrom []struct {
							Kind, Name string
						} `json:"substituteFrom"`
					} `json:"postBuild"`
				} `json:"spec"`
			}
			found := false
			for _, doc := range strings.Split(body, "\n---\n") {
				if err := yaml.Unmarshal([]byte(doc), &ks); err != nil {
					t.Fatalf("%v:\n%s", err, body)
				}
				if ks.Kind == "Kustomization" {
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("no Kustomization in:\n%s", body)
			}
			if ks.Spec.DeletionPolicy != "WaitForTermination" {
				t.Errorf("spec.deletionPolicy %q, want WaitForTermination", ks.Spec.DeletionPolicy)
			}
			if d, err := time.ParseDuration(ks.Spec.Timeout); err != nil || d != 15*time.Minute {
				t.Errorf("spec.timeout %q, want 15m", ks.Spec.Timeout)
			}
			if !ks.Spec.Wait {
				t.Errorf("spec.wait is false")
			}
			if sf := ks.Spec.PostBuild.SubstituteFrom; len(sf) != 1 || sf[0].Kind != "ConfigMap" || sf[0].Name != spokeinfo.Name {
				t.Errorf("postBuild.substituteFrom %v, want ConfigMap %s", sf, spokeinfo.Name)
			}
		})
	}
}
