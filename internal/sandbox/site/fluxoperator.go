package site

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// FluxInstanceFinalizer is the Flux Operator's finalizer on a FluxInstance
// (flux-operator v0.59.0 api/v1/common_types.go:27, Finalizer).
const FluxInstanceFinalizer = "fluxcd.controlplane.io/finalizer"

var (
	fluxInstanceGVR = schema.GroupVersionResource{Group: "fluxcd.controlplane.io", Version: "v1", Resource: "fluxinstances"}
	crdGVR          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// FluxOperator plays the Flux Operator's FluxInstance controller on one
// cluster, for what the hub's program relies on (flux-operator v0.59.0
// internal/controller/fluxinstance_controller.go and
// fluxinstance_uninstaller.go): it adds its finalizer first (Reconcile,
// lines 101-105); it installs what the instance asks for (FluxInstallation,
// applied server-side) and reports Ready=True with the instance's
// generation, which the program's `pulumi.com/waitFor: condition=Ready`
// waits for; it installs again when the spec's generation changes; and when
// the instance is deleted it uninstalls as the operator does (uninstall,
// lines 28-110): the controllers' Deployments deleted and the controllers
// stopped (OnUninstall), the finalizers of every Flux custom resource
// removed, every installed object deleted (the CRDs, and with them every
// Flux object), the CRDs waited for, then its own finalizer removed. It is
// a stand-in because the operator cannot be built here (FluxInstallation
// says why). Not modelled: the operator's own Deployment (its chart is
// installed, its container does not run), drift correction, status fields
// other than the Ready condition (with its observedGeneration) and
// lastAppliedRevision, and the migration of stored versions.
type FluxOperator struct {
	c *kube.Cluster
	// OnInstall is called with what was installed, before the instance is
	// reported Ready: the suite runs the Flux controllers as local
	// processes, which an applied Deployment does not start.
	OnInstall func(ctx context.Context, objs []*unstructured.Unstructured) error
	// OnUninstall is called when an instance's Deployments are deleted:
	// a deleted Deployment does not stop those processes either.
	OnUninstall func()

	mu        sync.Mutex
	installed map[types.UID][]*unstructured.Unstructured
	held      bool
	last      error
	errs      []string
	cancel    context.CancelFunc
	done      chan struct{}
	log       *os.File
}

// NewFluxOperator makes the stand-in for c; Start runs it. It logs to
// c.Dir.
func NewFluxOperator(c *kube.Cluster) *FluxOperator {
	return &FluxOperator{c: c, installed: map[types.UID][]*unstructured.Unstructured{}, done: make(chan struct{})}
}

// Start runs the stand-in until Stop.
func (o *FluxOperator) Start(ctx context.Context) error {
	log, err := os.Create(filepath.Join(o.c.Dir, "flux-operator.log"))
	if err != nil {
		return err
	}
	o.log = log
	ctx, o.cancel = context.WithCancel(ctx)
	go o.run(ctx)
	return nil
}

// Stop stops the stand-in.
func (o *FluxOperator) Stop() {
	if o.cancel == nil {
		return
	}
	o.cancel()
	<-o.done
	o.log.Close()
}

// Installed is what the stand-in installed for the instances that exist.
func (o *FluxOperator) Installed() []*unstructured.Unstructured {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*unstructured.Unstructured
	for _, objs := range o.installed {
		out = append(out, objs...)
	}
	return out
}

// Hold stops (true) or resumes (false) reconciling, as an operator that is
// not running yet or is restarting.
func (o *FluxOperator) Hold(held bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = held
}

// Errors are every failed reconcile's error, timestamped.
func (o *FluxOperator) Errors() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.errs...)
}

// Err is the last reconcile's error, if it failed.
func (o *FluxOperator) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

