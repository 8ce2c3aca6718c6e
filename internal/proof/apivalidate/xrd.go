package apivalidate

import (
	"encoding/json"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"
	xpv1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRDs returns the CustomResourceDefinitions among defs as they are, and
// for each Crossplane CompositeResourceDefinition the composite and (with
// claimNames) the claim CRDs Crossplane derives from it, with Crossplane's
// own code (crossplane-runtime pkg/xcrd, what the XRD controllers call).
func CRDs(defs []*unstructured.Unstructured) ([]*apiextv1.CustomResourceDefinition, error) {
	var out []*apiextv1.CustomResourceDefinition
	for _, d := range defs {
		b, err := json.Marshal(d.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", d.GetKind(), d.GetName(), err)
		}
		switch d.GroupVersionKind().GroupKind() {
		case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
			crd := &apiextv1.CustomResourceDefinition{}
			if err := json.Unmarshal(b, crd); err != nil {
				return nil, fmt.Errorf("decode CustomResourceDefinition %s: %w", d.GetName(), err)
			}
			out = append(out, crd)
		case schema.GroupKind{Group: "apiextensions.crossplane.io", Kind: "CompositeResourceDefinition"}:
			xrd := &xpv1.CompositeResourceDefinition{}
			if err := json.Unmarshal(b, xrd); err != nil {
				return nil, fmt.Errorf("decode CompositeResourceDefinition %s: %w", d.GetName(), err)
			}
			crd, err := xcrd.ForCompositeResource(xrd)
			if err != nil {
				return nil, fmt.Errorf("derive the composite CRD of XRD %s: %w", xrd.GetName(), err)
			}
			out = append(out, crd)
			if xrd.Spec.ClaimNames != nil {
				claim, err := xcrd.ForCompositeResourceClaim(xrd)
				if err != nil {
					return nil, fmt.Errorf("derive the claim CRD of XRD %s: %w", xrd.GetName(), err)
				}
				out = append(out, claim)
			}
		}
	}
	return out, nil
}

// Default sets the defaults crd's schema for apiVersion declares on obj, as
// the API server's structural defaulting does on admission.
func Default(obj map[string]any, apiVersion string, crd *apiextv1.CustomResourceDefinition) error {
	for _, v := range crd.Spec.Versions {
		if crd.Spec.Group+"/"+v.Name != apiVersion {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return fmt.Errorf("CRD %s version %s: %w", crd.GetName(), v.Name, err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			return fmt.Errorf("CRD %s version %s: %w", crd.GetName(), v.Name, err)
		}
		structuraldefaulting.Default(obj, s)
		return nil
	}
	return fmt.Errorf("CRD %s serves no version %s", crd.GetName(), apiVersion)
}
