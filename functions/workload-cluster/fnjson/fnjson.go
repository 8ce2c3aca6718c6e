// Package fnjson is the workload-cluster function's whole request→response
// mapping, over the protobuf JSON form (protojson) of RunFunctionRequest and
// RunFunctionResponse (apiextensions.fn.proto.v1).
//
// Package fn serves it over function-sdk-go, both as the deployed binary
// and in-process for fleet and the offline proof; fn only converts the
// proto message to and from JSON, and everything that decides what the
// function answers lives here. fnjson imports no proto package.
package fnjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

// ClaimNameLabel is the label Crossplane puts on an XR created from a claim.
const ClaimNameLabel = "crossplane.io/claim-name"

// SettledTTL and PendingTTL are how long the composite's result stands
// before Crossplane runs the pipeline again with nothing changed: with
// realtime compositions (on by default) Crossplane v2.4.0 requeues every
// composite after its pipeline's shortest non-zero TTL (internal/
// controller/apiextensions/composite/reconciler.go:922-926,
// composition_functions.go:472-477), and each of those reconciles
// server-side-applies every composed object of the spoke (about 115,
// composition_functions.go:676-689).
//
// Every change the function reads wakes the composite through the watches
// realtime compositions start on each composed kind (definition/
// reconciler.go:598-608) and on the composite itself, and the function
// reads nothing else (no extra resources; the hub's facts come in the
// Composition's input, a new CompositionRevision); but only while
// Crossplane's XR circuit breaker is closed. Once a composite's composed
// resources change faster than the breaker's refill (1 event a second
// after a burst of 100), it opens for 5 minutes and drops their events,
// letting one through every 30 seconds only when one comes
// (circuit/mapfunc.go:57-73, token_bucket.go:125). A spoke being made
// produces that burst: its ~50 managed resources each get a finalizer,
// an external name and a status within seconds of their creation. An
// event dropped then (a node group ACTIVE, a control plane at its new
// version) is not repeated: nothing changes after it.
//
// So a composite waiting for anything (a part withheld, a composed
// resource not Ready, an upgrade between its stages, a condition False)
// is run again after PendingTTL, the breaker's own half-open interval, so
// a dropped event costs at most that; a settled composite after
// SettledTTL, ten minutes, the bound on how stale it may be at rest,
// where function-sdk-go's default of one minute (response.DefaultTTL)
// cost each spoke about 115 writes a minute (issue 45,
// docs/performance.md).
//
// A wait that has lasted LongWait unchanged (Waiting says the same) is
// run again after SettledTTL too: the breaker opens on a burst of changes,
// and a burst changes what the composite waits for or comes within
// minutes of such a change, so ten minutes on the breaker has let events
// through again for five and a wait that goes on (a spoke the hub cannot
// reach, an add-on version no region offers) is woken by whatever ends it.
// Without it such a spoke was re-applied every 30 s for as long as it
// waited, three reconciles a minute where its events alone make two
// (issue 45, docs/performance.md).
const (
	SettledTTL = "600s"
	PendingTTL = "30s"
	LongWait   = 10 * time.Minute
)

// SettledCondition is the composite's condition (not the claim's: its
// Ready says as much) that says whether the composite waits for anything:
// True (reason Settled) once nothing does, False (reason Waiting) with
// Waiting's message while anything does. Crossplane keeps a condition's
// lastTransitionTime while its type, status, reason and message stay the
// same (crossplane apis/v2 core/v2/condition.go:114-125, 193-215, as the
// composite reconciler sets a function's conditions: composite
// reconciler.go:968-976), so the observed composite's condition says since
// when the composite has waited for what it waits for now.
const SettledCondition = "Settled"

// Reasons of SettledCondition.
const (
	ReasonSettled = "Settled"
	ReasonWaiting = "Waiting"
)

