package test

// BenchmarkFleetValidate measures `fleet validate` on trees of 10, 100 and
// 1000 spokes: the repository's manifests/ plus N-1 claims generated with
// the code `fleet cluster add` uses (policy defaults, free CIDR blocks from
// internal/fleet/cidralloc, the same claim encoding, listing and workloads
// folder).
//
//	go test ./test -run '^$' -bench 'FleetValidate/full' -benchtime 1x -timeout 60m
//	FLEET_BENCH_SIZES=10,100 go test ./test -run '^$' -bench 'FleetValidate/full' -benchtime 1x
//
// "full" runs the whole command (offline proof + policy) cold: every
// iteration is a fresh process (this test binary re-executed, see
// fbChildEnv) that loads the upstream CRDs, starts the composition
// function processes and validates the tree, as a CI job does. It reports
// per size:
//
//	ns/op               wall time of one cold `fleet validate`
//	ns/cluster          the same per cluster: flat when time grows linearly
//	cpu-s/op            user+system CPU of the process and its functions
//	peak-heap-MB        largest live Go heap, sampled every 5ms
//	maxrss-MB           peak resident memory of the fleet process
//	children-maxrss-MB  peak resident memory of its largest child process (a
//	                    composition function, or the go command locating
//	                    the upstream modules)
//
// "policy" runs only the policy part (what fleet adds on top of the
// proof), in process.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/benchtree"
)

func fbSizes() []int {
	s := os.Getenv("FLEET_BENCH_SIZES")
	if s == "" {
		return []int{10, 100, 1000}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// fbTree copies the repository's manifests/ and adds clusters until it has
// n claims (internal/testsupport/benchtree).
func fbTree(b *testing.B, n int) string {
	b.Helper()
	root := filepath.Join(b.TempDir(), "manifests")
	if err := benchtree.Generate(filepath.Join("..", "manifests"), root, n); err != nil {
		b.Fatal(err)
	}
	return root
}

// fbPeakHeap samples the live Go heap until stop is closed.
func fbPeakHeap(stop <-chan struct{}) func() uint64 {
	var mu sync.Mutex
	var peak uint64
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			if v := sample[0].Value.Uint64(); v > peak {
				peak = v
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { <-done; mu.Lock(); defer mu.Unlock(); return peak }
}

// fbChildEnv names the tree a re-executed test binary validates (one cold
// `fleet validate`), printing its measurements on a line starting with
// fbChildTag; see fbChild.
const (
	fbChildEnv = "FLEET_BENCH_CHILD_TREE"
	fbChildTag = "fleet-bench-child:"
)

// A re-executed test binary with fbChildEnv set is the child: it runs
// before the testing package starts, so nothing but the command runs in
// it.
func init() {
	if tree := os.Getenv(fbChildEnv); tree != "" {
		os.Exit(fbChild(tree))
	}
}

// fbChild runs `fleet validate TREE` and prints the exit code, the peak Go
// heap, its own peak RSS and that of its (function) child processes.
//
// FLEET_BENCH_CPUPROFILE=FILE makes the child write a CPU profile of the
// run to FILE.<pid>, for `go tool pprof -top`.
func fbChild(tree string) int {
	if p := os.Getenv("FLEET_BENCH_CPUPROFILE"); p != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", p, os.Getpid()))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	stop := make(chan struct{})
	peak := fbPeakHeap(stop)
	var out, errb bytes.Buffer
	code := fleetcmd.Run(context.Background(), []string{"validate", tree}, &out, &errb)
	close(stop)
	xrender.Shutdown() // reaps the function processes, so RUSAGE_CHILDREN counts them
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	fmt.Printf("%s code=%d heap=%d maxrss=%d fnmaxrss=%d\n", fbChildTag, code, peak(), self.Maxrss*1024, children.Maxrss*1024)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "fleet validate exited %d\n%s\n%s", code, out.String(), errb.String())
	}
	return 0
}

// fbColdRun runs one cold `fleet validate` of tree in a child process.
func fbColdRun(b *testing.B, tree string) (wall, cpu time.Duration, code int, heap, rss, fnRSS uint64) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^$")
	cmd.Env = append(os.Environ(), fbChildEnv+"="+tree)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("child: %v\n%s", err, stderr.String())
	}
	wall = time.Since(start)
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	for _, line := range strings.Split(stdout.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, fbChildTag); ok {
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "code=%d heap=%d maxrss=%d fnmaxrss=%d", &code, &heap, &rss, &fnRSS); err != nil {
				b.Fatalf("child output %q: %v", line, err)
			}
			if code == fleetcmd.ExitUsage {
				b.Fatalf("fleet validate: bad usage: %s", stderr.String())
			}
			if code != 0 {
				b.Logf("fleet validate exited %d (findings on the generated tree):\n%s", code, fbFirstLines(stderr.String(), 20))
			}
			return wall, cpu, code, heap, rss, fnRSS
		}
	}
	b.Fatalf("child printed no measurements:\n%s\n%s", stdout.String(), stderr.String())
	return
}

func fbFirstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func BenchmarkFleetValidate(b *testing.B) {
	b.Run("policy", func(b *testing.B) {
		for _, n := range fbSizes() {
			b.Run(strconv.Itoa(n), func(b *testing.B) {
				tree := fbTree(b, n)
				ctx := context.Background()
				runtime.GC()
				stop := make(chan struct{})
				peak := fbPeakHeap(stop)
				b.ResetTimer()
				start := time.Now()
				runs := 0
				for b.Loop() {
					runs++
					res, err := fleetvalidate.Run(ctx, fleetvalidate.Options{Tree: tree, Info: clusterinfo.Example()})
					if err != nil {
						b.Fatal(err)
					}
					if res.Claims != n {
						b.Fatalf("%d claims, want %d", res.Claims, n)
					}
					if !res.OK() {
						b.Fatalf("generated tree fails policy: %v", res.Findings[0])
					}
				}
				elapsed := time.Since(start)
				b.StopTimer()
				close(stop)
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(runs)/float64(n), "ns/cluster")
				b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
			})
		}
	})
	b.Run("full", func(b *testing.B) {
		for _, n := range fbSizes() {
			b.Run(strconv.Itoa(n), func(b *testing.B) {
				tree := fbTree(b, n)
				b.ResetTimer()
				var wall, cpu time.Duration
				var heap, rss, fnRSS uint64
				runs := 0
				for b.Loop() {
					runs++
					w, c, _, h, r, f := fbColdRun(b, tree)
					wall += w
					cpu += c
					heap, rss, fnRSS = max(heap, h), max(rss, r), max(fnRSS, f)
				}
				b.StopTimer()
				b.ReportMetric(float64(wall.Nanoseconds())/float64(runs)/float64(n), "ns/cluster")
				b.ReportMetric(cpu.Seconds()/float64(runs), "cpu-s/op")
				b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(rss)/(1<<20), "maxrss-MB")
				b.ReportMetric(float64(fnRSS)/(1<<20), "children-maxrss-MB")
			})
		}
	})
}
