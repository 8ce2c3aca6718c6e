// Package fn adapts package compose to the function SDK (RunFunction). It is
// kept apart from compose because function-sdk-go's proto package registers
// the same protobuf names as crossplane/v2's (render), so one binary cannot
// link both without a registration conflict; tests that render with
// crossplane import compose only.
package fn

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/workloadcluster"
)

// ClaimNameLabel is the label Crossplane puts on an XR created from a claim.
const ClaimNameLabel = "crossplane.io/claim-name"

// Input is the function's input (compose.Input).
type Input = compose.Input

// Function is the workload-cluster composition function.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

// RunFunction composes the spoke for one XWorkloadCluster.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)
	p, err := paramsFrom(req)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "read observed resources"))
		return rsp, nil
	}
	p.Observed = map[string]compose.Object{}
	for name, o := range observed {
		if o.Resource != nil {
			p.Observed[string(name)] = o.Resource.UnstructuredContent()
		}
	}
	out, err := compose.Compose(p)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "compose spoke"))
		return rsp, nil
	}
	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "read desired resources"))
		return rsp, nil
	}
	for key, o := range out.Objects {
		dc := resource.NewDesiredComposed()
		dc.Resource = composed.New()
		dc.Resource.Unstructured = unstructured.Unstructured{Object: o}
		dc.Ready = resource.ReadyFalse
		if compose.Ready(p.Observed[key]) {
			dc.Ready = resource.ReadyTrue
		}
		desired[resource.Name(key)] = dc
	}
	for _, n := range out.Notices {
		if n.Status {
			response.ConditionTrue(rsp, n.Type, n.Reason).TargetCompositeAndClaim()
			continue
		}
		if n.Warn {
			response.Warning(rsp, errors.New(n.Message)).WithReason(n.Reason).TargetCompositeAndClaim()
		}
		response.ConditionFalse(rsp, n.Type, n.Reason).WithMessage(n.Message).TargetCompositeAndClaim()
	}
	xr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "read desired XR"))
		return rsp, nil
	}
	if len(out.Status) > 0 {
		if err := xr.Resource.SetValue("status", out.Status); err != nil {
			response.Fatal(rsp, errors.Wrap(err, "set XR status"))
			return rsp, nil
		}
	}
	// Crossplane derives XR readiness from the composed resources only; while
	// parts are withheld (waiting for the log group or the OIDC issuer) the
	// XR is not ready even if everything composed so far is.
	if len(out.Pending) > 0 {
		xr.Ready = resource.ReadyFalse
		for _, why := range out.Pending {
			response.Normal(rsp, why)
		}
	}
	if err := response.SetDesiredCompositeResource(rsp, xr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "set desired XR"))
		return rsp, nil
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "set desired resources"))
		return rsp, nil
	}
	return rsp, nil
}

func paramsFrom(req *fnv1.RunFunctionRequest) (compose.Params, error) {
	var in Input
	if s := req.GetInput(); s != nil {
		b, err := s.MarshalJSON()
		if err != nil {
			return compose.Params{}, fmt.Errorf("read function input: %w", err)
		}
		if err := json.Unmarshal(b, &in); err != nil {
			return compose.Params{}, fmt.Errorf("read function input: %w", err)
		}
	}
	xr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		return compose.Params{}, fmt.Errorf("read XR: %w", err)
	}
	spoke := xr.Resource.GetLabels()[ClaimNameLabel]
	if spoke == "" {
		return compose.Params{}, fmt.Errorf("XR %s has no %s label: create it from a WorkloadCluster claim", xr.Resource.GetName(), ClaimNameLabel)
	}
	var spec workloadcluster.Spec
	raw, ok := xr.Resource.Object["spec"]
	if !ok {
		return compose.Params{}, fmt.Errorf("XR %s has no spec", xr.Resource.GetName())
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return compose.Params{}, fmt.Errorf("read XR spec: %w", err)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return compose.Params{}, fmt.Errorf("read XR spec: %w", err)
	}
	return compose.Params{Input: in, Spoke: spoke, Spec: spec}, nil
}
