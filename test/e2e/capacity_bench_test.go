package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// BenchmarkHubCapacity measures what a hub pays per spoke on the real
// controllers (issue 45): a hub brought up as the program brings it up,
// with no claim, then N claims merged at once for each N in
// FLEET_HUB_BENCH_SIZES (ascending, default 0,1,10: the claims are added
// to those already there). Their spokes are not played: the stand-in AWS
// makes every managed resource, the function composes the whole spoke,
// bootstrap included, and the bootstrap's first remote step then fails as
// it does for a spoke the hub cannot reach yet (its Kustomization retried
// every retryInterval). Once every claim is composed and
// FLEET_HUB_BENCH_SETTLE has passed (default 1m; a minute at N=0, which
// composes nothing; past fnjson.LongWait a waiting spoke is requeued as a
// settled one), it measures over FLEET_HUB_BENCH_WINDOW (default 5m) at rest,
// then over FLEET_HUB_BENCH_COMMIT_WINDOW (default 3m) from a commit that
// touches no claim (the hub asked to fetch at once, as a webhook Receiver
// does):
//   - the hub API server's requests by verb and resource
//     (apiserver_request_total) and its etcd's size
//     (apiserver_storage_size_bytes);
//   - Crossplane's own requests (its client's rest_client_requests_total)
//     and its composite reconciles and function calls;
//   - the CPU seconds of Crossplane's process, the function's, the API
//     server's, etcd's and kustomize-controller's (/proc).
//
// Each size logs a table; per-spoke figures are the growth over the
// smallest size divided by the spokes added, and are reported as the
// benchmark's metrics. Run it with
//
//	go test ./test/e2e -run '^$' -bench HubCapacity -benchtime 1x -timeout 4h -v
func BenchmarkHubCapacity(b *testing.B) {
	sizes := benchInts(b, "FLEET_HUB_BENCH_SIZES", "0,1,10")
	window := benchDuration(b, "FLEET_HUB_BENCH_WINDOW", 5*time.Minute)
	commitWindow := benchDuration(b, "FLEET_HUB_BENCH_COMMIT_WINDOW", 3*time.Minute)
	settle := benchDuration(b, "FLEET_HUB_BENCH_SETTLE", time.Minute)
	ctx := context.Background()
	h := startHub(b, "e2ebench", "10.210.0.0/16", withoutExampleClaim)
	if err := check.HubSynced(ctx, h, manifests, 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	var base *capacity
	have := 0
	for _, n := range sizes {
		b.Run(fmt.Sprintf("spokes=%d", n), func(b *testing.B) {
			start := time.Now()
			addBenchClaims(b, h, have, n)
			if err := benchStepsComposed(ctx, h, n, 30*time.Minute); err != nil {
				b.Fatal(err)
			}
			for i := have; i < n; i++ {
				if err := claimComposedOf(ctx, h, benchClaim(i), 30*time.Minute); err != nil {
					b.Fatal(err)
				}
			}
			have = n
			b.Logf("%d claims composed %s after the merge", n, time.Since(start).Round(time.Second))
			if n == 0 {
				time.Sleep(time.Minute)
			} else {
				time.Sleep(settle)
			}
			c := measureCapacity(b, h, n, window, commitWindow)
			b.Logf("spokes=%d:\n%s", n, c.table(base))
			if base == nil {
				base = c
				return
			}
			spokes := float64(n - base.spokes)
			b.ReportMetric((c.restRate()-base.restRate())/spokes, "req/s/spoke")
			b.ReportMetric((c.restWriteRate()-base.restWriteRate())/spokes, "writes/s/spoke")
			b.ReportMetric((c.commitExtra()-base.commitExtra())/spokes, "commit-req/spoke")
			b.ReportMetric((c.crossplaneCPUPerMin()-base.crossplaneCPUPerMin())/spokes, "xp-cpu-s/min/spoke")
			b.ReportMetric((c.reconcilesPerMin()-base.reconcilesPerMin())/spokes, "xr-reconciles/min/spoke")
			b.ReportMetric(c.etcdBytes/1e6, "etcd-MB")
		})
	}
}

// benchClaim is the name of the i-th claim the benchmark merges.
func benchClaim(i int) string { return fmt.Sprintf("bench-%03d", i) }

// addBenchClaims commits claims from..to-1, copies of the example claim
// each with its own VPC CIDR, listed as `fleet cluster add` lists them, in
// one commit, and asks the hub to fetch it.
func addBenchClaims(b *testing.B, h *site.Hub, from, to int) {
	b.Helper()
	if from >= to {
		return
	}
	for i := from; i < to; i++ {
		writeClaim(b, h, benchClaim(i), fmt.Sprintf("10.%d.0.0/16", 100+i))
	}
	if err := h.Repo.Commit(fmt.Sprintf("add %d claims", to-from)); err != nil {
		b.Fatal(err)
	}
	check.RequestReconcile(b, h)
}

// benchStepsComposed waits, with one list every 10 s (a claim's
// claimComposedOf reads every composed resource, four times a second), for
// every step of the first n claims' bootstrap to be composed: the function
// composes it once AWS reports the cluster's issuer, the last stage.
func benchStepsComposed(ctx context.Context, h *site.Hub, n int, timeout time.Duration) error {
	var missing []string
	err := kube.Poll(ctx, timeout, func() (bool, error) {
		time.Sleep(10 * time.Second)
		l, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(compose.BootstrapNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		have := map[string]bool{}
		for _, o := range l.Items {
			have[o.GetName()] = true
		}
		missing = nil
		for i := range n {
			for _, s := range compose.BootstrapSteps() {
				if name := compose.BootstrapName(benchClaim(i), s.Part); !have[name] {
					missing = append(missing, name)
				}
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("bootstrap not composed (%v): %d steps missing, the first %v", err, len(missing), missing[:min(5, len(missing))])
	}
	return nil
}

// capacity is one size's measurement.
type capacity struct {
	spokes                  int
	rest, commit            time.Duration
	restAPI, commitAPI      map[string]float64 // requests by "VERB resource[/subresource]"
	restXP, commitXP        map[string]float64 // Crossplane's requests by method
	restCPU, commitCPU      map[string]time.Duration
	restRecon, commitRecon  float64 // composite reconciles
	restFnCall, commitFnRun float64 // function calls
	etcdBytes               float64
}

// scrape is one reading of the counters measureCapacity differences.
type scrape struct {
	api, xp       map[string]float64
	cpu           map[string]time.Duration
	recon, fnCall float64
	etcdBytes     float64
}

func takeScrape(b *testing.B, h *site.Hub) scrape {
	b.Helper()
	ctx := context.Background()
	api, err := h.Cluster.APIServerMetrics(ctx)
	if err != nil {
		b.Fatal(err)
	}
	xp, err := h.Cluster.PodMetrics(ctx, "crossplane-system", "app=crossplane", 8080)
	if err != nil {
		b.Fatal(err)
	}
	s := scrape{
		api: map[string]float64{}, xp: xp.Sum("rest_client_requests_total", nil, "method"),
		recon:     xp.Total("controller_runtime_reconcile_total", map[string]string{"controller": "composite/*"}),
		fnCall:    xp.Total("function_run_function_request_total", nil),
		etcdBytes: api.Total("apiserver_storage_size_bytes", nil),
		cpu:       map[string]time.Duration{},
	}
	for k, v := range api.Sum("apiserver_request_total", nil, "verb", "resource", "subresource") {
		f := strings.Fields(k)
		key := strings.Join(f[:min(2, len(f))], " ")
		if len(f) == 3 {
			key += "/" + f[2]
		}
		s.api[key] += v
	}
	procs := map[string][]int{
		"kube-apiserver":       {h.Cluster.Proc("kube-apiserver").PID()},
		"etcd":                 {h.Cluster.Proc("etcd").PID()},
		"kustomize-controller": {h.Flux["kustomize-controller"].PID()},
	}
	for pod, ps := range h.Pods.Pods("crossplane-system", "") {
		key := ""
		switch {
		case strings.HasPrefix(pod, "crossplane-rbac-manager"):
		case strings.HasPrefix(pod, "crossplane-"):
			key = "crossplane"
		case strings.HasPrefix(pod, versions.WorkloadClusterFunctionPackage):
			key = "function"
		}
		if key == "" {
			continue
		}
		for _, p := range ps {
			if p.Running() {
				procs[key] = append(procs[key], p.PID())
			}
		}
	}
	for name, pids := range procs {
		d, err := kube.TreeCPU(pids...)
		if err != nil {
			b.Fatal(err)
		}
		s.cpu[name] = d
	}
	return s
}

func diffCounts(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range b {
		if d := v - a[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func diffCPU(a, b map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range b {
		out[k] = v - a[k]
	}
	return out
}

// measureCapacity measures the hub over window at rest, then over
// commitWindow from a commit that touches no claim.
func measureCapacity(b *testing.B, h *site.Hub, n int, window, commitWindow time.Duration) *capacity {
	b.Helper()
	s0 := takeScrape(b, h)
	t0 := time.Now()
	time.Sleep(window)
	s1 := takeScrape(b, h)
	rest := time.Since(t0)
	// A commit outside every claim and every path a Kustomization reads:
	// a new revision of the hub's repository all the same.
	note := filepath.Join(h.Repo.Work, "bench-commits.txt")
	if err := os.WriteFile(note, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := h.Repo.Commit("a commit that touches no claim"); err != nil {
		b.Fatal(err)
	}
	s2 := takeScrape(b, h)
	t2 := time.Now()
	check.RequestReconcile(b, h)
	time.Sleep(commitWindow)
	s3 := takeScrape(b, h)
	return &capacity{
		spokes: n, rest: rest, commit: time.Since(t2),
		restAPI: diffCounts(s0.api, s1.api), commitAPI: diffCounts(s2.api, s3.api),
		restXP: diffCounts(s0.xp, s1.xp), commitXP: diffCounts(s2.xp, s3.xp),
		restCPU: diffCPU(s0.cpu, s1.cpu), commitCPU: diffCPU(s2.cpu, s3.cpu),
		restRecon: s1.recon - s0.recon, commitRecon: s3.recon - s2.recon,
		restFnCall: s1.fnCall - s0.fnCall, commitFnRun: s3.fnCall - s2.fnCall,
		etcdBytes: s3.etcdBytes,
	}
}

// isWrite reports whether a "VERB resource" key is a mutating request.
func isWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "GET", "LIST", "WATCH", "CONNECT":
		return false
	}
	return true
}

func sum(m map[string]float64, keep func(string) bool) float64 {
	var t float64
	for k, v := range m {
		if keep == nil || keep(k) {
			t += v
		}
	}
	return t
}

func notWatch(k string) bool { return !strings.HasPrefix(k, "WATCH ") }

func (c *capacity) restRate() float64 { return sum(c.restAPI, notWatch) / c.rest.Seconds() }
func (c *capacity) restWriteRate() float64 {
	return sum(c.restAPI, isWrite) / c.rest.Seconds()
}

// commitExtra is the requests the commit window saw beyond the rest rate.
func (c *capacity) commitExtra() float64 {
	return sum(c.commitAPI, notWatch) - c.restRate()*c.commit.Seconds()
}
func (c *capacity) crossplaneCPUPerMin() float64 {
	return c.restCPU["crossplane"].Seconds() / c.rest.Minutes()
}
func (c *capacity) reconcilesPerMin() float64 { return c.restRecon / c.rest.Minutes() }

// table is the measurement as text: totals, the growth per spoke over
// base, and the requests by verb and resource.
func (c *capacity) table(base *capacity) string {
	var b strings.Builder
	fmt.Fprintf(&b, "window at rest %s, after the commit %s\n", c.rest.Round(time.Second), c.commit.Round(time.Second))
	fmt.Fprintf(&b, "hub API requests at rest: %.2f/s (writes %.2f/s); commit: %.0f beyond the rest rate\n",
		c.restRate(), c.restWriteRate(), c.commitExtra())
	fmt.Fprintf(&b, "Crossplane's requests at rest: %v; after the commit: %v\n", round(c.restXP, c.rest), round(c.commitXP, c.commit))
	fmt.Fprintf(&b, "composite reconciles at rest %.1f/min, function calls %.1f/min; after the commit %.0f reconciles, %.0f calls\n",
		c.reconcilesPerMin(), c.restFnCall/c.rest.Minutes(), c.commitRecon, c.commitFnRun)
	for _, name := range slices.Sorted(maps.Keys(c.restCPU)) {
		fmt.Fprintf(&b, "CPU %s: %.2f s/min at rest, %.1f s after the commit\n", name,
			c.restCPU[name].Seconds()/c.rest.Minutes(), c.commitCPU[name].Seconds())
	}
	fmt.Fprintf(&b, "etcd size %.1f MB\n", c.etcdBytes/1e6)
	if base != nil && c.spokes > base.spokes {
		n := float64(c.spokes - base.spokes)
		fmt.Fprintf(&b, "per spoke (over spokes=%d): %.3f req/s, %.3f writes/s at rest; %.0f requests per commit; Crossplane %.3f CPU-s/min; %.2f reconciles/min\n",
			base.spokes, (c.restRate()-base.restRate())/n, (c.restWriteRate()-base.restWriteRate())/n,
			(c.commitExtra()-base.commitExtra())/n, (c.crossplaneCPUPerMin()-base.crossplaneCPUPerMin())/n,
			(c.reconcilesPerMin()-base.reconcilesPerMin())/n)
	}
	b.WriteString("requests at rest (per s) and after the commit, by verb and resource:\n")
	keys := slices.Collect(maps.Keys(c.restAPI))
	for k := range c.commitAPI {
		if _, ok := c.restAPI[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y string) int { return int(c.restAPI[y]+c.commitAPI[y]) - int(c.restAPI[x]+c.commitAPI[x]) })
	for _, k := range keys {
		if strings.HasPrefix(k, "WATCH ") {
			continue
		}
		fmt.Fprintf(&b, "  %-60s %8.3f/s %8.0f\n", k, c.restAPI[k]/c.rest.Seconds(), c.commitAPI[k])
	}
	return b.String()
}

func round(m map[string]float64, d time.Duration) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.2f/s", k, m[k]/d.Seconds()))
	}
	return strings.Join(parts, ", ")
}

func benchInts(b *testing.B, env, def string) []int {
	b.Helper()
	s := cmp.Or(os.Getenv(env), def)
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > 150 || len(out) > 0 && n <= out[len(out)-1] {
			b.Fatalf("%s=%q: want ascending spoke counts from 0 to 150, comma-separated", env, s)
		}
		out = append(out, n)
	}
	return out
}

func benchDuration(b *testing.B, env string, def time.Duration) time.Duration {
	b.Helper()
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Minute {
		b.Fatalf("%s=%q: want a Go duration of at least 1m", env, s)
	}
	return d
}
