package fluxcontrollers

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// TestNamesAreTheOperators: each controller is a Deployment of that name
// in the manifests the pinned Flux Operator installs for the pinned Flux,
// its container named Container, and kustomize-controller's worker flag
// defaults to KustomizeControllerWorkers at the pinned release.
func TestNamesAreTheOperators(t *testing.T) {
	ctx := context.Background()
	op, err := upstream.Dir(ctx, upstream.FluxOperatorModule, "v"+versions.FluxOperator)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{SourceController, KustomizeController, HelmController, NotificationController} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(op, "config", "data", "flux", "v"+versions.Flux, name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
			for {
				var u unstructured.Unstructured
				if err := d.Decode(&u.Object); err != nil {
					t.Fatalf("flux-operator %s Flux %s: no Deployment %s (%v)", versions.FluxOperator, versions.Flux, name, err)
				}
				if u.GetKind() != "Deployment" || u.GetName() != name {
					continue
				}
				containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				if len(containers) != 1 || containers[0].(map[string]any)["name"] != Container {
					t.Errorf("Deployment %s's containers %v, want one named %q", name, containers, Container)
				}
				return
			}
		})
	}
	kc, err := upstream.Dir(ctx, "github.com/fluxcd/kustomize-controller", "v"+versions.KustomizeController)
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(filepath.Join(kc, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`flag\.IntVar\(&concurrent, "([a-z-]+)", (\d+),`).FindSubmatch(main)
	if m == nil {
		t.Fatalf("kustomize-controller %s main.go binds no worker flag", versions.KustomizeController)
	}
	if "--"+string(m[1]) != ConcurrentFlag || string(m[2]) != strconv.Itoa(KustomizeControllerWorkers) {
		t.Errorf("kustomize-controller %s's worker flag is --%s, default %s; ConcurrentFlag %q, KustomizeControllerWorkers %d", versions.KustomizeController, m[1], m[2], ConcurrentFlag, KustomizeControllerWorkers)
	}
}
