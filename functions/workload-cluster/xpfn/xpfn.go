// Package xpfn runs the workload-cluster function in-process for
// crossplane/v2's render: a FunctionRunnerServiceServer over crossplane's own
// proto package (proto/fn/v1). It converts the request's protobuf
// messages to package fnjson's types (the protojson shape) directly, lets
// fnjson answer, and converts the answer back, without writing and parsing
// protojson text as the deployed function (package fn, over
// function-sdk-go) does: the fleet renders every claim several times, and
// the text round trip was most of the function's cost there. The result is
// the same message (TestDirectEqualsProtojson). fn and xpfn must never be
// linked together: their proto packages register the same protobuf names.
package xpfn

import (
	"context"
	"errors"
	"fmt"
	"net"

	fnv1 "github.com/crossplane/crossplane/v2/proto/fn/v1"
	"google.golang.org/grpc"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fnjson"
)

// Function is the workload-cluster function on crossplane/v2's proto.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

// RunFunction composes the spoke for one XWorkloadCluster.
func (Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	in, err := request(req)
	if err != nil {
		return nil, fmt.Errorf("decode RunFunctionRequest: %w", err)
	}
	rsp, err := response(fnjson.Answer(in))
	if err != nil {
		return nil, fmt.Errorf("encode RunFunctionResponse: %w", err)
	}
	// fnjson passes the context through unread.
	rsp.Context = req.GetContext()
	return rsp, nil
}

type Server struct {
	// Target is the gRPC target render dials (127.0.0.1:<port>).
	Target string
	srv    *grpc.Server
	done   chan error
}

// Serve starts serving the function on 127.0.0.1 at a free port, without
// TLS (render's Development runtime dials insecure; nothing leaves the
// host).
func Serve() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the in-process workload-cluster function: %w", err)
	}
	s := &Server{Target: l.Addr().String(), srv: grpc.NewServer(), done: make(chan error, 1)}
	fnv1.RegisterFunctionRunnerServiceServer(s.srv, Function{})
	go func() { s.done <- s.srv.Serve(l) }()
	return s, nil
}

// Stop stops serving; calls in flight finish first.
func (s *Server) Stop() error {
	s.srv.GracefulStop()
	if err := <-s.done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("in-process workload-cluster function: %w", err)
	}
	return nil
}
