package fnjson

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

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

// exampleInput is the example hub's input to the function (protojson).
func exampleInput(t *testing.T) map[string]any {
	t.Helper()
	in, err := compose.InputFrom(clusterinfo.Example())
	if err != nil {
		t.Fatal(err)
	}
	input := map[string]any{}
	b, _ := json.Marshal(in)
	if err := json.Unmarshal(b, &input); err != nil {
		t.Fatal(err)
	}
	return input
}

// exampleSpec is a claim's spec (JSON) in account ("" the hub's own).
func exampleSpec(account string) map[string]any {
	s := workloadcluster.Spec{Region: "eu-west-1", KubernetesVersion: "1.35", VPCCIDR: "10.30.0.0/16", AvailabilityZones: 3, NATMode: "single",
		Nodes:             workloadcluster.Nodes{InstanceTypes: []string{"m7i.large"}, Min: 2, Desired: 2, Max: 4},
		PublicAccessCIDRs: []string{"203.0.113.0/24"}, AdminPrincipalARNs: []string{"arn:aws:iam::111122223333:role/ops"}, Account: account}
	out := map[string]any{}
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &out)
	return out
}

// A spec the function refuses (here an account the hub does not list) is
// a fatal result on the XR and a SpecAccepted=False condition, naming why,
// on the XR and its claim, composing nothing; once a refused spec is
// accepted the condition turns True; a spec never refused gets none.
func TestSpecRefusedOnTheClaim(t *testing.T) {
	input, spec := exampleInput(t), exampleSpec
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

// A composite is run again after SettledTTL once nothing waits, and after
// PendingTTL while anything does, until the same wait has lasted LongWait:
// whatever Crossplane's circuit breaker drops while a spoke is made or
// changed costs at most PendingTTL, and a spoke that waits for good (one
// the hub cannot reach) is not re-applied every 30 s for as long as it
// does.
func TestTTLFor(t *testing.T) {
	ready := compose.Object{"kind": "VPC", "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	creating := compose.Object{"kind": "VPC", "status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Creating"}}}}
	// a bootstrap step that applied a revision and reconciles again:
	// ready (compose.BootstrapReady), so at rest
	reapplying := compose.Object{"kind": "Kustomization", "status": map[string]any{"lastAppliedRevision": "main@sha1:0123",
		"conditions": []any{map[string]any{"type": "Ready", "status": "Unknown", "reason": "Progressing"}}}}
	objects := map[string]compose.Object{"vpc": {"kind": "VPC"}, "step": {"kind": "Kustomization"}}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// xr is the observed composite whose Settled condition turned to
	// status, reason and message ago.
	xr := func(status, reason, message string, ago time.Duration) map[string]any {
		return map[string]any{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "Creating", "lastTransitionTime": now.Add(-time.Hour).Format(time.RFC3339)},
			map[string]any{"type": SettledCondition, "status": status, "reason": reason, "message": message, "lastTransitionTime": now.Add(-ago).Format(time.RFC3339)},
		}}}
	}
	const notReady = "composed resources not Ready"
	cases := map[string]struct {
		reason   string
		out      compose.Composed
		observed map[string]compose.Object
		xr       map[string]any
		want     string
		wait     string
	}{
		"Settled": {reason: "Everything composed is Ready and every condition True.",
			out:      compose.Composed{Objects: objects, Notices: []compose.Notice{{Type: compose.NodeGroupCondition, Status: true}}},
			observed: map[string]compose.Object{"vpc": ready, "step": reapplying}, want: SettledTTL},
		"Withheld": {reason: "A part waits for what AWS has not reported yet.",
			out:      compose.Composed{Objects: objects, Pending: []string{"node group default waits for cluster pay-eks to be active"}},
			observed: map[string]compose.Object{"vpc": ready, "step": reapplying}, want: PendingTTL,
			wait: "withheld: node group default waits for cluster pay-eks to be active"},
		"NotReady": {reason: "A composed resource AWS is still creating.",
			out: compose.Composed{Objects: objects}, observed: map[string]compose.Object{"vpc": creating, "step": reapplying}, want: PendingTTL, wait: notReady},
		"NotObserved": {reason: "A composed resource Crossplane has not created yet.",
			out: compose.Composed{Objects: objects}, observed: map[string]compose.Object{"vpc": ready}, want: PendingTTL, wait: notReady},
		"Upgrading": {reason: "Between an upgrade's stages everything stays Ready.",
			out:      compose.Composed{Objects: objects, Progressing: []string{"Kubernetes upgrade to 1.36: control plane at 1.35"}},
			observed: map[string]compose.Object{"vpc": ready, "step": reapplying}, want: PendingTTL,
			wait: "under way: Kubernetes upgrade to 1.36: control plane at 1.35"},
		"ConditionFalse": {reason: "A condition the claim shows False (a node group being replaced).",
			out:      compose.Composed{Objects: objects, Notices: []compose.Notice{{Type: compose.NodeGroupCondition, Reason: "Replacing"}}},
			observed: map[string]compose.Object{"vpc": ready, "step": reapplying}, want: PendingTTL,
			wait: "conditions False: NodeGroupAsSpecified"},
		"AllAtOnce": {reason: "Every kind of wait is named, each once, in a fixed order.",
			out: compose.Composed{Objects: objects, Pending: []string{"b waits", "a waits"}, Progressing: []string{"upgrade"},
				Notices: []compose.Notice{{Type: compose.NodeGroupCondition}, {Type: compose.DeployKeyCondition}, {Type: compose.ResourcesSyncedCondition, Status: true}}},
			observed: map[string]compose.Object{}, want: PendingTTL,
			wait: "withheld: a waits; b waits. under way: upgrade. composed resources not Ready. conditions False: DeployKeyReady, NodeGroupAsSpecified"},
		"WaitJustBegun": {reason: "The same wait, for less than LongWait: the breaker may still be open.",
			out: compose.Composed{Objects: objects}, observed: map[string]compose.Object{"vpc": creating, "step": reapplying},
			xr: xr("False", ReasonWaiting, notReady, LongWait-time.Second), want: PendingTTL, wait: notReady},
		"LongWait": {reason: "The same wait for LongWait (a spoke the hub cannot reach): its events wake it, the breaker has closed.",
			out: compose.Composed{Objects: objects}, observed: map[string]compose.Object{"vpc": creating, "step": reapplying},
			xr: xr("False", ReasonWaiting, notReady, LongWait), want: SettledTTL, wait: notReady},
		"LongWaitThenAnother": {reason: "The composite waited long for something else: this wait has just begun.",
			out: compose.Composed{Objects: objects, Pending: []string{"EKS add-ons wait for the node group"}}, observed: map[string]compose.Object{"vpc": ready, "step": reapplying},
			xr: xr("False", ReasonWaiting, notReady, time.Hour), want: PendingTTL, wait: "withheld: EKS add-ons wait for the node group"},
		"SettledLongAgo": {reason: "Settled for long, waiting now: the wait has just begun.",
			out: compose.Composed{Objects: objects}, observed: map[string]compose.Object{"vpc": creating, "step": reapplying},
			xr: xr("True", ReasonSettled, "", time.Hour), want: PendingTTL, wait: notReady},
		"UnreadableTime": {reason: "A transition time that is no RFC 3339 time is no long wait.",
			out: compose.Composed{Objects: objects}, observed: map[string]compose.Object{"vpc": creating, "step": reapplying},
			xr:   map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": SettledCondition, "status": "False", "reason": ReasonWaiting, "message": notReady, "lastTransitionTime": "yesterday"}}}},
			want: PendingTTL, wait: notReady},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Waiting(tc.out, tc.observed); got != tc.wait {
				t.Errorf("%s\nWaiting %q, want %q", tc.reason, got, tc.wait)
			}
			if got := TTLFor(tc.out, tc.observed, tc.xr, now); got != tc.want {
				t.Errorf("%s\nTTL %s, want %s", tc.reason, got, tc.want)
			}
		})
	}
}

