package kbuild

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/resid"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// After envsubst and YAML→JSON, Flux puts the JSON back into the resource
// (kyaml's RNode.UnmarshalJSON: JSON → Go map → YAML text → YAML nodes),
// and the object reaches the API server through YAML again (here
// toUnstructured: nodes → YAML text → Go map → JSON → unstructured). Five
// conversions per resource and per spoke, the largest cost of a spoke's
// build. For strings, booleans, nulls, maps and lists they are the
// identity: one JSON decode gives the same object. Numbers are where the
// round trips act (an integer of 7 digits or more becomes a YAML float on
// the way, 1e21 and above stay floats, large integers lose precision), so
// each distinct number literal is sent once through the real conversions
// and the result kept (numberMemo). What the shortcut does not cover
// (not an object, no kind, identity fields that are not strings, a "<<"
// key, which YAML reads back as a merge) takes the real path.
// TestDecodeAsFlux and FuzzDecodeAsFlux compare the two.

// numberMemo maps a JSON number literal to what Flux's round trips make of
// it.
type numberMemo struct{ m sync.Map }

// decodeAsFlux returns what decodeSlow returns for j, and the id the
// resource then has; ok is false when j is outside what the shortcut
// covers.
func (nm *numberMemo) decodeAsFlux(j []byte) (u *unstructured.Unstructured, id resid.ResId, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, id, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, id, false
	}
	obj, isMap := v.(map[string]any)
	if !isMap {
		return nil, id, false
	}
	if _, ok := nm.convert(obj); !ok {
		return nil, id, false
	}
	// The id kustomize reads from the nodes, and the kind the decoder
	// requires: only plain strings are taken here.
	apiVersion, okA := optString(obj, "apiVersion")
	kind, okK := optString(obj, "kind")
	if !okA || !okK || kind == "" {
		return nil, id, false
	}
	var name, namespace string
	if md, has := obj["metadata"]; has && md != nil {
		meta, isMap := md.(map[string]any)
		if !isMap {
			return nil, id, false
		}
		var okN, okNs bool
		name, okN = optString(meta, "name")
		namespace, okNs = optString(meta, "namespace")
		if !okN || !okNs {
			return nil, id, false
		}
	}
	g, ver := resid.ParseGroupVersion(apiVersion)
	return &unstructured.Unstructured{Object: obj}, resid.NewResIdWithNamespace(resid.NewGvk(g, ver, kind), name, namespace), true
}

// optString returns m[k] when it is a string, "" when it is absent or
// null; ok is false for anything else.
func optString(m map[string]any, k string) (string, bool) {
	switch s := m[k].(type) {
	case nil:
		return "", true
	case string:
		return s, true
	}
	return "", false
}

// convert returns v with every json.Number under it replaced by what
// Flux's conversions make of it; false when one does not convert, or a
// key is "<<" (written back as YAML it is a merge key: the real path
// merges or fails).
func (nm *numberMemo) convert(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		return nm.number(x)
	case map[string]any:
		for k, e := range x {
			if k == "<<" {
				return nil, false
			}
			c, ok := nm.convert(e)
			if !ok {
				return nil, false
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, ok := nm.convert(e)
			if !ok {
				return nil, false
			}
			x[i] = c
		}
	}
	return v, true
}

// number is the number literal n after Flux's conversions, found by
// running them on an object that holds only n.
func (nm *numberMemo) number(n json.Number) (any, bool) {
	if c, ok := nm.m.Load(string(n)); ok {
		return c, true
	}
	u, err := decodeSlow([]byte(`{"kind":"N","v":` + string(n) + `}`))
	if err != nil {
		return nil, false
	}
	c, ok := u.Object["v"]
	if !ok {
		return nil, false
	}
	nm.m.Store(string(n), c)
	return c, true
}

// decodeSlow is the real path: RNode.UnmarshalJSON, then toUnstructured's
// conversion.
func decodeSlow(j []byte) (*unstructured.Unstructured, error) {
	var rn kyaml.RNode
	if err := rn.UnmarshalJSON(j); err != nil {
		return nil, err
	}
	return unstructuredOf(&rn)
}
