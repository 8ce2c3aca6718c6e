package kbuild

import (
	"bytes"
	"context"
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	generator "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"
)

// prepared is one resource of a cached build, with what post-build
// substitution makes of it when that does not depend on the variables.
//
// Flux's SubstituteVariables renders the resource as YAML, runs envsubst
// over that text and, when there are variables (or substitution is
// "Always"), decodes the output back through YAML→JSON. envsubst only acts
// on '$' (at the top level of the text nothing else is special), so for a
// resource whose YAML has no '$' the result is that YAML's round trip
// whatever the variables are. It is computed once per cached build and
// the same object is returned to every Kustomization that builds it (one
// per spoke): substitution, validation and memory then cost once per
// distinct object, not once per spoke. Objects returned by Build are
// therefore shared and must not be modified.
type prepared struct {
	// static: the YAML has no '$' and substituted below is Flux's result.
	static bool
	// plain is the resource as built (no substitution ran, or it is
	// disabled by the kustomize.toolkit.fluxcd.io/substitute label or
	// annotation), or plainErr when it does not convert.
	plain    *unstructured.Unstructured
	plainErr error
	// substituted is a static resource after substitution.
	substituted *unstructured.Unstructured
}

// prepare computes the variable-independent results for every resource of
// a cached build. A resource it cannot prepare takes Flux's path on every
// build, so its errors are the ones Flux gives.
func prepare(m resmap.ResMap) []prepared {
	out := make([]prepared, m.Size())
	for i, res := range m.Resources() {
		p := &out[i]
		p.plain, p.plainErr = toUnstructured(res)
		y, err := res.AsYAML()
		if err != nil || bytes.IndexByte(y, '$') >= 0 || p.plain == nil {
			continue
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			continue
		}
		c := res.DeepCopy()
		if err := c.UnmarshalJSON(j); err != nil || idKey(c.CurId()) != idKey(res.CurId()) {
			continue
		}
		if p.substituted, err = toUnstructured(c); err != nil {
			continue
		}
		p.static = true
	}
	return out
}

// postBuild is the package's postBuild for a cached build: the same checks
// and the same result, each resource that depends on the variables
// substituted by Flux's SubstituteVariables on its own copy, each static
// one served from prep once Flux's code has accepted this Kustomization's
// variables on a resource (loading them and checking their names does not
// depend on the resource).
func (e *cacheEntry) postBuild(ctx context.Context, ks *kustomizev1.Kustomization, u unstructured.Unstructured, vars client.Client) ([]*unstructured.Unstructured, error) {
	if vars == nil {
		vars = NewVarClient()
	}
	resources := e.res.Resources()
	out := make([]*unstructured.Unstructured, len(resources))
	var ids map[string]int
	if ks.Spec.PostBuild != nil {
		ids = make(map[string]int, len(resources))
		for _, res := range resources {
			ids[idKey(res.CurId())]++
		}
	}
	always := ks.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways
	// accepted: Flux's code substituted a resource of this Kustomization
	// without error; active: substitution runs (there are variables, or
	// the strategy is Always), so static resources take their round trip.
	accepted, active := false, false
	for i, res := range resources {
		if res.GetName() == "" || res.GetKind() == "" || res.GetApiVersion() == "" {
			return nil, fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", res.String())
		}
		p := &e.prep[i]
		if ks.Spec.PostBuild == nil {
			if out[i] = p.plain; p.plainErr != nil {
				return nil, p.plainErr
			}
			continue
		}
		if accepted && p.static {
			out[i] = p.plain
			if active {
				out[i] = p.substituted
			}
			continue
		}
		c := res.DeepCopy()
		before := idKey(c.CurId())
		outRes, err := generator.SubstituteVariables(ctx, vars, u, c,
			generator.SubstituteWithStrict(true),
			generator.SubstituteWithAlways(always))
		if err != nil {
			return nil, fmt.Errorf("post build failed for '%s/%s': %w", res.GetGvk(), res.GetName(), err)
		}
		if outRes == nil { // substitution disabled for this resource
			if out[i] = p.plain; p.plainErr != nil {
				return nil, p.plainErr
			}
			continue
		}
		if !accepted {
			if active, err = substitutionRuns(ctx, vars, u, always); err != nil {
				return nil, fmt.Errorf("post build failed for '%s/%s': %w", res.GetGvk(), res.GetName(), err)
			}
			accepted = true
		}
		after := idKey(outRes.CurId())
		ids[before]--
		ids[after]++
		if n := ids[after]; n > 1 {
			return nil, fmt.Errorf("in Replace: id matched %d resources", n)
		}
		if p.static {
			// Flux's code ran for its errors; the result is the shared one.
			out[i] = p.plain
			if active {
				out[i] = p.substituted
			}
			continue
		}
		if out[i], err = toUnstructured(outRes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// substitutionRuns is SubstituteVariables' condition for substituting:
// variables from substituteFrom or postBuild.substitute, or the Always
// strategy.
func substitutionRuns(ctx context.Context, vars client.Client, u unstructured.Unstructured, always bool) (bool, error) {
	if always {
		return true, nil
	}
	loaded, err := generator.LoadVariables(ctx, vars, u)
	if err != nil {
		return false, err
	}
	inline, _, err := unstructured.NestedStringMap(u.Object, "spec", "postBuild", "substitute")
	if err != nil {
		return false, err
	}
	for k := range inline {
		loaded[k] = ""
	}
	return len(loaded) > 0, nil
}

// toUnstructured converts through JSON, so numbers are int64/float64 as in
// any object read from the API server.
func toUnstructured(res *resource.Resource) (*unstructured.Unstructured, error) {
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, convertErr(res, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, convertErr(res, err)
	}
	return u, nil
}

func convertErr(res *resource.Resource, err error) error {
	return fmt.Errorf("convert %s/%s: %w", res.GetKind(), res.GetName(), err)
}
