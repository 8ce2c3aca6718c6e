package test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/proof/apivalidate"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// treeCRDErrors derives, from every XRD of the tree, the CRDs Crossplane
// creates and validates each as the API server does on create
// (apiextensions-apiserver's ValidateCustomResourceDefinition: structural
// schema, CEL compilation and the CEL cost budget). Crossplane fills the
// names, stored versions and owner the derivation leaves open.
func treeCRDErrors(t *testing.T, tree string) []string {
	t.Helper()
	var defs []*unstructured.Unstructured
	for _, d := range factReadDocs(t, tree, "gitops-system/platform-apis") {
		if factIsKind(d, "apiextensions.crossplane.io", "CompositeResourceDefinition") {
			defs = append(defs, &unstructured.Unstructured{Object: d.obj})
		}
	}
	if len(defs) == 0 {
		t.Fatal("no XRD under gitops-system/platform-apis")
	}
	crds, err := apivalidate.CRDs(defs)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, c := range crds {
		c = c.DeepCopy()
		c.OwnerReferences = nil
		if c.Spec.Names.Singular == "" {
			c.Spec.Names.Singular = strings.ToLower(c.Spec.Names.Kind)
		}
		if c.Spec.Names.ListKind == "" {
			c.Spec.Names.ListKind = c.Spec.Names.Kind + "List"
		}
		for _, v := range c.Spec.Versions {
			if v.Storage {
				c.Status.StoredVersions = []string{v.Name}
			}
		}
		var in apiextensions.CustomResourceDefinition
		if err := apiextv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(c, &in, nil); err != nil {
			t.Fatal(err)
		}
		for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), &in) {
			problems = append(problems, c.Name+": "+e.Error())
		}
	}
	return problems
}

// TestTreeCRDsPassTheAPIServer: the API server accepts the CRDs of every
// XRD in the tree; planted, a CEL message expression past the cost budget
// (what a claim's tags' refused keys would have cost to name) is refused.
func TestTreeCRDsPassTheAPIServer(t *testing.T) {
	for _, p := range treeCRDErrors(t, "../manifests") {
		t.Error(p)
	}
	const definition = "gitops-system/platform-apis/workload-cluster/definition.yaml"
	planted := plant.Repo(t, plant.Edit{File: definition,
		Old: "                      message: \"keys must be",
		New: "                      messageExpression: \"'tag keys ' + self.filter(k, k.lowerAscii().startsWith('eks:')).join(', ')\"\n                      message: \"keys must be"})
	found := false
	for _, p := range treeCRDErrors(t, planted) {
		found = found || strings.Contains(p, "messageExpression") && strings.Contains(p, "cost")
	}
	if !found {
		t.Error("a message expression past the CEL cost budget was not refused")
	}
}
