package kube

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const scraped = `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="usages",subresource="",verb="PATCH"} 10
apiserver_request_total{code="409",resource="usages",subresource="",verb="PATCH"} 2
apiserver_request_total{code="200",resource="usages",subresource="status",verb="PUT"} 3
apiserver_request_total{code="200",resource="kustomizations",subresource="status",verb="PATCH"} 5
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="composite/workloadclusters.platform.eksfleet.io",result="success"} 7
controller_runtime_reconcile_total{controller="composite/workloadclusters.platform.eksfleet.io",result="requeue_after"} 4
controller_runtime_reconcile_total{controller="usage",result="success"} 100
# TYPE apiserver_storage_size_bytes gauge
apiserver_storage_size_bytes{storage_cluster_id="etcd-0"} 2.5e+06
`

func TestMetricsSum(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(scraped))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		name   string
		match  map[string]string
		by     []string
		want   map[string]float64
	}{
		"ByVerbAndResource": {
			reason: "samples differing only in labels not grouped by add up",
			name:   "apiserver_request_total", by: []string{"verb", "resource", "subresource"},
			want: map[string]float64{"PATCH usages ": 12, "PUT usages status": 3, "PATCH kustomizations status": 5},
		},
		"PrefixMatch": {
			reason: "a value ending in * matches by prefix",
			name:   "controller_runtime_reconcile_total", match: map[string]string{"controller": "composite/*"},
			want: map[string]float64{"": 11},
		},
		"ExactMatch": {
			reason: "other values match exactly",
			name:   "apiserver_request_total", match: map[string]string{"code": "409"}, by: []string{"verb"},
			want: map[string]float64{"PATCH": 2},
		},
		"Gauge": {
			reason: "gauges are read like counters",
			name:   "apiserver_storage_size_bytes",
			want:   map[string]float64{"": 2.5e6},
		},
		"Missing": {
			reason: "a metric the scrape lacks sums to nothing",
			name:   "function_run_function_request_total",
			want:   map[string]float64{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := m.Sum(tc.name, tc.match, tc.by...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nSum(%s, %v, %v): -want +got:\n%s", tc.reason, tc.name, tc.match, tc.by, diff)
			}
		})
	}
}

func TestTreeCPUCountsThisProcess(t *testing.T) {
	before, err := TreeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Busy until the kernel has charged this process 300 ms of CPU, however
	// loaded the machine is (a fixed wall-clock loop got too little CPU
	// beside the real-controller suite).
	used := selfCPU(t)
	for deadline := time.Now().Add(time.Minute); selfCPU(t)-used < 300*time.Millisecond && time.Now().Before(deadline); {
		for x := 0; x < 1_000_000; x++ {
			_ = x * x
		}
	}
	charged := selfCPU(t) - used
	after, err := TreeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < charged-50*time.Millisecond {
		t.Errorf("TreeCPU grew by %s while getrusage charged this process %s, want about as much", after-before, charged)
	}
}

// selfCPU is this process's user and system CPU time (getrusage).
func selfCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
