package apivalidate

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const xrd = `
apiVersion: apiextensions.crossplane.io/v1
kind: CompositeResourceDefinition
metadata:
  name: xthings.example.org
spec:
  group: example.org
  names: {kind: XThing, plural: xthings}
  claimNames: {kind: Thing, plural: things}
  versions:
  - name: v1
    served: true
    referenceable: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.min <= self.max
              message: min must be <= max
            properties:
              min: {type: integer}
              max: {type: integer}
`

func TestValidate(t *testing.T) {
	v, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := v.AddDefinitions([]*unstructured.Unstructured{obj(t, xrd)}, "test"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yaml, want string // want "" = valid
	}{
		{"valid ConfigMap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\ndata: {k: v}", ""},
		{"ConfigMap with a number", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: b}\ndata: {k: 1}", "expected string"},
		{"Deployment unknown field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: b}\nspec: {replicaz: 1}", "replicaz"},
		{"bad name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: A_B, namespace: b}", "metadata.name"},
		{"valid Flux Kustomization", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: a, namespace: flux-system}\nspec: {interval: 1h, prune: true, sourceRef: {kind: GitRepository, name: x}}", ""},
		{"Flux Kustomization missing prune", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: a, namespace: flux-system}\nspec: {interval: 1h, sourceRef: {kind: GitRepository, name: x}}", "spec.prune"},
		{"claim passing its CEL rule", "apiVersion: example.org/v1\nkind: Thing\nmetadata: {name: a, namespace: b}\nspec: {min: 1, max: 2}", ""},
		{"claim failing its CEL rule", "apiVersion: example.org/v1\nkind: Thing\nmetadata: {name: a, namespace: b}\nspec: {min: 3, max: 2}", "min must be <= max"},
		{"unknown kind", "apiVersion: example.org/v1\nkind: Nope\nmetadata: {name: a}", "Nope"},
		{"unserved version", "apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nmetadata: {name: a, namespace: b}", "external-secrets.io/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := v.Validate(context.Background(), obj(t, tc.yaml))
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, errs)
			}
		})
	}
}
