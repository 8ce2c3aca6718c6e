package xrender

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/build/loopback"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
)

const (
	repoRoot   = "../../.."
	tree       = repoRoot + "/manifests"
	stagingCRD = tree + "/gitops-system/workload-clusters/apps-staging.yaml"
)

var (
	binOnce   sync.Once
	binPath   string
	binErr    error
	binTmpDir string
)

// deployedBinary builds functions/workload-cluster, the binary the xpkg
// ships (package fn over function-sdk-go), once per test process.
func deployedBinary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		binTmpDir, binErr = os.MkdirTemp("", "fwc-*")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binTmpDir, "function-workload-cluster")
		cmd := exec.Command("go", "build", "-o", binPath, "./functions/workload-cluster")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./functions/workload-cluster: %v: %s", err, out)
		}
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return binPath
}

// startBinary runs the deployed binary on a loopback port (plaintext: no
// TLS_SERVER_CERTS_DIR) and returns its target; it is stopped at cleanup.
func startBinary(tb testing.TB) string {
	tb.Helper()
	bin := deployedBinary(tb)
	port, err := loopback.Port()
	if err != nil {
		tb.Fatal(err)
	}
	target := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--insecure", "--address", target)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TLS_SERVER_CERTS_DIR=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", target, time.Second)
		if err == nil {
			c.Close()
			return target
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not listen on %s: %s", bin, target, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// binaryRenderer runs this project's function as the deployed binary at
// target, everything else as Render does.
func binaryRenderer(target string) Renderer {
	return Renderer{Target: func(ctx context.Context, repo, tag string) (string, error) {
		if IsInProcess(repo) {
			return target, nil
		}
		return functionTarget(ctx, repo, tag)
	}}
}

// variantClaim writes apps-staging with other spec values to a file.
func variantClaim(t *testing.T, name string, edits map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(stagingCRD)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "apps-staging", name)
	for old, new := range edits {
		if !strings.Contains(s, old) {
			t.Fatalf("claim has no %q", old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	p := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// normalized drops the times render stamps on conditions.
func normalized(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "lastTransitionTime")
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	for _, o := range objs {
		c := o.DeepCopy().Object
		strip(c)
		out[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = c
	}
	return out
}

// diff names every object that differs between a and b.
func diff(a, b []*unstructured.Unstructured) []string {
	na, nb := normalized(a), normalized(b)
	var out []string
	for k, va := range na {
		vb, ok := nb[k]
		switch {
		case !ok:
			out = append(out, k+": only in-process")
		case !reflect.DeepEqual(va, vb):
			out = append(out, fmt.Sprintf("%s differs:\n in-process %v\n binary     %v", k, va, vb))
		}
	}
	for k := range nb {
		if _, ok := na[k]; !ok {
			out = append(out, k+": only from the binary")
		}
	}
	sort.Strings(out)
	return out
}

// TestInProcessEqualsDeployedBinary renders claims through the tree's
// Composition twice, with the function served in-process and as the
// deployed binary, and requires the same composite and composed
// resources: what fleet shows is what the released function composes.
func TestInProcessEqualsDeployedBinary(t *testing.T) {
	ctx := context.Background()
	info := clusterinfo.Example()
	target := startBinary(t)
	claims := map[string]string{
		"apps-staging": stagingCRD,
		"two-az-per-az": variantClaim(t, "pay-eu", map[string]string{
			"availabilityZones: 3": "availabilityZones: 2", "natMode: single": "natMode: per-az"}),
	}
	for name, path := range claims {
		t.Run(name, func(t *testing.T) {
			in, err := RenderClaim(ctx, tree, path, info)
			if err != nil {
				t.Fatalf("in-process: %v", err)
			}
			bin, err := binaryRenderer(target).RenderClaim(ctx, tree, path, info)
			if err != nil {
				t.Fatalf("binary: %v", err)
			}
			for _, d := range diff(in, bin) {
				t.Error(d)
			}
			// Not vacuous: the whole spoke is there, bootstrap included.
			kinds := map[string]int{}
			for _, o := range in[1:] {
				kinds[o.GetKind()]++
			}
			for _, k := range []string{"VPC", "Cluster", "NodeGroup", "Role", "OpenIDConnectProvider", "Kustomization", "ClusterUsage", "Group"} {
				if kinds[k] == 0 {
					t.Errorf("no %s rendered (kinds %v)", k, kinds)
				}
			}
			// The comparison catches one changed field.
			planted := in[len(in)-1].DeepCopy()
			planted.SetLabels(map[string]string{"planted": "x"})
			if d := diff(append(append([]*unstructured.Unstructured{}, in[:len(in)-1]...), planted), bin); len(d) != 1 {
				t.Errorf("planted label: %d differences reported, want 1: %v", len(d), d)
			}
		})
	}
}

// BenchmarkRenderClaim renders apps-staging (tree built once) with the
// function in-process and as the deployed binary (already running).
func BenchmarkRenderClaim(b *testing.B) {
	ctx := context.Background()
	info := clusterinfo.Example()
	claim, defs, failures, err := loadClaim(ctx, tree, stagingCRD, info, nil)
	if err != nil || len(failures) > 0 {
		b.Fatal(err, failures)
	}
	for _, bc := range []struct {
		name string
		r    func(b *testing.B) Renderer
	}{
		{"in-process", func(*testing.B) Renderer { return Renderer{} }},
		{"subprocess", func(b *testing.B) Renderer { return binaryRenderer(startBinary(b)) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := bc.r(b)
			if _, err := r.Render(ctx, claim, defs, info); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.Render(ctx, claim, defs, info); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	Shutdown()
	if binTmpDir != "" {
		os.RemoveAll(binTmpDir)
	}
	os.Exit(code)
}
