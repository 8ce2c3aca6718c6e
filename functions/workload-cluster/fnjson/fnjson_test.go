package fnjson

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
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
// what earlier steps desired; the TTL is set (pending: nothing composed).
func TestPassThrough(t *testing.T) {
	rsp := run(t, `{"meta":{"tag":"t-1"},"context":{"k":"v"},
		"desired":{"resources":{"earlier":{"resource":{"kind":"X"},"ready":"READY_TRUE"}}},
		"observed":{"composite":{"resource":{"metadata":{"name":"xr"},"spec":{}}}}}`)
	if get(rsp, "meta", "tag") != "t-1" || get(rsp, "meta", "ttl") != PendingTTL {
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

// A spec the function refuses (here an account the hub does not list) is
// a fatal result on the XR and a SpecAccepted=False condition, naming why,
// on the XR and its claim, composing nothing; once a refused spec is
// accepted the condition turns True; a spec never refused gets none.
func TestSpecRefusedOnTheClaim(t *testing.T) {
	in, err := compose.InputFrom(clusterinfo.Example())
	if err != nil {
		t.Fatal(err)
	}
	input := map[string]any{}
	b, _ := json.Marshal(in)
	if err := json.Unmarshal(b, &input); err != nil {
		t.Fatal(err)
	}
	spec := func(account string) map[string]any {
		s := workloadcluster.Spec{Region: "eu-west-1", KubernetesVersion: "1.35", VPCCIDR: "10.30.0.0/16", AvailabilityZones: 3, NATMode: "single",
			Nodes:             workloadcluster.Nodes{InstanceTypes: []string{"m7i.large"}, Min: 2, Desired: 2, Max: 4},
			PublicAccessCIDRs: []string{"203.0.113.0/24"}, AdminPrincipalARNs: []string{"arn:aws:iam::111122223333:role/ops"}, Account: account}
		out := map[string]any{}
		b, _ := json.Marshal(s)
		_ = json.Unmarshal(b, &out)
		return out
	}
	refused := map[string]any{"type": compose.SpecAcceptedCondition, "status": statusFalse, "reason": "Refused"}
	cases := map[string]struct {
		reason     string
		account    string
		conditions []any // the observed XR's
		fatal      bool
		want       []any // the response's SpecAccepted conditions (message checked apart)
	}{
		"Refused": {reason: "An account the hub does not list.", account: "555566667777", fatal: true,
			want: []any{map[string]any{"type": compose.SpecAcceptedCondition, "status": statusFalse, "reason": "Refused", "target": targetCompositeClam}}},
		"AcceptedAgain": {reason: "The claim was fixed: the condition it showed turns True.", conditions: []any{refused},
			want: []any{map[string]any{"type": compose.SpecAcceptedCondition, "status": statusTrue, "reason": "Accepted", "target": targetCompositeClam}}},
		"NeverRefused": {reason: "A spec never refused carries no such condition."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := map[string]any{"metadata": map[string]any{"name": "pay-x", "labels": map[string]any{ClaimNameLabel: "pay"}}, "spec": spec(tc.account)}
			if tc.conditions != nil {
				xr["status"] = map[string]any{"conditions": tc.conditions}
			}
			req, _ := json.Marshal(map[string]any{"input": input, "observed": map[string]any{"composite": map[string]any{"resource": xr}}})
			rsp := run(t, string(req))
			res, _ := rsp["results"].([]any)
			fatal := slices.ContainsFunc(res, func(r any) bool { return get(r, "severity") == severityFatal })
			if fatal != tc.fatal {
				t.Fatalf("%s\nfatal %v, want %v: %v", tc.reason, fatal, tc.fatal, res)
			}
			var got []any
			conds, _ := rsp["conditions"].([]any)
			for _, c := range conds {
				if m := c.(map[string]any); m["type"] == compose.SpecAcceptedCondition {
					msg, _ := m["message"].(string)
					if tc.fatal && !strings.Contains(msg, `spec.account "555566667777" is not one of the hub's spoke accounts`) {
						t.Errorf("%s\nmessage %q does not name the account", tc.reason, msg)
					}
					delete(m, "message")
					got = append(got, m)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s\nSpecAccepted conditions (-want +got):\n%s", tc.reason, d)
			}
			composed, _ := get(rsp, "desired", "resources").(map[string]any)
			if tc.fatal == (len(composed) > 0) {
				t.Errorf("%s\n%d resources composed", tc.reason, len(composed))
			}
		})
	}
}

// A composite is run again after SettledTTL only once nothing waits, and
// after PendingTTL while anything does: whatever Crossplane's circuit
// breaker drops while a spoke is made or changed costs at most that.
func TestTTLFor(t *testing.T) {
	ready := compose.Object{"kind": "VPC", "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	creating := compose.Object{"kind": "VPC", "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Creating"}}}}
	// a bootstrap step that applied a revision and reconciles again:
	// ready (compose.BootstrapReady), so at rest
	reapplying := compose.Object{"kind": "Kustomization", "status": map[string]any{"lastAppliedRevision": "main@sha1:0123",
		"conditions": []any{map[string]any{"type": "Ready", "status": "Unknown", "reason": "Progressing"}}}}
	objects := map[string]compose.Object{"vpc": {"kind": "VPC"}, "step": {"kind": "Kustomization"}}
	cases := map[string]struct {
		reason   string
		out      compose.Composed
		observed map[string]compose.Object
		want     string
	}{
		"Settled": {reason: "Everything composed is Ready and every condition True.",
			out:      compose.Composed{Objects: objects, Notices: []compose.Notice{{Type: compose.NodeGroupCondition, Status: true}}},
			observed: map[string]compose.Object{"vpc": ready, "step": reapplying}, want: SettledTTL},
		"Withheld": {reason: "A part waits for what AWS has not reported yet.",
			out:      compose.Composed{Objects: objects, Pending: []string{"node group default waits for cluster pay-eks to be active"}},
			observed: map[string]compose.Object{"vpc": ready, "step": reapplying}, want: PendingTTL},
		"NotReady": {reason: "A composed resource AWS is still creating.",
			out: compose.Composed{Objects: objects}, observed: map[string]compose.Object{"vpc": creating, "step": reapplying}, want: PendingTTL},
		"NotObserved": {reason: "A composed resource Crossplane has not created yet.",
			out: compose.Composed{Objects: objects}, observed: map[string]compose.Object{"vpc": ready}, want: PendingTTL},
		"Upgrading": {reason: "Between an upgrade's stages everything stays Ready.",
			out:      compose.Composed{Objects: objects, Progressing: []string{"Kubernetes upgrade to 1.36: control plane at 1.35"}},
			observed: map[string]compose.Object{"vpc": ready, "step": reapplying}, want: PendingTTL},
		"ConditionFalse": {reason: "A condition the claim shows False (a node group being replaced).",
			out:      compose.Composed{Objects: objects, Notices: []compose.Notice{{Type: compose.NodeGroupCondition, Reason: "Replacing"}}},
			observed: map[string]compose.Object{"vpc": ready, "step": reapplying}, want: PendingTTL},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := TTLFor(tc.out, tc.observed); got != tc.want {
				t.Errorf("%s\nTTL %s, want %s", tc.reason, got, tc.want)
			}
		})
	}
}
