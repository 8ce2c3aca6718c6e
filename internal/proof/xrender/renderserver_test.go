package xrender

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"sort"
	"testing"

	renderv1alpha1 "github.com/crossplane/crossplane/v2/proto/render/v1alpha1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof/apivalidate"
)

// stamp matches the times Crossplane's reconciler writes into conditions.
var stamp = regexp.MustCompile(`"lastTransitionTime":\s*"[^"]*"`)

// TestRenderServerEqualsCrossplaneBinary sends the same RenderRequests (a
// first pass, and a pass with every composed resource observed) to the
// render server and to `crossplane internal render` of the pinned
// release, and requires the same responses: the server is upstream's
// command, only kept running.
func TestRenderServerEqualsCrossplaneBinary(t *testing.T) {
	t.Cleanup(Shutdown)
	ctx := context.Background()
	info := clusterinfo.Example()
	claim, defs, failures, err := loadClaim(ctx, tree, stagingCRD, info, nil)
	if err != nil || len(failures) > 0 {
		t.Fatal(err, failures)
	}
	xrd, err := findXRD(claim, defs)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := apivalidate.CRDs([]*unstructured.Unstructured{xrd})
	if err != nil {
		t.Fatal(err)
	}
	xr, err := bind(claim, crds)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := findComposition(xr, defs)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := functions(ctx, comp, defs, functionTarget)
	if err != nil {
		t.Fatal(err)
	}
	client, err := renderClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	crossplane, err := binaries.Build(ctx, binaries.Crossplane)
	if err != nil {
		t.Fatal(err)
	}
	in := &renderv1alpha1.CompositeInput{Functions: fns}
	if in.Composition, err = toStruct(comp); err != nil {
		t.Fatal(err)
	}
	if in.CompositeResourceDefinition, err = toStruct(xrd.Object); err != nil {
		t.Fatal(err)
	}
	if in.CompositeResource, err = toStruct(xr.Object); err != nil {
		t.Fatal(err)
	}
	passes, composed := 0, 0
	for pass := 0; pass < 2; pass++ {
		server, err := renderComposite(ctx, client, in)
		if err != nil {
			t.Fatalf("pass %d: render server: %v", pass, err)
		}
		req, err := proto.Marshal(&renderv1alpha1.RenderRequest{Input: &renderv1alpha1.RenderRequest_Composite{Composite: in}})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(crossplane, "internal", "render")
		cmd.Stdin = bytes.NewReader(req)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("pass %d: crossplane internal render: %v\n%s", pass, err, stderr.String())
		}
		rsp := &renderv1alpha1.RenderResponse{}
		if err := proto.Unmarshal(stdout.Bytes(), rsp); err != nil {
			t.Fatal(err)
		}
		// The reconciler applies composed resources in map order and
		// stamps conditions with the time: compare them as sets, times
		// left out.
		text := func(m proto.Message) string {
			return stamp.ReplaceAllString(protojson.Format(m), `"lastTransitionTime": "<time>"`)
		}
		canonical := func(o *renderv1alpha1.CompositeOutput) []string {
			out := []string{"composite " + text(o.GetCompositeResource())}
			for _, c := range o.GetComposedResources() {
				out = append(out, "composed "+text(c))
			}
			for _, c := range o.GetDeletedResources() {
				out = append(out, "deleted "+text(c))
			}
			for _, e := range o.GetEvents() {
				out = append(out, "event "+text(e))
			}
			sort.Strings(out)
			return out
		}
		if diff := cmp.Diff(canonical(rsp.GetComposite()), canonical(server)); diff != "" {
			t.Errorf("pass %d: the render server's response differs from crossplane internal render's, -binary +server:\n%s", pass, diff)
		}
		// Not vacuous: the network first, then (with it observed Ready)
		// the cluster, IAM and the bootstrap.
		n := len(server.GetComposedResources())
		if n < 20 || n <= composed {
			t.Errorf("pass %d: %d composed resources (%d before): the requests did not compose the spoke", pass, n, composed)
		}
		composed = n
		// Next pass: everything composed is observed.
		var observed []*unstructured.Unstructured
		for _, c := range server.GetComposedResources() {
			observed = append(observed, &unstructured.Unstructured{Object: c.AsMap()})
		}
		in.ObservedResources = nil
		for _, o := range observe(observed, info) {
			st, err := toStruct(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			in.ObservedResources = append(in.ObservedResources, st)
		}
		passes++
	}
	if passes != 2 {
		t.Fatalf("%d passes compared, want 2", passes)
	}
}
