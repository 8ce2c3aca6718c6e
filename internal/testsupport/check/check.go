// Package check is the real-controller suite's vocabulary for reading a
// running site (internal/sandbox/site): the kinds the scenarios follow,
// their conditions, the waits every scenario shares (a condition, the
// hub synced), asking Flux to reconcile now, and the few-line summaries a
// failed scenario prints first (what stopped, what still runs). It is
// test-only (internal/testsupport); the scenarios themselves are in
// test/e2e.
package check

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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
	m := findCondition(o, typ)
	s, _ := m["status"].(string)
	r, _ := m["reason"].(string)
	msg, _ := m["message"].(string)
	return s, r, msg
}

// findCondition is o's condition of type typ, nil when it has none.
func findCondition(o *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
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
	return TransitionTime(o, "Ready")
}

// TransitionTime is when an object's condition typ last changed (zero
// when it has none).
func TransitionTime(o *unstructured.Unstructured, typ string) time.Time {
	at, _ := time.Parse(time.RFC3339, fmt.Sprint(findCondition(o, typ)["lastTransitionTime"]))
	return at
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
// its ID, the managed resource that made it and its account.
func LedgerLine(r aws.Resource) string {
	return r.Kind + " " + r.ID + " (" + r.Owner + ") in " + r.Account
}

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

// HubPackages are the packages the tree installs on the hub: a Provider
// per service the hub's Provider objects name (the family package comes
// as a dependency, named by Crossplane) and the three Functions.
func HubPackages(manifests string) ([]string, error) {
	out := []string{"Function/function-patch-and-transform", "Function/function-auto-ready", "Function/function-workload-cluster"}
	services, err := site.ProviderServices(filepath.Join(manifests, "gitops-system", "infrastructure"))
	if err != nil {
		return nil, err
	}
	for _, svc := range services {
		if svc == "config" {
			out = append(out, "Provider/crossplane-contrib-provider-family-aws")
			continue
		}
		out = append(out, "Provider/provider-aws-"+svc)
	}
	return out, nil
}

// HubSynced waits for every Kustomization of the hub (the root and what it
// applies: those site.HubKustomizations lists in the tree at manifests and
// any other it adds; not the spokes' bootstrap steps) to become Ready and
// every package the tree names to be Installed and Healthy, then checks
// that none became Ready before what its dependsOn names. The error names
// each Kustomization that is not Ready with its reason and message.
func HubSynced(ctx context.Context, h *site.Hub, manifests string, timeout time.Duration) error {
	names, err := site.HubKustomizations(manifests)
	if err != nil {
		return err
	}
	packages, err := HubPackages(manifests)
	if err != nil {
		return err
	}
	readyAt := map[string]time.Time{}
	var ks map[string]*unstructured.Unstructured
	var missing []string
	err = kube.Poll(ctx, timeout, func() (bool, error) {
		if err := h.Exited(); err != nil {
			return false, err
		}
		var err error
		if ks, _, err = KustomizationStates(ctx, h); err != nil {
			return false, nil
		}
		// The hub's own: the root and what it applies (clusters/mgmt), not
		// the spokes' bootstrap steps the composition makes.
		for key, o := range ks {
			if o.GetName() != "flux-system" && o.GetLabels()["kustomize.toolkit.fluxcd.io/name"] != "flux-system" {
				delete(ks, key)
			}
		}
		missing = nil
		for _, name := range names {
			if ks["flux-system/"+name] == nil {
				missing = append(missing, "flux-system/"+name+" does not exist")
			}
		}
		// One time for the whole poll: Kustomizations first seen Ready in
		// the same poll are Ready at the same time, whatever the map order.
		polled := time.Now()
		for key, o := range ks {
			st, reason, msg := Condition(o, "Ready")
			if st == "True" {
				if readyAt[key].IsZero() {
					readyAt[key] = polled
				}
				continue
			}
			missing = append(missing, fmt.Sprintf("%s Ready=%s %s: %s", key, st, reason, msg))
		}
		installed, err := InstalledPackages(ctx, h)
		if err != nil {
			return false, nil
		}
		for _, p := range packages {
			if !installed[p] {
				missing = append(missing, p+" not Installed and Healthy")
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("hub not synced (%v):\n%s", err, strings.Join(missing, "\n"))
	}
	var order []string
	for key, o := range ks {
		deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn")
		for _, d := range deps {
			m, _ := d.(map[string]any)
			ns, _ := m["namespace"].(string)
			if ns == "" {
				ns = o.GetNamespace()
			}
			dep := ns + "/" + m["name"].(string)
			if readyAt[key].Before(readyAt[dep]) {
				order = append(order, fmt.Sprintf("%s Ready at %s, before its dependency %s (%s)", key,
					readyAt[key].Format(time.StampMilli), dep, readyAt[dep].Format(time.StampMilli)))
			}
		}
	}
	if len(order) > 0 {
		sort.Strings(order)
		return fmt.Errorf("dependsOn order not kept:\n%s", strings.Join(order, "\n"))
	}
	if u := h.Internet.Unexpected(); len(u) > 0 {
		return fmt.Errorf("requests to hosts no stand-in serves: %v", u)
	}
	return nil
}

// InstalledPackages are the Crossplane packages (Kind/name) whose
// Installed and Healthy conditions are True.
func InstalledPackages(ctx context.Context, h *site.Hub) (map[string]bool, error) {
	out := map[string]bool{}
	for _, r := range []string{"providers", "functions"} {
		l, err := h.Cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: r}).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			inst, _, _ := Condition(&l.Items[i], "Installed")
			healthy, _, _ := Condition(&l.Items[i], "Healthy")
			if inst == "True" && healthy == "True" {
				out[l.Items[i].GetKind()+"/"+l.Items[i].GetName()] = true
			}
		}
	}
	return out, nil
}

// RequestReconcile asks the hub's Flux to fetch the repository and apply
// workload-clusters now.
func RequestReconcile(t testing.TB, h *site.Hub) {
	t.Helper()
	RequestFluxReconcile(t, h.Cluster, FluxObject{GVR: GitRepositories, Name: "flux-system"}, FluxObject{GVR: Kustomizations, Name: "workload-clusters"})
}

// FluxObject names a Flux object in flux-system.
type FluxObject struct {
	GVR  schema.GroupVersionResource
	Name string
}

// RequestFluxReconcile asks Flux on c to reconcile objs now, as `flux
// reconcile` does (the reconcile.fluxcd.io/requestedAt annotation).
func RequestFluxReconcile(t testing.TB, c *kube.Cluster, objs ...FluxObject) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	for _, o := range objs {
		if _, err := c.Dynamic.Resource(o.GVR).Namespace("flux-system").Patch(context.Background(), o.Name,
			types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
