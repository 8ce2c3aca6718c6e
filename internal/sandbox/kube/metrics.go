package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metrics are Prometheus metric families by name, as a scrape returns them.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics reads Prometheus's text exposition format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return Metrics(mf), nil
}

// Sum adds up the samples of the counter or gauge name whose labels match
// every label in match, grouped by the values of the labels in by (joined
// with " "; one group "" when by is empty).
func (m Metrics) Sum(name string, match map[string]string, by ...string) map[string]float64 {
	out := map[string]float64{}
	f := m[name]
	if f == nil {
		return out
	}
	for _, s := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range match {
			if strings.HasSuffix(v, "*") {
				ok = ok && strings.HasPrefix(labels[k], strings.TrimSuffix(v, "*"))
				continue
			}
			ok = ok && labels[k] == v
		}
		if !ok {
			continue
		}
		var key []string
		for _, l := range by {
			key = append(key, labels[l])
		}
		v := s.GetCounter().GetValue() + s.GetGauge().GetValue() + s.GetUntyped().GetValue()
		out[strings.Join(key, " ")] += v
	}
	return out
}

// Total is Sum of every group.
func (m Metrics) Total(name string, match map[string]string) float64 {
	var t float64
	for _, v := range m.Sum(name, match) {
		t += v
	}
	return t
}

// APIServerMetrics scrapes the cluster's API server's /metrics.
func (c *Cluster) APIServerMetrics(ctx context.Context) (Metrics, error) {
	b, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape %s's API server: %w", c.Name, err)
	}
	return ParseMetrics(strings.NewReader(string(b)))
}

// PodMetrics scrapes http://<pod IP>:port/metrics of the first running pod
// in namespace ns with the label selector (a pod's metrics port, as a
// Prometheus pod monitor reaches it over the pod network).
func (c *Cluster) PodMetrics(ctx context.Context, ns, selector string, port int) (Metrics, error) {
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		url := "http://" + net.JoinHostPort(p.Status.PodIP, fmt.Sprint(port)) + "/metrics"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		rsp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			return nil, fmt.Errorf("scrape %s/%s: %w", ns, p.Name, err)
		}
		defer rsp.Body.Close()
		if rsp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("scrape %s/%s: %s", ns, p.Name, rsp.Status)
		}
		return ParseMetrics(rsp.Body)
	}
	return nil, fmt.Errorf("no running pod in %s matches %q", ns, selector)
}

// TreeCPU is the CPU time (user and system) of the processes pids and all
// their descendants, as /proc reports it now.
func TreeCPU(pids ...int) (time.Duration, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	all, err := fs.AllProcs()
	if err != nil {
		return 0, err
	}
	children := map[int][]int{}
	stats := map[int]procfs.ProcStat{}
	for _, p := range all {
		s, err := p.Stat()
		if err != nil {
			continue // exited since the listing
		}
		stats[p.PID] = s
		children[s.PPID] = append(children[s.PPID], p.PID)
	}
	var total float64
	seen := map[int]bool{}
	var walk func(int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		if s, ok := stats[pid]; ok {
			total += s.CPUTime()
		}
		for _, c := range children[pid] {
			walk(c)
		}
	}
	for _, pid := range pids {
		walk(pid)
	}
	return time.Duration(total * float64(time.Second)), nil
}