// Protobuf enum names as protojson writes them.
const (
	readyTrue           = "READY_TRUE"
	readyFalse          = "READY_FALSE"
	severityFatal       = "SEVERITY_FATAL"
	severityWarning     = "SEVERITY_WARNING"
	severityNormal      = "SEVERITY_NORMAL"
	targetComposite     = "TARGET_COMPOSITE"
	targetCompositeClam = "TARGET_COMPOSITE_AND_CLAIM"
	statusTrue          = "STATUS_CONDITION_TRUE"
	statusFalse         = "STATUS_CONDITION_FALSE"
)

// Resource is a resource of a State (protojson: apiextensions.fn.proto.v1.Resource).
type Resource struct {
	Resource          map[string]any    `json:"resource,omitempty"`
	ConnectionDetails map[string]string `json:"connectionDetails,omitempty"` // bytes: base64, passed through
	Ready             string            `json:"ready,omitempty"`             // a Ready enum name, "" unspecified
}

// State is the observed or desired state (protojson: State).
type State struct {
	Composite *Resource            `json:"composite,omitempty"`
	Resources map[string]*Resource `json:"resources,omitempty"`
}

// Request is what of a RunFunctionRequest the function reads (protojson).
type Request struct {
	Meta struct {
		Tag string `json:"tag,omitempty"`
	} `json:"meta"`
	Observed State           `json:"observed"`
	Desired  *State          `json:"desired,omitempty"`
	Input    map[string]any  `json:"input,omitempty"`
	Context  json.RawMessage `json:"context,omitempty"`
}

// Result is a result of the response (protojson: Result); enum fields
// hold the enum value names.
type Result struct {
	Severity string  `json:"severity"`
	Message  string  `json:"message"`
	Reason   *string `json:"reason,omitempty"`
	Target   string  `json:"target"`
}

// Condition is a condition of the response (protojson: Condition).
type Condition struct {
	Type    string  `json:"type"`
	Status  string  `json:"status"`
	Reason  string  `json:"reason"`
	Message *string `json:"message,omitempty"`
	Target  string  `json:"target"`
}

// Response is the RunFunctionResponse the function answers (protojson).
type Response struct {
	Meta struct {
		Tag string `json:"tag,omitempty"`
		TTL string `json:"ttl"`
	} `json:"meta"`
	Desired    *State          `json:"desired,omitempty"`
	Results    []Result        `json:"results,omitempty"`
	Context    json.RawMessage `json:"context,omitempty"`
	Conditions []Condition     `json:"conditions,omitempty"`
}

// Run answers one RunFunctionRequest (protojson) with its
// RunFunctionResponse (protojson). A bad input, XR or spec is answered with
// a fatal result naming the field, and nothing new is composed; an error is
// returned only for JSON that is no RunFunctionRequest.
func Run(request []byte) ([]byte, error) {
	var req Request
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, fmt.Errorf("decode RunFunctionRequest: %w", err)
	}
	b, err := json.Marshal(Answer(&req))
	if err != nil {
		return nil, fmt.Errorf("encode RunFunctionResponse: %w", err)
	}
	return b, nil
}

// Answer is Run on the decoded request: an adapter that can build Request
// from its proto message without the JSON text calls it directly. The
// response shares req's desired state and context.
func Answer(req *Request) *Response {
	rsp := &Response{Desired: req.Desired, Context: req.Context}
	rsp.Meta.Tag, rsp.Meta.TTL = req.Meta.Tag, PendingTTL
	if err := compose1(req, rsp, time.Now()); err != nil {
		rsp.Results = append(rsp.Results, Result{Severity: severityFatal, Message: err.Error(), Target: targetComposite})
		if se := (*compose.SpecError)(nil); errors.As(err, &se) {
			// Crossplane applies the conditions of a fatal response
			// (composite reconciler.go:789-803, handleCommonCompositionResult):
			// the claim's owner sees why, not only the XR's Synced.
			msg := se.Error()
			rsp.Conditions = append(rsp.Conditions, Condition{Type: compose.SpecAcceptedCondition, Status: statusFalse, Reason: "Refused",
				Message: &msg, Target: targetCompositeClam})
		}
	}
	return rsp
}

