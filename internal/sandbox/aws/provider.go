package aws

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-fleet/eks-fleet/internal/contract/awsgroups"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
)

const (
	// finalizer is the managed reconciler's (crossplane-runtime v2.4.0
	// pkg/reconciler/managed/reconciler.go:47).
	finalizer = "finalizer.managedresource.crossplane.io"
	// errResolveReferences wraps a failed resolution (api.go:54, 249).
	errResolveReferences = "cannot resolve references"
	// errReconcileCreate, errReconcileUpdate and errReconcileDelete wrap a
	// failed external create, update and delete (reconciler.go:66, 67, 1544).
	errReconcileCreate = "create failed"
	errReconcileUpdate = "update failed"
	errReconcileDelete = "delete failed"
	// errReconcileObserve is crossplane-runtime's (reconciler.go:65).
	errReconcileObserve = "observe failed"
	// errRefuseForceNew is upjet's refusal of an update Terraform would
	// replace the resource for (upjet v2.3.0
	// pkg/controller/external_tfpluginsdk.go:719-753).
	errRefuseForceNew = "refuse to update the external resource because the following update requires replacing it"
)

// Provider plays the provider family's controllers: every managed
// resource of a kind whose CRD an installed and activated provider package
// created is reconciled against the Ledger.
type Provider struct {
	// Client reaches the cluster the providers run on.
	Client client.Client
	// Module is the provider-upjet-aws module directory at the pinned
	// release (its generated resolvers and external-name configuration).
	Module string
	// Account and Partition name the account the providers' pods run in
	// (their IRSA role's), whose resources Ledger holds.
	Account, Partition string
	Ledger             *Ledger
	// Accounts are the stand-in's other accounts, by ID: a managed
	// resource whose ProviderConfig assumes a role there (its
	// assumeRoleChain, each step authorized as STS would: Authorizer.
	// AssumeRole) is made in that account's ledger, as that role.
	Accounts map[string]*Ledger
	// ReadyAfter is how long AWS takes to make a resource of a Terraform
	// type available (absent: at once); SetReadyAfter changes it while the
	// stand-in runs.
	ReadyAfter map[string]time.Duration
	// UpdateTakes is how long AWS takes to finish an update of the
	// asyncUpdates arguments of a Terraform type (absent: at once), during
	// which it reports their old values.
	UpdateTakes map[string]time.Duration
	// AddonVersions are the EKS add-on versions AWS offers, per region and
	// Kubernetes version (what DescribeAddonVersions answers): CreateAddon
	// and UpdateAddon take no other.
	AddonVersions clusterinfo.AddonVersions
	// KindsEvery is how often the served kinds are read again (0: on
	// every reconcile). Listing every CRD, schemas included, each second
	// was most of the suite's own CPU; the CRDs' metadata is listed, and a
	// provider CRD read again only when it changed.
	KindsEvery time.Duration
	// IAM, when set, authorizes every AWS call the provider makes
	// (providerCalls) as the role its pods run as: a denied call fails
	// the managed resource with AWS's refusal and changes nothing.
	IAM *Authorizer

	kinds   []kindInfo
	kindsAt time.Time
	// configs are the ProviderConfigs last listed (with the kinds), by
	// name.
	configs map[string]*unstructured.Unstructured
	// crds are the provider CRDs last read, by name.
	crds map[string]crdKinds

	mu     sync.Mutex
	pkgs   map[string]*Package
	naming map[string]Naming
	errs   []string
	// passes counts Run's reconcile passes, lastPass when the last ended
	// (Passes).
	passes   int
	lastPass time.Time
	// refusals are the calls EKS refused by its rules (eksRefusal).
	refusals []string
	// faults fail the next calls that would change a kind in AWS; held
	// kinds are not reconciled at all (a provider stopped or restarting).
	faults map[string]*fault
	held   map[string]bool
	// role is the acting role last read (actingRole), at roleAt.
	role   string
	roleAt time.Time
	// written is the status each object's last status write sent, and
	// the resourceVersion the API server answered with (writeStatus).
	written map[string]writtenStatus
}

