package kbuild

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/yaml"
)

// sameAsFlux checks decodeAsFlux against the real conversions for the
// JSON j: when the shortcut answers, the object and the id are the ones
// the resource path gives (and that path must succeed).
func sameAsFlux(t *testing.T, nm *numberMemo, j []byte) (taken bool) {
	t.Helper()
	got, id, ok := nm.decodeAsFlux(j)
	if !ok {
		return false
	}
	want, err := decodeSlow(j)
	if err != nil {
		t.Fatalf("shortcut accepted %s, the real conversions fail: %v", j, err)
	}
	if !reflect.DeepEqual(got.Object, want.Object) {
		t.Fatalf("for %s\nshortcut: %#v\nreal:     %#v", j, got.Object, want.Object)
	}
	// The id, as postBuild's collision check reads it from the resource.
	res, err := provider.NewDefaultDepProvider().GetResourceFactory().FromBytes([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"seed"}}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := unmarshalInto(res, j)
	if err != nil {
		t.Fatalf("unmarshal %s: %v", j, err)
	}
	if idKey(c.CurId()) != idKey(id) {
		t.Fatalf("for %s: shortcut id %v, resource id %v", j, id, c.CurId())
	}
	u, err := toUnstructured(c)
	if err != nil || !reflect.DeepEqual(u.Object, want.Object) {
		t.Fatalf("decodeSlow is not toUnstructured of the resource for %s: %v", j, err)
	}
	return true
}

// TestDecodeAsFlux: for YAML as post-build substitution leaves it, the
// shortcut gives what Flux's round trips give, numbers included (ints of
// 7+ digits pass through YAML floats, 1e21 stays a float, big integers lose
// precision), and it is taken for ordinary objects; what it does not
// cover goes the real way.
func TestDecodeAsFlux(t *testing.T) {
	const head = "apiVersion: example.com/v1alpha1\nkind: Thing\nmetadata:\n  name: spoke-a\n  namespace: team\n"
	taken := []string{
		head + "spec: {replicas: 3, port: 443, big: 1234567, million: 1000000, huge: 12345678901234567890, edge: 9007199254740993, neg: -5, zero: 0, negzero: -0}",
		head + "spec: {f: 1.5, tenth: 0.1, tiny: 1e-7, e21: 1e21, e20: 1e20, three: 3.0, exp: 1e6, octal: 0777, hex: 0x1F, under: 1_000}",
		head + "spec: {s: [\"yes\", \"no\", \"on\", \"null\", \"~\", \"\", \" lead\", \"trail \", \"0777\", \"1e3\", \"0x1f\", \"true\", \"=\", \"<<\", \"&a\", \"*a\", \"!t\", \"%p\", \"@x\", \"`x\", \"- d\", \"a: b\", \"#h\"]}",
		head + "data:\n  script: |\n    #!/bin/sh\n    echo \"${X:-y}\"\n\n  keep: |+\n    a\n\n  tabs: \"\\ta\\tb\"\n  crlf: \"a\\r\\nb\"\n  nel: \"a\\u0085b\\u2028c\"\n  nul: \"a\\u0000b\"\n  uni: \"ünïcødé ✓\"\n  bom: \"\\ufeffx\"\n",
		head + "data:\n  long: \"" + strings.Repeat("word  two   spaces ", 12) + "\"\n  longnl: \"" + strings.Repeat("line with trailing space \n", 5) + "\"\n",
		head + "spec:\n  \"\": empty-key\n  \"yes\": 1\n  \"1\": one\n  \"null\": n\n  empty: {}\n  none: []\n  nil: null\n  nested: [[1, [2.5, {a: [true, false, null]}]], {}]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: null, namespace: null}\n",
		"apiVersion: v1\nkind: ConfigMap\n",
	}
	nm := &numberMemo{}
	for _, y := range taken {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatalf("%q: %v", y, err)
		}
		if !sameAsFlux(t, nm, j) {
			t.Errorf("shortcut not taken for %s", j)
		}
	}
	// Outside the shortcut: the real path decides (and gives Flux's
	// errors).
	for _, j := range []string{
		`[{"kind":"List"}]`,
		`null`,
		`{"apiVersion":"v1","metadata":{"name":"no-kind"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":123}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n","namespace":true}}`,
		`{"apiVersion":1,"kind":"ConfigMap","metadata":{"name":"n"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":"flat"}`,
		`{"apiVersion":"v1","kind":"ConfigMap","v":1e400}`,
		`{"apiVersion":"v1","kind":"ConfigMap"} {}`,
		`{"apiVersion":"v1","kind":"ConfigMap","data":{"<<":{"merged":"x"}}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","data":{"<<":"fails"}}`,
	} {
		if _, _, ok := nm.decodeAsFlux([]byte(j)); ok {
			t.Errorf("shortcut taken for %s", j)
		}
	}
}

// FuzzDecodeAsFlux: any string, as a value, a key, a list item and a YAML
// scalar, gives through the shortcut what it gives through Flux's round
// trips.
func FuzzDecodeAsFlux(f *testing.F) {
	for _, s := range []string{"x", "yes", "<<", "1e6", "1234567", "0777", "a\nb\n", " lead", "trail ", "\t", "\r\n", "\u0085", "~", "-", "[1, 2]", "{a: 1}", "9223372036854775808", "-0.0", ".inf", "0o17", "+12", "1_0", "é"} {
		f.Add(s)
	}
	nm := &numberMemo{}
	f.Fuzz(func(t *testing.T, s string) {
		obj := map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "n"},
			"s": s, "list": []any{s, []any{s}}, "m": map[string]any{s: s},
		}
		if j, err := yaml.YAMLToJSON([]byte("v: " + s)); err == nil {
			var v map[string]json.RawMessage
			if json.Unmarshal(j, &v) == nil && v["v"] != nil {
				obj["scalar"] = v["v"]
			}
		}
		sameAsFlux(t, nm, mustJSON(t, obj))
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