// compose1 composes the spoke into rsp: every desired composed resource with
// its readiness, the XR status and readiness, the notices as results and
// conditions, and the Settled condition and TTL of a wait as of now.
func compose1(req *Request, rsp *Response, now time.Time) error {
	p, err := Params(req.Input, req.Observed.Composite.resource())
	if err != nil {
		return err
	}
	p.Observed = map[string]compose.Object{}
	for name, o := range req.Observed.Resources {
		if o != nil && o.Resource != nil {
			p.Observed[name] = o.Resource
		}
	}
	out, err := compose.Compose(p)
	if err != nil {
		return fmt.Errorf("compose spoke: %w", err)
	}
	if rsp.Desired == nil {
		rsp.Desired = &State{}
	}
	if rsp.Desired.Resources == nil {
		rsp.Desired.Resources = map[string]*Resource{}
	}
	for _, key := range slices.Sorted(maps.Keys(out.Objects)) {
		r := &Resource{Resource: out.Objects[key], Ready: readyFalse}
		if compose.BootstrapReady(p.Observed[key]) {
			r.Ready = readyTrue
		}
		rsp.Desired.Resources[key] = r
	}
	rsp.Meta.TTL = TTLFor(out, p.Observed, req.Observed.Composite.resource(), now)
	xr := rsp.Desired.Composite
	if xr == nil {
		xr = &Resource{}
	}
	if xr.Resource == nil {
		xr.Resource = map[string]any{}
	}
	if len(out.Status) > 0 {
		xr.Resource["status"] = out.Status
	}
	// Crossplane derives XR readiness from the composed resources only;
	// while parts are withheld (waiting for the log group or the OIDC
	// issuer) the XR is not ready even if everything composed so far is.
	if len(out.Pending) > 0 {
		xr.Ready = readyFalse
		for _, why := range out.Pending {
			rsp.Results = append(rsp.Results, Result{Severity: severityNormal, Message: why, Target: targetComposite})
		}
	}
	rsp.Desired.Composite = xr
	if findCondition(req.Observed.Composite.resource(), compose.SpecAcceptedCondition) != nil {
		// a spec refused before is accepted now
		rsp.Conditions = append(rsp.Conditions, Condition{Type: compose.SpecAcceptedCondition, Status: statusTrue, Reason: "Accepted", Target: targetCompositeClam})
	}
	for _, n := range out.Notices {
		if n.Status {
			rsp.Conditions = append(rsp.Conditions, Condition{Type: n.Type, Status: statusTrue, Reason: n.Reason, Target: targetCompositeClam})
			continue
		}
		msg, reason := n.Message, n.Reason
		if n.Warn {
			rsp.Results = append(rsp.Results, Result{Severity: severityWarning, Message: msg, Reason: &reason, Target: targetCompositeClam})
		}
		rsp.Conditions = append(rsp.Conditions, Condition{Type: n.Type, Status: statusFalse, Reason: reason, Message: &msg, Target: targetCompositeClam})
	}
	settled := Condition{Type: SettledCondition, Status: statusTrue, Reason: ReasonSettled, Target: targetComposite}
	if wait := Waiting(out, p.Observed); wait != "" {
		settled.Status, settled.Reason, settled.Message = statusFalse, ReasonWaiting, &wait
	}
	rsp.Conditions = append(rsp.Conditions, settled)
	return nil
}

// TTLFor is the TTL of a composite for which the function composed out
// from observed, the composite xr as Crossplane observed it, at time now:
// SettledTTL once nothing waits (Waiting says nothing) or the wait has
// lasted LongWait unchanged (xr's SettledCondition False with the same
// message since then), PendingTTL while anything else does.
func TTLFor(out compose.Composed, observed map[string]compose.Object, xr map[string]any, now time.Time) string {
	wait := Waiting(out, observed)
	if wait == "" {
		return SettledTTL
	}
	if since, ok := waitingSince(xr, wait); ok && now.Sub(since) >= LongWait {
		return SettledTTL
	}
	return PendingTTL
}

