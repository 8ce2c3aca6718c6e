package site

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// FluxInstallation is what the Flux Operator installs for a FluxInstance,
// built the way the operator's builder does, for the parts the fleet uses
// (flux-operator v0.59.0 internal/builder/templates.go kustomizationTmpl):
// the manifests the operator embeds for the distribution version
// (config/data/flux/v<version>: CRDs, RBAC, the controllers'
// Deployments) of the instance's components, in its namespace, with the
// instance's kustomize patches. It is a stand-in because the Flux Operator
// itself cannot be built here (v0.59.0 needs a go-containerregistry
// pseudo-version the module proxy refuses). Not modelled: image registry
// rewrites (the PodRunner knows both image names), sharding, cluster size
// profiles, network policy (no CNI enforces one), the operator's status
// and its finalizers.
func FluxInstallation(ctx context.Context, instance *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	dir, err := upstream.Dir(ctx, upstream.FluxOperatorModule, "v"+versions.FluxOperator)
	if err != nil {
		return nil, err
	}
	version, _, _ := unstructured.NestedString(instance.Object, "spec", "distribution", "version")
	data := filepath.Join(dir, "config", "data", "flux", "v"+version)
	if _, err := os.Stat(data); err != nil {
		return nil, fmt.Errorf("flux-operator %s embeds no Flux %q: %w", versions.FluxOperator, version, err)
	}
	components, _, _ := unstructured.NestedStringSlice(instance.Object, "spec", "components")
	patches, _, _ := unstructured.NestedSlice(instance.Object, "spec", "kustomize", "patches")
	fs := filesys.MakeFsInMemory()
	resources := []any{"rbac.yaml"}
	for _, f := range append([]string{"rbac"}, components...) {
		b, err := os.ReadFile(filepath.Join(data, f+".yaml"))
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", f, err)
		}
		if err := fs.WriteFile("/build/"+f+".yaml", b); err != nil {
			return nil, err
		}
		if f != "rbac" {
			resources = append(resources, f+".yaml")
		}
	}
	k := map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"namespace":  instance.GetNamespace(),
		"resources":  resources,
		"patches":    patches,
	}
	kb, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("/build/kustomization.yaml", kb); err != nil {
		return nil, err
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/build")
	if err != nil {
		return nil, fmt.Errorf("build Flux %s for FluxInstance %s: %w", version, instance.GetName(), err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		return nil, err
	}
	return kube.DecodeYAML(out)
}
