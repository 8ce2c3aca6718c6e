// Package check is the real-controller suite's vocabulary for reading a
// running site (internal/sandbox/site): the kinds the scenarios follow,
// their conditions, a wait on one condition, and the few-line summaries a
// failed scenario prints first (what stopped, what still runs). It is
// test-only (internal/testsupport); the scenarios themselves are in
// test/e2e.
package check

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
)

// The kinds the scenarios read.
var (
	Kustomizations     = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	GitRepositories    = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
	HelmReleases       = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}
	HelmCharts         = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmcharts"}
	Claims             = schema.GroupVersionResource{Group: "platform.eksfleet.io", Version: "v1alpha1", Resource: "workloadclusters"}
	AppInfrastructures = schema.GroupVersionResource{Group: "platform.eksfleet.io", Version: "v1alpha1", Resource: "appinfrastructures"}
)

// Condition returns the status, reason and message of an object's
// condition typ (empty strings when it has none).
func Condition(o *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "", "", ""
}

// IsTrue accepts a condition that is True (WaitCondition's ok).
func IsTrue(status, _ string) bool { return status == "True" }

// WaitCondition waits until condition typ of the object name (gvr, in
// namespace ns) on cluster c satisfies ok, and returns the last state seen
// ("<name> <typ>=<status> <reason>: <message>", or the read error).
func WaitCondition(ctx context.Context, c *kube.Cluster, gvr schema.GroupVersionResource, ns, name, typ string, timeout time.Duration,
	ok func(status, reason string) bool) (string, error) {
	var last string
	err := kube.Poll(ctx, timeout, func() (bool, error) {
		o, err := c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		st, reason, msg := Condition(o, typ)
		last = fmt.Sprintf("%s %s=%s %s: %s", name, typ, st, reason, msg)
		return ok(st, reason), nil
	})
	return last, err
}

// ReadyTransition is when the Ready condition last changed.
func ReadyTransition(o *unstructured.Unstructured) time.Time {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			at, _ := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
			return at
		}
	}
	return time.Time{}
}

// ObservedGeneration is an object's status.observedGeneration.
func ObservedGeneration(o *unstructured.Unstructured) int64 {
	g, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
	return g
}

// InventorySize is how many objects a Kustomization's inventory lists
// (what it applied, and prunes at deletion).
func InventorySize(o *unstructured.Unstructured) int {
	entries, _, _ := unstructured.NestedSlice(o.Object, "status", "inventory", "entries")
	return len(entries)
}

// LedgerLine names an account resource in the suite's messages: its kind,
// its ID and the managed resource that made it.
func LedgerLine(r aws.Resource) string { return r.Kind + " " + r.ID + " (" + r.Owner + ")" }

// KustomizationStates lists every Kustomization on the hub by
// namespace/name, and one sorted line each with its Ready condition and
// whether it is being deleted.
func KustomizationStates(ctx context.Context, h *site.Hub) (map[string]*unstructured.Unstructured, string, error) {
	l, err := h.Cluster.Dynamic.Resource(Kustomizations).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	out := map[string]*unstructured.Unstructured{}
	var lines []string
	for i := range l.Items {
		o := &l.Items[i]
		out[o.GetNamespace()+"/"+o.GetName()] = o
		s, r, m := Condition(o, "Ready")
		del := ""
		if o.GetDeletionTimestamp() != nil {
			del = " (deleting)"
		}
		lines = append(lines, fmt.Sprintf("%s/%s%s Ready=%s %s: %s", o.GetNamespace(), o.GetName(), del, s, r, m))
	}
	sort.Strings(lines)
	return out, strings.Join(lines, "\n"), nil
}

// KustomizationList is KustomizationStates' lines, or the read error.
func KustomizationList(ctx context.Context, h *site.Hub) string {
	_, lines, err := KustomizationStates(ctx, h)
	if err != nil {
		return err.Error()
	}
	return lines
}