func (o *FluxOperator) run(ctx context.Context) {
	defer close(o.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		o.mu.Lock()
		held := o.held
		o.mu.Unlock()
		var err error
		if !held {
			err = o.reconcileAll(ctx)
		}
		o.mu.Lock()
		o.last = err
		if err != nil && ctx.Err() == nil {
			line := fmt.Sprintf("%s %v", time.Now().Format("15:04:05"), err)
			o.errs = append(o.errs, line)
			fmt.Fprintln(o.log, line)
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (o *FluxOperator) reconcileAll(ctx context.Context) error {
	l, err := o.c.Dynamic.Resource(fluxInstanceGVR).Namespace("").List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil // the operator's chart (and its CRD) is not installed yet
	}
	if err != nil {
		return err
	}
	for i := range l.Items {
		if err := o.reconcile(ctx, &l.Items[i]); err != nil {
			return fmt.Errorf("FluxInstance %s/%s: %w", l.Items[i].GetNamespace(), l.Items[i].GetName(), err)
		}
	}
	return nil
}

func (o *FluxOperator) reconcile(ctx context.Context, fi *unstructured.Unstructured) error {
	res := o.c.Dynamic.Resource(fluxInstanceGVR).Namespace(fi.GetNamespace())
	if fi.GetDeletionTimestamp() != nil {
		return o.uninstall(ctx, fi)
	}
	if !slices.Contains(fi.GetFinalizers(), FluxInstanceFinalizer) {
		fi.SetFinalizers(append(fi.GetFinalizers(), FluxInstanceFinalizer))
		_, err := res.Update(ctx, fi, metav1.UpdateOptions{FieldManager: "flux-operator"})
		return err
	}
	var observed int64
	conds, _, _ := unstructured.NestedSlice(fi.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			observed, _ = m["observedGeneration"].(int64)
		}
	}
	o.mu.Lock()
	_, have := o.installed[fi.GetUID()]
	o.mu.Unlock()
	if have && observed == fi.GetGeneration() {
		return nil
	}
	objs, err := FluxInstallation(ctx, fi)
	if err != nil {
		return err
	}
	if err := o.c.Apply(ctx, "flux-operator", objs...); err != nil {
		return err
	}
	if o.OnInstall != nil {
		if err := o.OnInstall(ctx, objs); err != nil {
			return err
		}
	}
	o.mu.Lock()
	o.installed[fi.GetUID()] = objs
	o.mu.Unlock()
	// api/v1/fluxinstance_types.go:329 FluxInstanceStatus: the Ready
	// condition with its observedGeneration, lastAppliedRevision.
	now := metav1.Now().UTC().Format(time.RFC3339)
	version, _, _ := unstructured.NestedString(fi.Object, "spec", "distribution", "version")
	status := map[string]any{
		"lastAppliedRevision": "v" + version,
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
			"message": "Reconciliation finished (e2e operator stand-in)", "observedGeneration": fi.GetGeneration(), "lastTransitionTime": now,
		}},
	}
	if err := unstructured.SetNestedField(fi.Object, status, "status"); err != nil {
		return err
	}
	_, err = res.UpdateStatus(ctx, fi, metav1.UpdateOptions{FieldManager: "flux-operator"})
	fmt.Fprintf(o.log, "%s installed %d objects for generation %d\n", now, len(objs), fi.GetGeneration())
	return err
}

// uninstall follows the operator's uninstall, step by step.
func (o *FluxOperator) uninstall(ctx context.Context, fi *unstructured.Unstructured) error {
	o.mu.Lock()
	objs := o.installed[fi.GetUID()]
	o.mu.Unlock()
	del := func(u *unstructured.Unstructured) error {
		err := o.c.Client.Delete(ctx, u.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground))
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return err
	}
	// Step 1: the controllers' Deployments, so that they are not running
	// while their objects' finalizers go.
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			if err := del(u); err != nil {
				return err
			}
		}
	}
	if o.OnUninstall != nil {
		o.OnUninstall()
	}
	// Step 2: the finalizers of every Flux custom resource.
	var crds []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
		}
	}
	for _, crd := range crds {
		if err := o.removeFinalizers(ctx, crd); err != nil {
			return err
		}
	}
	// Step 3: everything installed (the CRDs take every Flux object).
	for _, u := range objs {
		if err := del(u); err != nil {
			return err
		}
	}
	// Step 4: the CRDs gone.
	err := kube.Poll(ctx, 5*time.Minute, func() (bool, error) {
		for _, crd := range crds {
			_, err := o.c.Dynamic.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("uninstall: the Flux CRDs are not gone: %w", err)
	}
	// Step 5: its own finalizer.
	fi.SetFinalizers(slices.DeleteFunc(fi.GetFinalizers(), func(f string) bool { return f == FluxInstanceFinalizer }))
	if _, err := o.c.Dynamic.Resource(fluxInstanceGVR).Namespace(fi.GetNamespace()).Update(ctx, fi, metav1.UpdateOptions{FieldManager: "flux-operator"}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	o.mu.Lock()
	delete(o.installed, fi.GetUID())
	o.mu.Unlock()
	fmt.Fprintf(o.log, "%s uninstalled %d objects\n", time.Now().Format(time.RFC3339), len(objs))
	return nil
}

// removeFinalizers empties the finalizers of every object of a CRD.
func (o *FluxOperator) removeFinalizers(ctx context.Context, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range vs {
		m, _ := v.(map[string]any)
		if st, _ := m["storage"].(bool); st {
			version, _ = m["name"].(string)
		}
	}
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	l, err := o.c.Dynamic.Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, u := range l.Items {
		if len(u.GetFinalizers()) == 0 {
			continue
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, err := o.c.Dynamic.Resource(gvr).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