// Waiting says what the composite composed as out from observed waits for,
// "" when nothing: the parts withheld (each part's own reason), what is
// under way, whether any composed resource is not Ready, and which
// conditions are False. It names stages, not each composed resource, so
// that it changes as the spoke moves from one stage to the next, not with
// every resource that turns Ready: each change of the message is a status
// write of the composite, and so one more reconcile of it (Crossplane
// watches the composite itself with no predicate, definition/
// reconciler.go:658-664).
func Waiting(out compose.Composed, observed map[string]compose.Object) string {
	var wait []string
	if len(out.Pending) > 0 {
		wait = append(wait, "withheld: "+strings.Join(slices.Sorted(slices.Values(out.Pending)), "; "))
	}
	if len(out.Progressing) > 0 {
		wait = append(wait, "under way: "+strings.Join(slices.Sorted(slices.Values(out.Progressing)), "; "))
	}
	for key := range out.Objects {
		if !compose.BootstrapReady(observed[key]) {
			wait = append(wait, "composed resources not Ready")
			break
		}
	}
	var conds []string
	for _, n := range out.Notices {
		if !n.Status {
			conds = append(conds, n.Type)
		}
	}
	if len(conds) > 0 {
		wait = append(wait, "conditions False: "+strings.Join(slices.Sorted(slices.Values(conds)), ", "))
	}
	return strings.Join(wait, ". ")
}

// waitingSince is when xr's SettledCondition turned False with message wait
// (its lastTransitionTime), false when it has no such condition.
func waitingSince(xr map[string]any, wait string) (time.Time, bool) {
	m := findCondition(xr, SettledCondition)
	if m == nil || m["status"] != "False" || m["reason"] != ReasonWaiting || m["message"] != wait {
		return time.Time{}, false
	}
	at, _ := m["lastTransitionTime"].(string)
	t, err := time.Parse(time.RFC3339, at)
	return t, err == nil
}

// findCondition returns the condition of type typ of the object o, or nil.
func findCondition(o map[string]any, typ string) map[string]any {
	status, _ := o["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

func (r *Resource) resource() map[string]any {
	if r == nil {
		return nil
	}
	return r.Resource
}

// Params reads what compose needs from the step input and the observed XR:
// the hub facts from the input, the spoke from the claim label, the spec
// from the XR.
func Params(input, xr map[string]any) (compose.Params, error) {
	var in compose.Input
	if input != nil {
		b, err := json.Marshal(input)
		if err != nil {
			return compose.Params{}, fmt.Errorf("read function input: %w", err)
		}
		if err := json.Unmarshal(b, &in); err != nil {
			return compose.Params{}, fmt.Errorf("read function input: %w", err)
		}
	}
	if xr == nil {
		return compose.Params{}, fmt.Errorf("the request has no observed XR")
	}
	md, _ := xr["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	labels, _ := md["labels"].(map[string]any)
	spoke, _ := labels[ClaimNameLabel].(string)
	if spoke == "" {
		return compose.Params{}, fmt.Errorf("XR %s has no %s label: create it from a WorkloadCluster claim", name, ClaimNameLabel)
	}
	raw, ok := xr["spec"]
	if !ok {
		return compose.Params{}, fmt.Errorf("XR %s has no spec", name)
	}
	var spec workloadcluster.Spec
	b, err := json.Marshal(raw)
	if err != nil {
		return compose.Params{}, fmt.Errorf("read XR %s spec: %w", name, err)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return compose.Params{}, fmt.Errorf("read XR %s spec: %w", name, err)
	}
	return compose.Params{Input: in, Spoke: spoke, Spec: spec}, nil
}