// ClaimStates lists each claim on the hub with its deletion and its Ready
// and Synced conditions, for a failed teardown.
func ClaimStates(ctx context.Context, h *site.Hub) string {
	l, err := h.Cluster.Dynamic.Resource(Claims).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for i := range l.Items {
		o := &l.Items[i]
		line := o.GetName()
		if ts := o.GetDeletionTimestamp(); ts != nil {
			line += fmt.Sprintf(" (deleting since %s, finalizers %v)", ts.UTC().Format(time.TimeOnly), o.GetFinalizers())
		}
		for _, typ := range []string{"Ready", "Synced"} {
			st, reason, msg := Condition(o, typ)
			line += fmt.Sprintf(" %s=%s %s: %s", typ, st, reason, msg)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// HubHealth says in a few lines whether what a hub runs still runs (its
// Flux controllers, Crossplane's pods, the stand-in AWS's passes and last
// error, the IAM evaluator's counts), for a failed wait to print first.
func HubHealth(h *site.Hub) string {
	var out []string
	if err := h.Exited(); err != nil {
		out = append(out, "Flux: "+err.Error())
	} else {
		out = append(out, "Flux: every controller runs")
	}
	pods := h.Pods.Pods("crossplane-system", "")
	var states []string
	for _, pod := range slices.Sorted(maps.Keys(pods)) {
		for _, p := range pods[pod] {
			state := "not running"
			if pid := p.PID(); pid != 0 {
				state = fmt.Sprintf("pid %d", pid)
			}
			states = append(states, fmt.Sprintf("%s/%s %s", pod, p.Name, state))
		}
	}
	out = append(out, "crossplane-system: "+strings.Join(states, ", "))
	n, last := h.AWS.Passes()
	errs := h.AWS.Errors()
	line := fmt.Sprintf("stand-in AWS: %d passes, the last ended %s ago; %d errors", n, time.Since(last).Truncate(time.Second), len(errs))
	if len(errs) > 0 {
		line += ", the last: " + errs[len(errs)-1]
	}
	out = append(out, line)
	if h.AWS.IAM != nil {
		asked, evaluated := h.AWS.IAM.Stats()
		out = append(out, fmt.Sprintf("IAM: %d calls authorized, %d evaluated, %d denied", asked, evaluated, len(h.AWS.IAM.Denied())))
	}
	return strings.Join(out, "\n")
}

// Describe lists the hub's Flux sources and releases, Crossplane's
// packages and XRDs, and the Kustomizations, each with its conditions.
func Describe(ctx context.Context, h *site.Hub) string {
	var lines []string
	for _, gvr := range []schema.GroupVersionResource{
		GitRepositories,
		{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"},
		{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"},
		HelmCharts,
		HelmReleases,
		{Group: "pkg.crossplane.io", Version: "v1", Resource: "providers"},
		{Group: "pkg.crossplane.io", Version: "v1", Resource: "functions"},
		{Group: "pkg.crossplane.io", Version: "v1", Resource: "providerrevisions"},
		{Group: "pkg.crossplane.io", Version: "v1", Resource: "functionrevisions"},
		{Group: "apiextensions.crossplane.io", Version: "v1", Resource: "compositeresourcedefinitions"},
		Kustomizations,
	} {
		l, err := h.Cluster.Dynamic.Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: %v", gvr.Resource, err))
			continue
		}
		for i := range l.Items {
			o := &l.Items[i]
			var conds []string
			for _, typ := range []string{"Ready", "Installed", "Healthy", "Established", "Offered"} {
				if st, r, m := Condition(o, typ); st != "" {
					conds = append(conds, fmt.Sprintf("%s=%s %s: %s", typ, st, r, m))
				}
			}
			lines = append(lines, fmt.Sprintf("%s %s/%s %s", o.GetKind(), o.GetNamespace(), o.GetName(), strings.Join(conds, "; ")))
		}
	}
	return strings.Join(lines, "\n")
}
