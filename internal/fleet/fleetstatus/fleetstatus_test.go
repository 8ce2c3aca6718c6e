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
