package xpfn_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	fnv1 "github.com/crossplane/crossplane/v2/proto/fn/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fnjson"
	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/xpfn"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

// viaProtojson is the deployed function's path (package fn): the request
// as protojson text, fnjson.Run, the answer parsed back.
func viaProtojson(t *testing.T, req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	in, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fnjson.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	rsp := &fnv1.RunFunctionResponse{}
	if err := protojson.Unmarshal(out, rsp); err != nil {
		t.Fatal(err)
	}
	return rsp
}

// recorder serves the function and keeps every request render sends.
type recorder struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
	mu   sync.Mutex
	reqs []*fnv1.RunFunctionRequest
}

func (r *recorder) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, proto.Clone(req).(*fnv1.RunFunctionRequest))
	r.mu.Unlock()
	return xpfn.Function{}.RunFunction(ctx, req)
}

func mustStruct(t *testing.T, j string) *structpb.Struct {
	t.Helper()
	s := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(j), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDirectEqualsProtojson: the in-process adapter converts messages
// directly instead of through protojson text; for every request crossplane's
// render sends while rendering the repository's claim (each observe pass),
// and for requests that reach the other branches (desired state from an
// earlier step with connection details and readiness, a context, a bad
// input), its response is the message the protojson path gives.
func TestDirectEqualsProtojson(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	fnv1.RegisterFunctionRunnerServiceServer(srv, rec)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	r := xrender.Renderer{Target: func(_ context.Context, repo, _ string) (string, error) {
		if !strings.HasSuffix(repo, "/function-workload-cluster") {
			t.Errorf("the claim's Composition calls %s; want only the workload-cluster function", repo)
		}
		return l.Addr().String(), nil
	}}
	objs, err := r.RenderClaim(ctx, "../../../manifests", "../../../manifests/gitops-system/workload-clusters/apps-staging.yaml", clusterinfo.Example())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 20 || len(rec.reqs) < 2 {
		t.Fatalf("render gave %d objects from %d requests; want a whole spoke over several passes", len(objs), len(rec.reqs))
	}
	reqs := rec.reqs
	last := rec.reqs[len(rec.reqs)-1]

	// An earlier step's desired state, a context, readiness and
	// connection details pass through.
	earlier := proto.Clone(last).(*fnv1.RunFunctionRequest)
	earlier.Desired = &fnv1.State{
		Composite: &fnv1.Resource{Resource: mustStruct(t, `{"status":{"from":"earlier step"}}`)},
		Resources: map[string]*fnv1.Resource{"extra": {
			Resource:          mustStruct(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"n":"1"}}`),
			ConnectionDetails: map[string][]byte{"password": []byte("s3cr3t\x00\xff")},
			Ready:             fnv1.Ready_READY_TRUE,
		}},
	}
	earlier.Context = mustStruct(t, `{"apiextensions.crossplane.io/environment":{"a":[1,2.5,"x",null,true]}}`)
	earlier.Meta = &fnv1.RequestMeta{Tag: "tag-1"}
	reqs = append(reqs, earlier)

	// A bad input is answered with a fatal result.
	bad := proto.Clone(last).(*fnv1.RunFunctionRequest)
	bad.Input = mustStruct(t, `{"apiVersion":"fn.eksfleet.io/v1alpha1","kind":"Input","hubName":7}`)
	reqs = append(reqs, bad)

	// No observed composite at all.
	reqs = append(reqs, &fnv1.RunFunctionRequest{Input: last.GetInput()})

	fatal := 0
	for i, req := range reqs {
		got, err := xpfn.Function{}.RunFunction(ctx, req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		want := viaProtojson(t, req)
		if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
			t.Errorf("request %d: direct response differs from the protojson path (-protojson +direct):\n%s", i, d)
		}
		for _, res := range got.GetResults() {
			if res.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				fatal++
			}
		}
	}
	if fatal < 2 {
		t.Errorf("%d fatal results; want the bad input and the missing composite answered with one each", fatal)
	}
}
