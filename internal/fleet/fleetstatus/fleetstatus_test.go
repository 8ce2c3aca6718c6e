package fleetstatus

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A claim whose steps are reconciling again, or waiting for a new commit
// to walk the chain, is healthy; a step whose own apply failed is not.
func TestHealthy(t *testing.T) {
	step := func(applied, status, reason string) Kustomization {
		u := &unstructured.Unstructured{Object: map[string]any{"kind": "Kustomization", "metadata": map[string]any{"name": "pay-flux"},
			"status": map[string]any{"lastAppliedRevision": applied, "conditions": []any{
				map[string]any{"type": "Ready", "status": status, "reason": reason}}}}}
		return kust(u, time.Now())
	}
	for name, tc := range map[string]struct {
		claimReady string
		steps      []Kustomization
		want       bool
	}{
		"all ready":                  {"True", []Kustomization{step("main@sha1:1", "True", "ReconciliationSucceeded")}, true},
		"a step reconciling again":   {"True", []Kustomization{step("main@sha1:1", "Unknown", "Progressing")}, true},
		"a commit walking the chain": {"True", []Kustomization{step("main@sha1:1", "False", "DependencyNotReady")}, true},
		"a step never applied":       {"True", []Kustomization{step("", "Unknown", "Progressing")}, false},
		"a step failing":             {"True", []Kustomization{step("main@sha1:1", "False", "ReconciliationFailed")}, false},
		"the claim not ready":        {"False", []Kustomization{step("main@sha1:1", "True", "ReconciliationSucceeded")}, false},
	} {
		s := &Status{Clusters: []Cluster{{Name: "pay", Ready: tc.claimReady, Synced: "True", Bootstrap: tc.steps}}}
		if got := s.Healthy(); got != tc.want {
			t.Errorf("%s: Healthy() = %v, want %v", name, got, tc.want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	for name, tc := range map[string]struct {
		reason  string
		args    []string
		want    int
		wantErr bool
	}{
		"unset":            {reason: "the flag's default", args: []string{"--watch-all-namespaces"}, want: 4},
		"set":              {reason: "the hub stack's fluxConcurrency", args: []string{"--concurrent=60"}, want: 60},
		"profile then set": {reason: "the last wins, as the FluxInstance appends after the profile", args: []string{"--concurrent=20", "--log-level=info", "--concurrent=60"}, want: 60},
		"separate value":   {reason: "pflag also takes the value as the next argument", args: []string{"--concurrent", "8"}, want: 8},
		"not a number":     {reason: "a bad value is said, not taken as the default", args: []string{"--concurrent=many"}, wantErr: true},
		"zero":             {reason: "no worker is no count", args: []string{"--concurrent=0"}, wantErr: true},
	} {
		got, err := concurrent(tc.args)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s (%s): concurrent(%q) = %d, %v; want %d, error %v", name, tc.reason, tc.args, got, err, tc.want, tc.wantErr)
		}
	}
}
