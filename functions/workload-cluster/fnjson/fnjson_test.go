package fnjson

import (
	"encoding/json"
	"strings"
	"testing"
)

func run(t *testing.T, req string) map[string]any {
	t.Helper()
	out, err := Run([]byte(req))
	if err != nil {
		t.Fatal(err)
	}
	var rsp map[string]any
	if err := json.Unmarshal(out, &rsp); err != nil {
		t.Fatal(err)
	}
	return rsp
}

func get(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// What Crossplane hands the step passes through: the tag, the context and
// what earlier steps desired; the TTL is set.
func TestPassThrough(t *testing.T) {
	rsp := run(t, `{"meta":{"tag":"t-1"},"context":{"k":"v"},
		"desired":{"resources":{"earlier":{"resource":{"kind":"X"},"ready":"READY_TRUE"}}},
		"observed":{"composite":{"resource":{"metadata":{"name":"xr"},"spec":{}}}}}`)
	if get(rsp, "meta", "tag") != "t-1" || get(rsp, "meta", "ttl") != TTL {
		t.Errorf("meta %v", rsp["meta"])
	}
	if get(rsp, "context", "k") != "v" {
		t.Errorf("context %v", rsp["context"])
	}
	if get(rsp, "desired", "resources", "earlier", "resource", "kind") != "X" {
		t.Errorf("earlier step's desired resource dropped: %v", rsp["desired"])
	}
}

// A bad request is a fatal result naming what is wrong, composing nothing;
// JSON that is no request is an error.
func TestFatal(t *testing.T) {
	for _, tc := range []struct{ name, req, want string }{
		{"no XR", `{}`, "no observed XR"},
		{"no claim label", `{"observed":{"composite":{"resource":{"metadata":{"name":"xr"},"spec":{}}}}}`, "crossplane.io/claim-name"},
		{"no spec", `{"observed":{"composite":{"resource":{"metadata":{"name":"xr","labels":{"crossplane.io/claim-name":"pay"}}}}}}`, "no spec"},
		{"bad spec", `{"observed":{"composite":{"resource":{"metadata":{"name":"xr","labels":{"crossplane.io/claim-name":"pay"}},"spec":{"availabilityZones":"three"}}}}}`, "spec"},
		{"input not validated", `{"input":{"hubName":"mgmt"},"observed":{"composite":{"resource":{"metadata":{"name":"xr","labels":{"crossplane.io/claim-name":"pay"}},"spec":{}}}}}`, "accountId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rsp := run(t, tc.req)
			res, _ := rsp["results"].([]any)
			if len(res) != 1 || get(res[0], "severity") != severityFatal || !strings.Contains(get(res[0], "message").(string), tc.want) {
				t.Fatalf("results %v, want one fatal naming %q", res, tc.want)
			}
			if r, _ := get(rsp, "desired", "resources").(map[string]any); len(r) > 0 {
				t.Errorf("composed %d resources on a fatal result", len(r))
			}
		})
	}
	if _, err := Run([]byte(`[1]`)); err == nil {
		t.Error("JSON that is no request: no error")
	}
}
