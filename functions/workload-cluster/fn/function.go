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
	"github.com/gitops-fleet/eks-fleet/internal/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/workloadcluster"
)

// ClaimNameLabel is the label Crossplane puts on an XR created from a claim.
const ClaimNameLabel = "crossplane.io/claim-name"

// Input is the function's input (the Composition step's input): the hub
// facts Flux substitutes from cluster-info.
type Input struct {
	HubName   string `json:"hubName"`
	AccountID string `json:"accountId"`
	Partition string `json:"partition"`
	HubRegion string `json:"hubRegion"`
	// GitOpsSystemPath is ${GITOPS_SYSTEM_PATH}: the bootstrap
	// Kustomizations' paths start with it.
	GitOpsSystemPath string `json:"gitopsSystemPath"`
}

// Function is the workload-cluster composition function.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

// RunFunction composes the spoke for one XWorkloadCluster.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)
	p, in, err := paramsFrom(req)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	objs, err := compose.Network(p)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "compose network"))
		return rsp, nil
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "read observed resources"))
		return rsp, nil
	}
	obs := map[string]compose.Object{}
	for k, o := range observed {
		obs[string(k)] = o.Resource.Object
	}
	boot, notices, err := compose.Bootstrap(p, compose.BootstrapIn{SystemPath: in.GitOpsSystemPath, Observed: obs})
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "compose spoke bootstrap"))
		return rsp, nil
	}
	for _, n := range notices {
		if n.Status {
			response.ConditionTrue(rsp, n.Type, n.Reason).TargetCompositeAndClaim()
			continue
		}
		if n.Warn {
			response.Warning(rsp, errors.New(n.Message)).WithReason(n.Reason).TargetCompositeAndClaim()
		}
		response.ConditionFalse(rsp, n.Type, n.Reason).WithMessage(n.Message).TargetCompositeAndClaim()
	}
	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "read desired resources"))
		return rsp, nil
	}
	for key, o := range objs {
		dc := resource.NewDesiredComposed()
		dc.Resource = composed.New()
		dc.Resource.Unstructured = unstructured.Unstructured{Object: o}
		dc.Ready = ReadyFrom(observed[resource.Name(key)])
		desired[resource.Name(key)] = dc
	}
	for key, o := range boot {
		dc := resource.NewDesiredComposed()
		dc.Resource = composed.New()
		dc.Resource.Unstructured = unstructured.Unstructured{Object: o}
		dc.Ready = resource.ReadyFalse
		if compose.BootstrapReady(obs[key]) {
			dc.Ready = resource.ReadyTrue
		}
		desired[resource.Name(key)] = dc
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "set desired resources"))
		return rsp, nil
	}
	return rsp, nil
}

// ReadyFrom is a composed resource's readiness: True only when the observed
// object exists and its Ready condition is True (no blanket "None" checks).
func ReadyFrom(o resource.ObservedComposed) resource.Ready {
	if o.Resource == nil {
		return resource.ReadyFalse
	}
	c := o.Resource.GetCondition("Ready")
	if string(c.Status) == "True" {
		return resource.ReadyTrue
	}
	return resource.ReadyFalse
}

func paramsFrom(req *fnv1.RunFunctionRequest) (compose.Params, Input, error) {
	var in Input
	if s := req.GetInput(); s != nil {
		b, err := s.MarshalJSON()
		if err != nil {
			return compose.Params{}, in, fmt.Errorf("read function input: %w", err)
		}
		if err := json.Unmarshal(b, &in); err != nil {
			return compose.Params{}, in, fmt.Errorf("read function input: %w", err)
		}
	}
	xr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		return compose.Params{}, in, fmt.Errorf("read XR: %w", err)
	}
	spoke := xr.Resource.GetLabels()[ClaimNameLabel]
	if spoke == "" {
		return compose.Params{}, in, fmt.Errorf("XR %s has no %s label: create it from a WorkloadCluster claim", xr.Resource.GetName(), ClaimNameLabel)
	}
	var spec workloadcluster.Spec
	raw, ok := xr.Resource.Object["spec"]
	if !ok {
		return compose.Params{}, in, fmt.Errorf("XR %s has no spec", xr.Resource.GetName())
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return compose.Params{}, in, fmt.Errorf("read XR spec: %w", err)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return compose.Params{}, in, fmt.Errorf("read XR spec: %w", err)
	}
	if in.HubName == "" {
		return compose.Params{}, in, fmt.Errorf("function input hubName is empty (Flux substitutes ${HUB_CLUSTER_NAME} from cluster-info)")
	}
	return compose.Params{
		Hub:   hubiam.Env{HubName: in.HubName, AccountID: in.AccountID, Partition: in.Partition, Region: in.HubRegion},
		Spoke: spoke,
		Spec:  spec,
	}, in, nil
}