// writtenStatus is one status write: what was sent (as JSON reads it) and
// the object's resourceVersion after it.
type writtenStatus struct {
	resourceVersion string
	status          any
}

// fault is an injected AWS error: times calls fail with msg (times < 0:
// every call until cleared).
type fault struct {
	times int
	msg   string
}

// Fail makes the next times calls that would create or change a resource
// of kind ("<group>/<Kind>", e.g. eks.aws.upbound.io/NodeGroup) fail with
// the AWS error msg, as the provider reports a failed external call: the
// managed resource's Synced condition False with the error, the change
// retried on the next reconcile. times < 0 fails every call until
// Fail(kind, 0, "").
func (p *Provider) Fail(kind string, times int, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.faults == nil {
		p.faults = map[string]*fault{}
	}
	if times == 0 {
		delete(p.faults, kind)
		return
	}
	p.faults[kind] = &fault{times: times, msg: msg}
}

// Hold stops (hold true) or resumes reconciling kind, as when its
// provider's pod is down: nothing of that kind is observed or changed.
func (p *Provider) Hold(kind string, hold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = map[string]bool{}
	}
	p.held[kind] = hold
}

// failing returns the injected error for a call on kind, if any, and
// counts it.
func (p *Provider) failing(kind string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.faults[kind]
	if f == nil {
		return nil
	}
	if f.times > 0 {
		f.times--
		if f.times == 0 {
			delete(p.faults, kind)
		}
	}
	return fmt.Errorf("%s", f.msg)
}

// Pending is how many injected failures of kind are left (-1: every call).
func (p *Provider) Pending(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.faults[kind]; f != nil {
		return f.times
	}
	return 0
}

func (p *Provider) isHeld(kind string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[kind]
}

// kindInfo is one served managed kind.
type kindInfo struct {
	gvk     schema.GroupVersionKind
	service string
}

// Run reconciles until ctx ends, every interval.
func (p *Provider) Run(ctx context.Context, interval time.Duration) {
	for {
		if err := p.RunOnce(ctx); err != nil {
			p.note("%v", err)
		}
		p.mu.Lock()
		p.passes++
		p.lastPass = time.Now()
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// Passes is how many reconcile passes Run has finished and when the last
// ended: a stand-in whose passes stop has hung, which a failed scenario
// says.
func (p *Provider) Passes() (int, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.passes, p.lastPass
}

// Errors returns the stand-in's own failures (not AWS's refusals, which
// go to the resources' conditions).
func (p *Provider) Errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}

// SetReadyAfter sets how long AWS takes to make a resource of a Terraform
// type available, for resources created from now on.
func (p *Provider) SetReadyAfter(tf string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ReadyAfter == nil {
		p.ReadyAfter = map[string]time.Duration{}
	}
	p.ReadyAfter[tf] = d
}

// readyAfter is ReadyAfter[tf], read under the lock.
func (p *Provider) readyAfter(tf string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ReadyAfter[tf]
}

// Refusals returns the calls EKS refused by its rules (a cluster not
// active yet, Kubernetes or add-on versions), each with the managed
// resource and AWS's error.
func (p *Provider) Refusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refusals...)
}

// refuse records a refusal by EKS's rules.
func (p *Provider) refuse(u *unstructured.Unstructured, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusals = append(p.refusals, fmt.Sprintf("%s %s: %s", u.GetKind(), u.GetName(), msg))
}

func (p *Provider) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.errs) < 100 {
		p.errs = append(p.errs, fmt.Sprintf(format, args...))
	}
}

