// Package fn serves the workload-cluster function with function-sdk-go: it
// converts the SDK's RunFunctionRequest to protojson, lets package fnjson
// (the whole request→response mapping) answer it, and converts the answer
// back. The deployed binary (functions/workload-cluster) serves it over
// mTLS; fleet and the offline proof serve the same Function in-process
// over a unix socket for Crossplane's render.
package fn

import (
	"context"
	"fmt"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fnjson"
)

// Function is the workload-cluster composition function.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

// RunFunction composes the spoke for one XWorkloadCluster.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	in, err := protojson.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode RunFunctionRequest: %w", err)
	}
	out, err := fnjson.Run(in)
	if err != nil {
		return nil, err
	}
	rsp := &fnv1.RunFunctionResponse{}
	if err := protojson.Unmarshal(out, rsp); err != nil {
		return nil, fmt.Errorf("decode RunFunctionResponse: %w", err)
	}
	return rsp, nil
}
