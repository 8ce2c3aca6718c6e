package site

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
)

// TestPulumiKubernetesServesThePrograms holds the suite's build of the
// Kubernetes provider (binaries.PulumiKubernetes, whose registration map
// of component resources is cut) to what the repository's stacks
// register: no resource of any stack's program is of a type the build
// leaves out, which the real engine would refuse.
func TestPulumiKubernetesServesThePrograms(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := binaries.PulumiKubernetes.Dropped(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, keys := range dropped {
		types = append(types, keys...)
	}
	if len(types) == 0 {
		t.Fatal("the build leaves no component resource out: the cut or its reading is gone")
	}
	stackFiles, err := filepath.Glob(filepath.Join(root, "Pulumi.*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stackFiles) < 2 {
		t.Fatalf("stack files %v: want the hub's and a spoke account's at least", stackFiles)
	}
	for _, f := range stackFiles {
		stack := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "Pulumi."), ".yaml")
		t.Run(stack, func(t *testing.T) {
			var m *mocks.Mocks
			var err error
			if strings.HasPrefix(stack, "acct-") {
				m, err = CaptureAccount(f, clusterinfo.ExampleSpokeAccount, nil)
			} else {
				cfg, cerr := StackConfig(f)
				if cerr != nil {
					t.Fatal(cerr)
				}
				var b *HubBootstrap
				if b, err = CaptureHub(cfg); b != nil {
					m = b.Mocks
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			kubernetes := 0
			for _, r := range m.All() {
				if strings.HasPrefix(r.Type, "kubernetes:") {
					kubernetes++
				}
				if slices.Contains(types, r.Type) {
					t.Errorf("%s registers %s (%s), which the suite's Kubernetes provider does not serve (binaries.PulumiKubernetes.Overlay: keep it)", stack, r.Name, r.Type)
				}
			}
			t.Logf("%s: %d resources, %d of the Kubernetes provider; left out of its build: %v", stack, len(m.All()), kubernetes, types)
		})
	}
}
