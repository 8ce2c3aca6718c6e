package kbuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/envsubst"
	generator "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"
)

// prepared is one resource of a cached build, with what post-build
// substitution needs from it computed once for every Kustomization that
// builds it (one per spoke).
//
// Flux's SubstituteVariables (fluxcd/pkg/kustomize) renders the resource
// as YAML, runs envsubst over that text and, when there are variables (or
// the strategy is Always), decodes the output back through YAML→JSON. The
// YAML text is the same for every Kustomization, so it is rendered once.
// envsubst only acts on '$' (at the top level of the text nothing else is
// special), so for a resource whose YAML has no '$' the result is that
// YAML's round trip whatever the variables are: it is computed once and
// the same object is returned to every Kustomization. Substitution,
// validation and memory then cost once per distinct object, not once per
// spoke. Objects returned by Build are therefore shared and must not be
// modified.
type prepared struct {
	yaml    []byte // res.AsYAML()
	yamlErr error
	// disabled by the kustomize.toolkit.fluxcd.io/substitute label or
	// annotation.
	disabled bool
	// plain is the resource as built (no substitution ran, or it is
	// disabled), or plainErr when it does not convert.
	plain    *unstructured.Unstructured
	plainErr error
	// static: the YAML has no '$'; substituted is the result of
	// substitution.
	static      bool
	substituted *unstructured.Unstructured
}

// prepare computes the variable-independent part for every resource of a
// cached build. A static resource that does not prepare is substituted on
// every build like any other, so its errors are the ones Flux gives.
func prepare(m resmap.ResMap) []prepared {
	out := make([]prepared, m.Size())
	for i, res := range m.Resources() {
		p := &out[i]
		p.plain, p.plainErr = toUnstructured(res)
		p.disabled = res.GetLabels()[substituteKey] == generator.DisabledValue || res.GetAnnotations()[substituteKey] == generator.DisabledValue
		if p.yaml, p.yamlErr = res.AsYAML(); p.yamlErr != nil || bytes.IndexByte(p.yaml, '$') >= 0 {
			continue
		}
		c, err := substituted(res, p.yaml, nil)
		if err != nil || idKey(c.CurId()) != idKey(res.CurId()) {
			continue
		}
		if p.substituted, err = toUnstructured(c); err == nil {
			p.static = true
		}
	}
	return out
}

// substituteKey is the label or annotation that disables substitution.
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// varsubRegex is what Flux requires of variable names.
const varsubRegex = "^[_[:alpha:]][_[:alpha:][:digit:]]*$"

var varName = regexp.MustCompile(varsubRegex)