// The composite carries a Settled condition saying what it waits for, and
// the response's TTL follows how long the observed composite has shown the
// same one: a first run waits (nothing is composed yet) and is run again
// after PendingTTL; the same wait shown for LongWait is run again after
// SettledTTL; another wait shown for as long starts again at PendingTTL.
func TestSettledConditionSetsTheTTL(t *testing.T) {
	const wait = "withheld: IRSA roles (crossplane, lbc) and the OIDC provider wait for the cluster's OIDC issuer; " +
		"cluster, node group and access entries wait for log group /aws/eks/mgmt-pay/cluster; " +
		"spoke bootstrap waits for AWS to report the VPC ID, the cluster ARN and the OIDC issuer (and, for a spoke in another account, the API endpoint and CA). " +
		"composed resources not Ready"
	settled := func(message string, ago time.Duration) []any {
		return []any{map[string]any{"type": SettledCondition, "status": "False", "reason": ReasonWaiting, "message": message,
			"lastTransitionTime": time.Now().Add(-ago).UTC().Format(time.RFC3339)}}
	}
	cases := map[string]struct {
		reason     string
		conditions []any // the observed XR's
		ttl        string
	}{
		"FirstRun":      {reason: "Nothing observed yet: the wait begins.", ttl: PendingTTL},
		"WaitedShortly": {reason: "The same wait for a minute.", conditions: settled(wait, time.Minute), ttl: PendingTTL},
		"WaitedLong":    {reason: "The same wait for LongWait and a minute.", conditions: settled(wait, LongWait+time.Minute), ttl: SettledTTL},
		"OtherWaitLong": {reason: "Another wait shown for as long: this one begins.", conditions: settled("composed resources not Ready", LongWait+time.Minute), ttl: PendingTTL},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := map[string]any{"metadata": map[string]any{"name": "pay-x", "labels": map[string]any{ClaimNameLabel: "pay"}}, "spec": exampleSpec("")}
			if tc.conditions != nil {
				xr["status"] = map[string]any{"conditions": tc.conditions}
			}
			req, _ := json.Marshal(map[string]any{"input": exampleInput(t), "observed": map[string]any{"composite": map[string]any{"resource": xr}}})
			rsp := run(t, string(req))
			var got []any
			conds, _ := rsp["conditions"].([]any)
			for _, c := range conds {
				if get(c, "type") == SettledCondition {
					got = append(got, c)
				}
			}
			want := []any{map[string]any{"type": SettledCondition, "status": statusFalse, "reason": ReasonWaiting, "message": wait, "target": targetComposite}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s\nSettled conditions (-want +got):\n%s", tc.reason, d)
			}
			if ttl := get(rsp, "meta", "ttl"); ttl != tc.ttl {
				t.Errorf("%s\nTTL %v, want %s", tc.reason, ttl, tc.ttl)
			}
		})
	}
}