// RunOnce reconciles every managed resource once.
func (p *Provider) RunOnce(ctx context.Context) error {
	if p.naming == nil {
		n, err := ReadNaming(p.Module)
		if err != nil {
			return err
		}
		p.naming, p.pkgs = n, map[string]*Package{}
	}
	if p.kinds == nil || time.Since(p.kindsAt) >= p.KindsEvery {
		kinds, err := p.servedKinds(ctx)
		if err != nil {
			return err
		}
		configs, err := p.providerConfigs(ctx)
		if err != nil {
			return err
		}
		p.kinds, p.kindsAt, p.configs = kinds, time.Now(), configs
	}
	for _, k := range p.kinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		if err := p.Client.List(ctx, l); err != nil {
			continue
		}
		for i := range l.Items {
			if err := p.reconcile(ctx, k, &l.Items[i]); err != nil {
				p.note("%s %s: %v", k.gvk.Kind, l.Items[i].GetName(), err)
			}
		}
	}
	return nil
}

// servedKinds lists the managed kinds whose CRDs exist and are
// established: what the installed and activated provider packages serve.
// It lists the CRDs' metadata only and reads in full (schemas included,
// hundreds of kilobytes each) only a provider CRD it has not read at its
// current resourceVersion.
func (p *Provider) servedKinds(ctx context.Context) ([]kindInfo, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(crdGVK.GroupVersion().WithKind(crdGVK.Kind + "List"))
	if err := p.Client.List(ctx, l); err != nil {
		return nil, err
	}
	read := map[string]crdKinds{}
	var out []kindInfo
	for _, m := range l.Items {
		// A CRD is named <plural>.<group> (the API server refuses any
		// other name).
		if _, group, _ := strings.Cut(m.GetName(), "."); !awsgroups.ClusterScoped(group) {
			continue
		}
		c, ok := p.crds[m.GetName()]
		if !ok || c.resourceVersion != m.GetResourceVersion() {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(crdGVK)
			if err := p.Client.Get(ctx, client.ObjectKey{Name: m.GetName()}, crd); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			c = crdKinds{resourceVersion: crd.GetResourceVersion(), kinds: storedKinds(crd)}
		}
		read[m.GetName()] = c
		out = append(out, c.kinds...)
	}
	p.crds = read
	sort.Slice(out, func(i, j int) bool { return out[i].gvk.String() < out[j].gvk.String() })
	return out, nil
}

// crdGVK is the CustomResourceDefinition kind.
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// crdKinds is what one CRD, read at resourceVersion, serves.
type crdKinds struct {
	resourceVersion string
	kinds           []kindInfo
}

