package xpfn

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	fnv1 "github.com/crossplane/crossplane/v2/proto/fn/v1"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fnjson"
)

// request converts req to what fnjson reads, as protojson would write it
// and encoding/json read it back: Structs become maps (numbers float64),
// bytes base64 strings, enums their value names ("" for unspecified, which
// protojson omits). The context is not converted: fnjson only passes it
// through, and RunFunction does that with the message itself.
func request(req *fnv1.RunFunctionRequest) (*fnjson.Request, error) {
	in := &fnjson.Request{Input: asMap(req.GetInput())}
	in.Meta.Tag = req.GetMeta().GetTag()
	if o := req.GetObserved(); o != nil {
		in.Observed = *state(o)
	}
	if d := req.GetDesired(); d != nil {
		in.Desired = state(d)
	}
	return in, nil
}

func state(s *fnv1.State) *fnjson.State {
	out := &fnjson.State{Composite: resource(s.GetComposite())}
	if len(s.GetResources()) > 0 {
		out.Resources = make(map[string]*fnjson.Resource, len(s.GetResources()))
		for name, r := range s.GetResources() {
			out.Resources[name] = resource(r)
		}
	}
	return out
}

func resource(r *fnv1.Resource) *fnjson.Resource {
	if r == nil {
		return nil
	}
	out := &fnjson.Resource{Resource: asMap(r.GetResource())}
	if r.GetReady() != fnv1.Ready_READY_UNSPECIFIED {
		out.Ready = r.GetReady().String()
	}
	if len(r.GetConnectionDetails()) > 0 {
		out.ConnectionDetails = make(map[string]string, len(r.GetConnectionDetails()))
		for k, v := range r.GetConnectionDetails() {
			out.ConnectionDetails[k] = base64.StdEncoding.EncodeToString(v)
		}
	}
	return out
}

// asMap is protojson's Struct as encoding/json decodes it: nil for no
// Struct, an empty map for an empty one.
func asMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

// response converts fnjson's answer to the message protojson would decode
// from its JSON.
func response(r *fnjson.Response) (*fnv1.RunFunctionResponse, error) {
	ttl, err := time.ParseDuration(r.Meta.TTL)
	if err != nil {
		return nil, fmt.Errorf("meta.ttl %q: %w", r.Meta.TTL, err)
	}
	rsp := &fnv1.RunFunctionResponse{Meta: &fnv1.ResponseMeta{Tag: r.Meta.Tag, Ttl: durationpb.New(ttl)}}
	if r.Desired != nil {
		if rsp.Desired, err = toState(r.Desired); err != nil {
			return nil, fmt.Errorf("desired: %w", err)
		}
	}
	for i, res := range r.Results {
		sev, err := enum(fnv1.Severity_value, res.Severity)
		if err != nil {
			return nil, fmt.Errorf("results[%d].severity: %w", i, err)
		}
		out := &fnv1.Result{Severity: fnv1.Severity(sev), Message: res.Message, Reason: res.Reason}
		if out.Target, err = target(res.Target); err != nil {
			return nil, fmt.Errorf("results[%d].target: %w", i, err)
		}
		rsp.Results = append(rsp.Results, out)
	}
	for i, c := range r.Conditions {
		st, err := enum(fnv1.Status_value, c.Status)
		if err != nil {
			return nil, fmt.Errorf("conditions[%d].status: %w", i, err)
		}
		out := &fnv1.Condition{Type: c.Type, Status: fnv1.Status(st), Reason: c.Reason, Message: c.Message}
		if out.Target, err = target(c.Target); err != nil {
			return nil, fmt.Errorf("conditions[%d].target: %w", i, err)
		}
		rsp.Conditions = append(rsp.Conditions, out)
	}
	return rsp, nil
}

func toState(s *fnjson.State) (*fnv1.State, error) {
	out := &fnv1.State{}
	var err error
	if s.Composite != nil {
		if out.Composite, err = toResource(s.Composite); err != nil {
			return nil, fmt.Errorf("composite: %w", err)
		}
	}
	if len(s.Resources) > 0 {
		out.Resources = make(map[string]*fnv1.Resource, len(s.Resources))
		for name, r := range s.Resources {
			if r == nil {
				continue // JSON null: protojson rejects it, encoding/json writes it
			}
			if out.Resources[name], err = toResource(r); err != nil {
				return nil, fmt.Errorf("resources[%s]: %w", name, err)
			}
		}
	}
	return out, nil
}

func toResource(r *fnjson.Resource) (*fnv1.Resource, error) {
	out := &fnv1.Resource{}
	if len(r.Resource) > 0 { // encoding/json omits an empty map
		st, err := toStruct(r.Resource)
		if err != nil {
			return nil, err
		}
		out.Resource = st
	}
	if r.Ready != "" {
		v, err := enum(fnv1.Ready_value, r.Ready)
		if err != nil {
			return nil, fmt.Errorf("ready: %w", err)
		}
		out.Ready = fnv1.Ready(v)
	}
	if len(r.ConnectionDetails) > 0 {
		out.ConnectionDetails = make(map[string][]byte, len(r.ConnectionDetails))
		for k, v := range r.ConnectionDetails {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("connectionDetails[%s]: %w", k, err)
			}
			out.ConnectionDetails[k] = b
		}
	}
	return out, nil
}

// toStruct is structpb.NewStruct for the values encoding/json can decode
// into (maps, slices, strings, float64, bools, nil, and the Go numbers
// compose writes); anything else takes the JSON round trip protojson's
// path would give it.
func toStruct(m map[string]any) (*structpb.Struct, error) {
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(m))}
	for k, v := range m {
		val, err := toValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out.Fields[k] = val
	}
	return out, nil
}

func toValue(v any) (*structpb.Value, error) {
	switch v := v.(type) {
	case nil:
		return structpb.NewNullValue(), nil
	case string:
		return structpb.NewStringValue(v), nil
	case bool:
		return structpb.NewBoolValue(v), nil
	case float64:
		return structpb.NewNumberValue(v), nil
	case int:
		return structpb.NewNumberValue(float64(v)), nil
	case int64:
		return structpb.NewNumberValue(float64(v)), nil
	case int32:
		return structpb.NewNumberValue(float64(v)), nil
	case map[string]any:
		s, err := toStruct(v)
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	case []any:
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(v))}
		for i, e := range v {
			val, err := toValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l.Values[i] = val
		}
		return structpb.NewListValue(l), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var decoded any
	if err := json.Unmarshal(b, &decoded); err != nil {
		return nil, err
	}
	return toValue(decoded)
}

func enum(values map[string]int32, name string) (int32, error) {
	v, ok := values[name]
	if !ok {
		return 0, fmt.Errorf("unknown enum value %q", name)
	}
	return v, nil
}

func target(name string) (*fnv1.Target, error) {
	if name == "" {
		return nil, nil
	}
	v, err := enum(fnv1.Target_value, name)
	if err != nil {
		return nil, err
	}
	t := fnv1.Target(v)
	return &t, nil
}
