package fleetcmd

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

var transitionTime = regexp.MustCompile(`lastTransitionTime: "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z"`)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what the commands print")

// TestGoldenOutputs runs fleet with its real dependencies (the offline
// proof, Crossplane's render with the real functions) on a copy of the
// repository's tree and compares everything it prints with
// testdata/<case>.golden, so an unintended change to any line shows.
// `go test -run TestGoldenOutputs -update` rewrites the files; review the
// diff before committing it.
func TestGoldenOutputs(t *testing.T) {
	t.Cleanup(xrender.Shutdown)
	cert := filepath.Join(plant.Manifests(t), "gitops-system", "sealing-cert.pem")
	knownHosts := filepath.Join("testdata", "known_hosts")
	cases := map[string]struct {
		reason string
		args   []string
		edits  []plant.Edit
		code   int
	}{
		"render": {
			reason: "every composed resource of the example spoke and every bootstrap object, marked hub or spoke",
			args:   []string{"render", "apps-staging"},
		},
		"validate-github": {
			reason: "the committed tree passes: one notice, no annotations",
			args:   []string{"validate", "--format", "github"},
		},
		"validate-github-findings": {
			reason: "a claim the policy refuses: one annotation per finding, on its file",
			args:   []string{"validate", "--format", "github"},
			edits: []plant.Edit{{File: "gitops-system/workload-clusters/apps-staging.yaml", Old: "region: eu-west-1", New: "region: sa-east-1"},
				{File: "gitops-system/workload-clusters/apps-staging.yaml", Old: "max: 5", New: "max: 500"}},
			code: ExitFailed,
		},
		"cluster-add-dry-run": {
			reason: "what `fleet cluster add --dry-run` would write: the paths and the claim",
			args:   []string{"cluster", "add", "team-b-dev", "--region", "eu-west-1", "--cert", cert, "--known-hosts", knownHosts, "--dry-run"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tree := plant.Repo(t, tc.edits...)
			res := runFleet(t, DefaultDeps(), "", append(tc.args, "--tree", tree)...)
			if res.code != tc.code {
				t.Fatalf("%s\nexit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.reason, res.code, tc.code, res.stdout, res.stderr)
			}
			got := strings.ReplaceAll("--- stdout\n"+res.stdout+"--- stderr\n"+res.stderr, tree, "<tree>")
			got = strings.ReplaceAll(got, plant.RepoRoot(t), "<repo>")
			// Crossplane's reconciler stamps conditions with the time it
			// ran.
			got = transitionTime.ReplaceAllString(got, "lastTransitionTime: <time>")
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s\n%s differs, -want +got:\n%s", tc.reason, golden, diff)
			}
		})
	}
}