// storedKinds is the kind crd serves at its storage version, once it is
// established (none before).
func storedKinds(crd *unstructured.Unstructured) []kindInfo {
	if !established(crd) {
		return nil
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []kindInfo
	for _, v := range vs {
		m, _ := v.(map[string]any)
		if m["storage"] == true {
			out = append(out, kindInfo{gvk: schema.GroupVersionKind{Group: group, Version: m["name"].(string), Kind: kind},
				service: strings.TrimSuffix(group, awsgroups.Suffix)})
		}
	}
	return out
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func (p *Provider) pkg(k kindInfo) (*Package, error) {
	key := k.service + "/" + k.gvk.Version
	if pk, ok := p.pkgs[key]; ok {
		return pk, nil
	}
	pk, err := ReadPackage(p.Module, k.service, k.gvk.Version)
	if err != nil {
		return nil, err
	}
	p.pkgs[key] = pk
	return pk, nil
}

// recordExternalName persists u's annotations (its new external name) as
// crossplane-runtime's RetryingCriticalAnnotationUpdater does after a
// create (v2.4.0 pkg/reconciler/managed/api.go:283-301): on a conflict it
// reads the object again, puts the annotations back and retries, with
// retry.DefaultRetry, on any error but a cancelled context.
func recordExternalName(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	a := u.GetAnnotations()
	return retry.OnError(retry.DefaultRetry, func(err error) bool { return !errors.Is(err, context.Canceled) }, func() error {
		err := c.Update(ctx, u)
		if apierrors.IsConflict(err) {
			if getErr := c.Get(ctx, client.ObjectKeyFromObject(u), u); getErr != nil {
				return getErr
			}
			meta.AddAnnotations(u, a)
		}
		return err
	})
}

// reconcile is one pass of crossplane-runtime's managed reconciler
// (pkg/reconciler/managed/reconciler.go Reconcile) with the stand-in as
// the external client: deletion, finalizer, references, observe, then
// create or update.
func (p *Provider) reconcile(ctx context.Context, k kindInfo, u *unstructured.Unstructured) error {
	pk, err := p.pkg(k)
	if err != nil {
		return err
	}
	tf := pk.TerraformType[k.gvk.Kind]
	if tf == "" {
		return fmt.Errorf("no Terraform type for %s in the provider's %s/%s package", k.gvk.Kind, k.service, k.gvk.Version)
	}
	mg := &managed{Unstructured: *u}
	u = &mg.Unstructured
	before := u.DeepCopy()
	kindKey := k.gvk.Group + "/" + k.gvk.Kind
	if p.isHeld(kindKey) {
		return nil
	}

	// crossplane-runtime resolves references (not on deletion), then
	// connects, then observes, deletes or creates, adding its finalizer
	// just before a create or update (reconciler.go:1126, 1145, 1340):
	// a resource that cannot connect is never given one.
	if !meta.WasDeleted(u) {
		if err := p.resolve(ctx, pk.Refs[k.gvk.Kind], mg); err != nil {
			mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %w", errResolveReferences, err)))
			return p.writeStatus(ctx, before, u)
		}
		if !reflect.DeepEqual(before.Object["spec"], u.Object["spec"]) {
			// crossplane-runtime persists resolved references before it
			// observes (api.go:240-250, RetryingCriticalAnnotationUpdater).
			status := u.Object["status"]
			if err := p.Client.Update(ctx, u); err != nil {
				return err
			}
			restoreStatus(u, status)
			before = u.DeepCopy()
		}
	}
	s, err := p.session(ctx, u)
	if err != nil {
		if meta.WasDeleted(u) && !meta.FinalizerExists(u, finalizer) {
			return nil
		}
		mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %s: %w", errReconcileConnect, errTerraformSetup, err)))
		return p.writeStatus(ctx, before, u)
	}
	if meta.WasDeleted(u) {
		return p.delete(ctx, s, kindKey, tf, mg)
	}
	if !meta.FinalizerExists(u, finalizer) {
		meta.AddFinalizer(u, finalizer)
		if err := p.Client.Update(ctx, u); err != nil {
			return err
		}
		before = u.DeepCopy()
	}

	fp, _, _ := unstructured.NestedMap(u.Object, "spec", "forProvider")
	args := arguments(fp)
	id, name := p.identity(tf, u, args)
	r := (*Resource)(nil)
	if id != "" {
		r = s.ledger.get(kindKey, id)
	}
	if r == nil {
		if err := p.failing(kindKey); err != nil {
			mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %w", errReconcileCreate, err)))
			return p.writeStatus(ctx, before, u)
		}
		if msg := p.eksRefusal(s, tf, nil, args); msg != "" {
			p.refuse(u, msg)
			mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %s", errReconcileCreate, msg)))
			return p.writeStatus(ctx, before, u)
		}
		r = p.newResource(s, kindKey, tf, u.GetName(), name, args)
		if err := p.authorizeCalls(s, providerCalls[tf].create, tf, r, args, true, nil); err != nil {
			mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %w", errReconcileCreate, err)))
			return p.writeStatus(ctx, before, u)
		}
		s.ledger.put(r)
		if meta.GetExternalName(u) != r.Name {
			meta.SetExternalName(u, r.Name)
			status := u.Object["status"]
			if err := recordExternalName(ctx, p.Client, u); err != nil {
				// The resource exists in AWS and its name is lost: as
				// crossplane-runtime's external-create-* annotations
				// guard against, this is the one leak a provider can have.
				return fmt.Errorf("record external name %s: %w", r.Name, err)
			}
			restoreStatus(u, status)
			before = u.DeepCopy()
		}
	} else if err := p.authorizeCalls(s, providerCalls[tf].observe, tf, r, r.Attrs, false, nil); err != nil {
		mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %w", errReconcileObserve, err)))
		return p.writeStatus(ctx, before, u)
	} else if diff := changed(r.Attrs, args); len(diff) > 0 {
		if refused := p.immutable(tf, diff, r.Attrs, args); refused != "" {
			mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %s: %s", errReconcileUpdate, errRefuseForceNew, refused)))
			p.setAtProvider(u, r)
			return p.writeStatus(ctx, before, u)
		}
		if err := p.failing(kindKey); err != nil {
			mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %w", errReconcileUpdate, err)))
			p.setAtProvider(u, r)
			return p.writeStatus(ctx, before, u)
		}
		if msg := p.eksRefusal(s, tf, r, args); msg != "" {
			p.refuse(u, msg)
			mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %s", errReconcileUpdate, msg)))
			p.setAtProvider(u, r)
			return p.writeStatus(ctx, before, u)
		}
		if p.IAM != nil {
			calls, unmodelled := updateCalls(tf, diff)
			err := error(nil)
			if len(unmodelled) > 0 {
				err = fmt.Errorf("stand-in: no AWS call of %s is modelled for a change of %v", tf, unmodelled)
				p.note("%s %s: %v", kindKey, u.GetName(), err)
			} else {
				err = p.authorizeCalls(s, calls, tf, r, args, false, tagsOf(args))
			}
			if err != nil {
				mg.SetConditions(xpv2.ReconcileError(fmt.Errorf("%s: %w", errReconcileUpdate, err)))
				p.setAtProvider(u, r)
				return p.writeStatus(ctx, before, u)
			}
		}
		// What AWS reports while an asynchronous update runs.
		previous := map[string]any{}
		for _, k := range asyncUpdates[tf] {
			if p.UpdateTakes[tf] > 0 && slices.Contains(diff, k) {
				previous[k] = r.Reported(k, time.Now())
			}
		}
		s.ledger.update(kindKey, r.ID, args)
		if len(previous) > 0 {
			s.ledger.updating(kindKey, r.ID, previous, time.Now().Add(p.UpdateTakes[tf]))
		}
		r = s.ledger.get(kindKey, r.ID)
	}
	p.setAtProvider(u, r)
	if time.Now().Before(r.ReadyAt) {
		mg.SetConditions(xpv2.Creating(), xpv2.ReconcileSuccess())
	} else {
		mg.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess())
	}
	return p.writeStatus(ctx, before, u)
}

// writeStatus writes the status when it changed (so an unchanged resource
// does not wake its composite), compared as JSON: the status as read holds
// the API server's int64 and float64 where the stand-in sets Go ints.
//
// What the API server stores is what was sent less the fields the CRD's
// schema prunes (the stand-in reports a few the provider's schema lacks,
// such as a NAT gateway's arn), so the status read back can differ from
// the one sent for ever. A status equal to the one last sent, on an object
// still at the resourceVersion that write answered with, is not sent
// again: the API server would find nothing to store. Without this the
// stand-in sent such a status once a pass (a second), per resource: issue
// 45's benchmark counted PUT natgateways/status and accessentries/status
// at about one a second per spoke.
func (p *Provider) writeStatus(ctx context.Context, before, u *unstructured.Unstructured) error {
	status := jsonNorm(u.Object["status"])
	if reflect.DeepEqual(jsonNorm(before.Object["status"]), status) {
		return nil
	}
	key := u.GroupVersionKind().GroupKind().String() + "/" + u.GetName()
	p.mu.Lock()
	last, ok := p.written[key]
	p.mu.Unlock()
	if ok && last.resourceVersion == before.GetResourceVersion() && reflect.DeepEqual(last.status, status) {
		return nil
	}
	if err := p.Client.Status().Update(ctx, u); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written == nil {
		p.written = map[string]writtenStatus{}
	}
	p.written[key] = writtenStatus{resourceVersion: u.GetResourceVersion(), status: status}
	return nil
}

// resolve resolves every reference of the kind with crossplane-runtime's
// own APIResolver (what the generated ResolveReferences call), the
// extractors reproduced from the provider.
func (p *Provider) resolve(ctx context.Context, refs []Ref, mg *managed) error {
	r := reference.NewAPIResolver(p.Client, mg)
	for _, ref := range refs {
		for _, at := range expand(mg.Object, ref) {
			to := &unstructured.Unstructured{}
			to.SetGroupVersionKind(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind + "List"})
			// Pointers: the client decodes into them (their embedded
			// Unstructured's UnmarshalJSON).
			target := reference.To{Managed: &managed{Unstructured: *to}, List: &managedList{UnstructuredList: *list}}
			var sel *xpv2.Selector
			if err := decodeAt(mg.Object, at.selector, &sel); err != nil {
				return err
			}
			if ref.Multi {
				var cur []string
				var refsIn []xpv2.Reference
				if err := decodeAt(mg.Object, at.value, &cur); err != nil {
					return err
				}
				if err := decodeAt(mg.Object, at.reference, &refsIn); err != nil {
					return err
				}
				rsp, err := r.ResolveMultiple(ctx, reference.MultiResolutionRequest{
					CurrentValues: cur, References: refsIn, Selector: sel, To: target, Extract: extractFn(ref)})
				if err != nil {
					return fmt.Errorf("%s: %w", strings.Join(at.value, "."), err)
				}
				if err := encodeAt(mg.Object, at.value, rsp.ResolvedValues); err != nil {
					return err
				}
				if err := encodeAt(mg.Object, at.reference, rsp.ResolvedReferences); err != nil {
					return err
				}
				continue
			}
			var cur string
			var refIn *xpv2.Reference
			if err := decodeAt(mg.Object, at.value, &cur); err != nil {
				return err
			}
			if err := decodeAt(mg.Object, at.reference, &refIn); err != nil {
				return err
			}
			rsp, err := r.Resolve(ctx, reference.ResolutionRequest{
				CurrentValue: cur, Reference: refIn, Selector: sel, To: target, Extract: extractFn(ref)})
			if err != nil {
				return fmt.Errorf("%s: %w", strings.Join(at.value, "."), err)
			}
			if err := encodeAt(mg.Object, at.value, rsp.ResolvedValue); err != nil {
				return err
			}
			if err := encodeAt(mg.Object, at.reference, rsp.ResolvedReference); err != nil {
				return err
			}
		}
	}
	return nil
}