// postBuild is the package's postBuild for a cached build: the same checks
// and the same result as kustomize-controller's loop over
// SubstituteVariables (TestCacheSameAsUncached*, TestBuildCacheTwoSpokes
// compare them), with the YAML of each resource rendered once per cached
// build, the variables loaded once per Kustomization, and static resources
// served from prep.
func (e *cacheEntry) postBuild(ctx context.Context, ks *kustomizev1.Kustomization, u unstructured.Unstructured, kube client.Client, numbers *numberMemo) ([]*unstructured.Unstructured, error) {
	if kube == nil {
		kube = NewVarClient()
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
	var (
		vars   map[string]string
		active bool // substitution runs: variables, or the Always strategy
		loaded bool
	)
	for i, res := range resources {
		if res.GetName() == "" || res.GetKind() == "" || res.GetApiVersion() == "" {
			return nil, fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", res.String())
		}
		p := &e.prep[i]
		failed := func(err error) error {
			return fmt.Errorf("post build failed for '%s/%s': %w", res.GetGvk(), res.GetName(), err)
		}
		if ks.Spec.PostBuild != nil {
			if p.yamlErr != nil {
				return nil, failed(p.yamlErr)
			}
			if !p.disabled && !loaded {
				// What SubstituteVariables does before substituting; it
				// depends only on the Kustomization, so once.
				var err error
				if vars, active, err = loadVars(ctx, kube, u, always); err != nil {
					return nil, failed(err)
				}
				loaded = true
			}
		}
		switch {
		case ks.Spec.PostBuild == nil || p.disabled || !active:
			if out[i] = p.plain; p.plainErr != nil {
				return nil, p.plainErr
			}
		case p.static:
			out[i] = p.substituted
		default:
			before := idKey(res.CurId())
			j, err := substitutedJSON(p.yaml, vars)
			if err != nil {
				return nil, failed(err)
			}
			// The object and id Flux's conversions give, without them
			// (see decode.go), or through them.
			u, id, ok := numbers.decodeAsFlux(j)
			var c *resource.Resource
			if !ok {
				if c, err = unmarshalInto(res, j); err != nil {
					return nil, failed(err)
				}
				id = c.CurId()
			}
			after := idKey(id)
			ids[before]--
			ids[after]++
			if n := ids[after]; n > 1 {
				return nil, fmt.Errorf("in Replace: id matched %d resources", n)
			}
			if !ok {
				if u, err = toUnstructured(c); err != nil {
					return nil, err
				}
			}
			out[i] = u
		}
	}
	return out, nil
}

// loadVars is SubstituteVariables' variables: substituteFrom
// (generator.LoadVariables), then postBuild.substitute over them, newlines
// removed; and whether substitution runs. When it runs, every name must
// be one Flux accepts (varSubstitution checks them first).
func loadVars(ctx context.Context, kube client.Client, u unstructured.Unstructured, always bool) (map[string]string, bool, error) {
	vars, err := generator.LoadVariables(ctx, kube, u)
	if err != nil {
		return nil, false, err
	}
	inline, ok, err := unstructured.NestedStringMap(u.Object, "spec", "postBuild", "substitute")
	if err != nil {
		return nil, false, err
	}
	if ok {
		for k, v := range inline {
			vars[k] = strings.ReplaceAll(v, "\n", "")
		}
	}
	if len(vars) == 0 && !always {
		return vars, false, nil
	}
	for v := range vars {
		if !varName.MatchString(v) {
			return nil, false, fmt.Errorf("envsubst error: '%s' var name is invalid, must match '%s'", v, varsubRegex)
		}
	}
	return vars, true, nil
}

// substituted is a copy of res with the variables substituted (strict) in
// its YAML y, decoded as SubstituteVariables decodes it.
func substituted(res *resource.Resource, y []byte, vars map[string]string) (*resource.Resource, error) {
	j, err := substitutedJSON(y, vars)
	if err != nil {
		return nil, err
	}
	return unmarshalInto(res, j)
}

// substitutedJSON is SubstituteVariables' text steps on the YAML y:
// envsubst (strict), then YAML→JSON.
func substitutedJSON(y []byte, vars map[string]string) ([]byte, error) {
	output, err := envsubst.Eval(string(y), func(s string) (string, bool) {
		v, ok := vars[s]
		return v, ok
	})
	if err != nil {
		return nil, fmt.Errorf("envsubst error: variable substitution failed: %w", err)
	}
	j, err := yaml.YAMLToJSON([]byte(output))
	if err != nil {
		return nil, fmt.Errorf("envsubst error: YAMLToJSON: %w", err)
	}
	return j, nil
}

// unmarshalInto is SubstituteVariables' last step: a copy of res holding
// the JSON j.
func unmarshalInto(res *resource.Resource, j []byte) (*resource.Resource, error) {
	c := res.DeepCopy()
	if err := c.UnmarshalJSON(j); err != nil {
		return nil, fmt.Errorf("UnmarshalJSON: %w", err)
	}
	return c, nil
}

// toUnstructured converts through JSON, so numbers are int64/float64 as in
// any object read from the API server.
func toUnstructured(res *resource.Resource) (*unstructured.Unstructured, error) {
	u, err := unstructuredOf(res)
	if err != nil {
		return nil, convertErr(res, err)
	}
	return u, nil
}

// unstructuredOf decodes m's JSON as the API server would.
func unstructuredOf(m json.Marshaler) (*unstructured.Unstructured, error) {
	b, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return u, nil
}

func convertErr(res *resource.Resource, err error) error {
	return fmt.Errorf("convert %s/%s: %w", res.GetKind(), res.GetName(), err)
}