// extractFn reproduces the provider's extractors: reference.ExternalName
// (crossplane-runtime), upjet's ExtractResourceID (status.atProvider.id,
// pkg/resource/extractor.go:16) and ExtractParamPath, the provider's
// ARNExtractor (config/cluster/common/common.go:49, status.atProvider.arn)
// and eks ExternalNameIfClusterActive (apis/cluster/eks/v1beta2/reference.go:15).
func extractFn(ref Ref) reference.ExtractValueFn {
	return func(m resource.Managed) string {
		u := &m.(*managed).Unstructured
		switch {
		case ref.Extract == "external-name":
			if ref.ActiveOnly {
				if s, _, _ := unstructured.NestedString(u.Object, "status", "atProvider", "status"); s != "ACTIVE" {
					return ""
				}
			}
			return meta.GetExternalName(u)
		case ref.FromSpec:
			s, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", ref.Extract)
			return s
		default:
			s, _, _ := unstructured.NestedString(u.Object, "status", "atProvider", ref.Extract)
			return s
		}
	}
}

// location is one reference's value, reference and selector paths, with
// list indexes filled in.
type location struct{ value, reference, selector []string }

// expand fills the "*" of a reference's paths with every index present.
func expand(obj map[string]any, ref Ref) []location {
	star := -1
	for i, s := range ref.Value {
		if s == "*" {
			star = i
			break
		}
	}
	if star < 0 {
		return []location{{ref.Value, ref.Reference, ref.Selector}}
	}
	l, _, _ := unstructured.NestedSlice(obj, ref.Value[:star]...)
	var out []location
	for i := range l {
		idx := fmt.Sprint(i)
		sub := func(p []string) []string {
			q := append([]string(nil), p...)
			if star < len(q) && q[star] == "*" {
				q[star] = idx
			}
			return q
		}
		out = append(out, location{sub(ref.Value), sub(ref.Reference), sub(ref.Selector)})
	}
	return out
}

// walk returns the parent map of path's last element, creating maps when
// create is set; list indexes are decimal elements.
func walk(obj map[string]any, path []string, create bool) map[string]any {
	cur := any(obj)
	for _, s := range path[:len(path)-1] {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[s]
			if !ok || next == nil {
				if !create {
					return nil
				}
				next = map[string]any{}
				c[s] = next
			}
			cur = next
		case []any:
			var i int
			if _, err := fmt.Sscan(s, &i); err != nil || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

func decodeAt(obj map[string]any, path []string, into any) error {
	if len(path) == 0 {
		return nil
	}
	parent := walk(obj, path, false)
	if parent == nil {
		return nil
	}
	v, ok := parent[path[len(path)-1]]
	if !ok || v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

func encodeAt(obj map[string]any, path []string, v any) error {
	if len(path) == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return err
	}
	parent := walk(obj, path, true)
	if parent == nil {
		return fmt.Errorf("no parent for %s", strings.Join(path, "."))
	}
	key := path[len(path)-1]
	if plain == nil || plain == "" {
		delete(parent, key)
		return nil
	}
	if l, ok := plain.([]any); ok && len(l) == 0 {
		delete(parent, key)
		return nil
	}
	parent[key] = plain
	return nil
}

// arguments are spec.forProvider without the reference and selector
// fields (what the provider sends to AWS).
func arguments(fp map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range fp {
		if strings.HasSuffix(k, "Ref") || strings.HasSuffix(k, "Refs") || strings.HasSuffix(k, "Selector") {
			continue
		}
		if m, ok := v.(map[string]any); ok {
			v = arguments(m)
		}
		if l, ok := v.([]any); ok {
			cp := make([]any, len(l))
			for i, e := range l {
				if m, ok := e.(map[string]any); ok {
					e = arguments(m)
				}
				cp[i] = e
			}
			v = cp
		}
		out[k] = v
	}
	return out
}

// changed lists the top-level arguments whose values differ.
func changed(old, cur map[string]any) []string {
	var out []string
	for k, v := range cur {
		if !reflect.DeepEqual(jsonNorm(old[k]), jsonNorm(v)) {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func jsonNorm(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// identity is the resource's ID in the ledger (empty: not created yet)
// and its name in AWS.
func (p *Provider) identity(tf string, u *unstructured.Unstructured, args map[string]any) (id, name string) {
	ext := meta.GetExternalName(u)
	switch p.naming[tf] {
	case ByName:
		if ext == "" {
			ext = u.GetName()
		}
		return ext, ext
	case ByNameInTemplate:
		if ext == "" {
			ext = u.GetName()
		}
		return templatedID(tf, args, ext), ext
	default:
		return ext, ext
	}
}

// templatedID builds the ID of a ByNameInTemplate type.
func templatedID(tf string, args map[string]any, name string) string {
	if c, ok := args["clusterName"].(string); ok {
		return c + ":" + name
	}
	return name
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// restoreStatus puts back the status an Update replaced with the server's
// (an absent one stays absent: a nil status would make every later
// unstructured.SetNested* under it fail).
func restoreStatus(u *unstructured.Unstructured, status any) {
	if status == nil {
		delete(u.Object, "status")
		return
	}
	u.Object["status"] = status
}
