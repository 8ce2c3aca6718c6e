package kbuild

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Hub is the cluster name of the management cluster in a walk.
const Hub = "hub"

// Built is one object a Kustomization produced.
type Built struct {
	Object *unstructured.Unstructured
	// Origin names what produced it: "Kustomization ns/name (path)" or the
	// caller's origin for objects added with AddObjects.
	Origin string
	// Path is the Kustomization's spec.path (empty for added objects).
	Path string
	// Cluster is where the object is applied: Hub, or the cluster reached
	// through a kubeConfig ("<namespace>/<kubeconfig ref name>").
	Cluster string
}

// Failure is a Kustomization that did not build.
type Failure struct {
	Kustomization string // cluster: ns/name
	// Cluster and Name (namespace/name) split Kustomization.
	Cluster, Name string
	Path          string
	Err           error
}

type item struct {
	ks      *kustomizev1.Kustomization
	cluster string
	origin  string
}

// Walker builds a Flux Kustomization graph the way the controllers walk it:
// each Kustomization is built, the Kustomizations it produces are built in
// turn (on the cluster they are applied to), ConfigMaps and Secrets it
// produces become substituteFrom sources on that cluster, and GitRepositories
// pointing at this repository become sources. A Kustomization whose
// substituteFrom or source is produced by another one waits for it.
type Walker struct {
	SourceRoot string
	GitURL     string
	// Cache holds kustomize builds by path and build-relevant spec (see
	// Cache); NewWalker sets one, nil builds every Kustomization from
	// scratch. The result is the same either way.
	Cache *Cache
	// Derive, when set, gives the objects a controller writes from an
	// object the walk applies (External Secrets' Secret from an
	// ExternalSecret). They join the walk on the same cluster, as if
	// applied: a Secret becomes a substituteFrom source there.
	Derive func(Built) []*unstructured.Unstructured

	Results  []Built
	Failures []Failure
	// Skipped lists Kustomizations whose source is not this repository.
	Skipped []string
	// Kustomizations lists every Kustomization seen, by cluster.
	Kustomizations []Built

	queue   []item
	waiting []item
	seen    map[string]bool
	vars    map[string]map[string]client.Object // cluster -> kind/ns/name
	invalid map[string]map[string]error         // cluster -> kind/ns/name
	sources map[string]map[string]string        // cluster -> ns/name -> url ("" = this repo)
	clients map[string]varClient                // see VarClient
	// clientOrder is the insertion order of clients, oldest first.
	clientOrder []string
}

// NewWalker returns a walker over the checkout at sourceRoot whose Git URL
// (as GitRepositories name it) is gitURL.
func NewWalker(sourceRoot, gitURL string) *Walker {
	return &Walker{
		SourceRoot: sourceRoot,
		GitURL:     gitURL,
		Cache:      NewCache(),
		seen:       map[string]bool{},
		vars:       map[string]map[string]client.Object{},
		invalid:    map[string]map[string]error{},
		sources:    map[string]map[string]string{},
	}
}

// AddSource declares a GitRepository on cluster that serves this repository
// (the hub's flux-system GitRepository is made outside the tree).
func (w *Walker) AddSource(cluster, namespace, name string) {
	if w.sources[cluster] == nil {
		w.sources[cluster] = map[string]string{}
	}
	w.sources[cluster][namespace+"/"+name] = ""
}

// AddVars puts ConfigMaps or Secrets on cluster (e.g. the hub's cluster-info).
func (w *Walker) AddVars(cluster string, objs ...client.Object) {
	if w.vars[cluster] == nil {
		w.vars[cluster] = map[string]client.Object{}
	}
	for _, o := range objs {
		kind := "ConfigMap"
		if _, ok := o.(*corev1.Secret); ok {
			kind = "Secret"
		}
		w.vars[cluster][kind+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
}

// Enqueue schedules ks, which lives on cluster, to be built.
func (w *Walker) Enqueue(cluster string, ks *kustomizev1.Kustomization, origin string) {
	key := cluster + ": " + ks.Namespace + "/" + ks.Name
	if w.seen[key] {
		w.Failures = append(w.Failures, Failure{Kustomization: key, Cluster: cluster, Name: ks.Namespace + "/" + ks.Name, Path: ks.Spec.Path,
			Err: fmt.Errorf("Kustomization defined twice (again by %s)", origin)})
		return
	}
	w.seen[key] = true
	w.queue = append(w.queue, item{ks: ks, cluster: cluster, origin: origin})
}

// AddObjects registers objects applied to cluster by something other than
// a Kustomization (e.g. composed by Crossplane): their ConfigMaps, Secrets,
// GitRepositories and Kustomizations take part in the walk.
func (w *Walker) AddObjects(cluster, origin string, objs []*unstructured.Unstructured) {
	for _, o := range objs {
		w.register(Built{Object: o, Origin: origin, Cluster: cluster})
	}
}

func (w *Walker) register(b Built) {
	o := b.Object
	w.Results = append(w.Results, b)
	if w.Derive != nil {
		defer func() {
			for _, d := range w.Derive(b) {
				w.register(Built{Object: d, Origin: b.Origin + ", written for " + o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName(),
					Path: b.Path, Cluster: b.Cluster})
			}
		}()
	}
	gvk := o.GroupVersionKind()
	switch {
	case gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret"):
		obj, err := VarObject(o)
		if err != nil {
			// The API server would reject it, so it never exists.
			if w.invalid[b.Cluster] == nil {
				w.invalid[b.Cluster] = map[string]error{}
			}
			w.invalid[b.Cluster][gvk.Kind+"/"+o.GetNamespace()+"/"+o.GetName()] = err
		} else if obj != nil {
			w.AddVars(b.Cluster, obj)
		}
	case gvk.Group == "source.toolkit.fluxcd.io" && gvk.Kind == "GitRepository":
		url, _, _ := unstructured.NestedString(o.Object, "spec", "url")
		if w.sources[b.Cluster] == nil {
			w.sources[b.Cluster] = map[string]string{}
		}
		key := o.GetNamespace() + "/" + o.GetName()
		if url == w.GitURL {
			url = ""
		}
		w.sources[b.Cluster][key] = url
	case gvk == kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind):
		ks := &kustomizev1.Kustomization{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ks); err != nil {
			w.Failures = append(w.Failures, Failure{Kustomization: b.Cluster + ": " + o.GetNamespace() + "/" + o.GetName(),
				Cluster: b.Cluster, Name: o.GetNamespace() + "/" + o.GetName(),
				Err: fmt.Errorf("decode Kustomization: %w", err)})
			return
		}
		w.Kustomizations = append(w.Kustomizations, b)
		w.Enqueue(b.Cluster, ks, b.Origin)
	}
}

// TargetCluster is where ks applies its objects: its own cluster, or the
// one its kubeConfig reaches.
func TargetCluster(cluster string, ks *kustomizev1.Kustomization) string {
	if kc := ks.Spec.KubeConfig; kc != nil {
		if kc.ConfigMapRef != nil {
			return ks.Namespace + "/" + kc.ConfigMapRef.Name
		}
		if kc.SecretRef != nil {
			return ks.Namespace + "/" + kc.SecretRef.Name
		}
	}
	return cluster
}

// missing lists what ks needs that its cluster does not have yet.
func (w *Walker) missing(it item) []string {
	var out []string
	ks := it.ks
	if ks.Spec.PostBuild != nil {
		for _, ref := range ks.Spec.PostBuild.SubstituteFrom {
			if ref.Optional {
				continue
			}
			k := ref.Kind + "/" + ks.Namespace + "/" + ref.Name
			if _, ok := w.vars[it.cluster][k]; !ok {
				msg := fmt.Sprintf("substituteFrom %s %s/%s", ref.Kind, ks.Namespace, ref.Name)
				if err := w.invalid[it.cluster][k]; err != nil {
					msg += fmt.Sprintf(" (built, but invalid so never created: %v)", err)
				}
				out = append(out, msg)
			}
		}
	}
	if _, ok := w.source(it); !ok {
		out = append(out, fmt.Sprintf("sourceRef %s", sourceKey(ks)))
	}
	return out
}

func sourceKey(ks *kustomizev1.Kustomization) string {
	ns := ks.Spec.SourceRef.Namespace
	if ns == "" {
		ns = ks.Namespace
	}
	return ks.Spec.SourceRef.Kind + " " + ns + "/" + ks.Spec.SourceRef.Name
}

func (w *Walker) source(it item) (string, bool) {
	ref := it.ks.Spec.SourceRef
	if ref.Kind != "GitRepository" {
		return ref.Kind, true // not a Git source: skipped when built
	}
	ns := ref.Namespace
	if ns == "" {
		ns = it.ks.Namespace
	}
	url, ok := w.sources[it.cluster][ns+"/"+ref.Name]
	return url, ok
}

// VarClient is the client ks's post-build substitution reads its
// substituteFrom ConfigMaps and Secrets through, on cluster. It holds only
// the objects ks refers to: substitution looks up nothing else, and a
// client with every ConfigMap of a hub with many spokes would cost time
// in proportion to the fleet for every build. Kustomizations that refer
// to the same objects share one client (it is only read).
func (w *Walker) VarClient(cluster string, ks *kustomizev1.Kustomization) client.Client {
	var objs []client.Object
	var key strings.Builder
	key.WriteString(cluster)
	if ks.Spec.PostBuild != nil {
		added := map[string]bool{}
		for _, ref := range ks.Spec.PostBuild.SubstituteFrom {
			k := ref.Kind + "/" + ks.Namespace + "/" + ref.Name
			if o, ok := w.vars[cluster][k]; ok && !added[k] {
				added[k] = true
				objs = append(objs, o)
				// The object itself identifies the content: AddVars
				// replaces, never modifies, a registered object (the
				// cache entry keeps it alive, so its address is not
				// reused while the key exists).
				fmt.Fprintf(&key, "\x00%s@%p", k, o)
			}
		}
	}
	k := key.String()
	if e, ok := w.clients[k]; ok {
		return e.client
	}
	c := NewVarClient(objs...)
	if w.clients == nil {
		w.clients = map[string]varClient{}
	}
	// Bounded: each spoke has its own variables, and its Kustomizations
	// are built together; keeping every spoke's client would hold memory
	// in proportion to the fleet for nothing.
	if len(w.clientOrder) >= maxVarClients {
		delete(w.clients, w.clientOrder[0])
		w.clientOrder = w.clientOrder[1:]
	}
	w.clients[k] = varClient{client: c, objs: objs}
	w.clientOrder = append(w.clientOrder, k)
	return c
}

// maxVarClients bounds the Walker's substitution clients.
const maxVarClients = 32

type varClient struct {
	client client.Client
	objs   []client.Object // the objects the key names
}

// Run builds everything queued, and what that produces, until nothing is
// left. It may be called again after more Enqueue/AddObjects calls.
//
// The result is the one of building the queue in order, one at a time:
// each round takes the ready items at the head of the queue, builds them
// concurrently (kustomize itself runs under one lock; post-build
// substitution, most of the cost once builds are cached, runs on every
// core), then registers what they built in queue order. An item whose
// substitution variables or source an earlier item of the same round
// replaced is built again with what it would have seen in order.
func (w *Walker) Run(ctx context.Context) {
	for {
		progress := false
		for len(w.queue) > 0 {
			n := 0
			for n < len(w.queue) && n < maxBatch && len(w.missing(w.queue[n])) == 0 {
				n++
			}
			if n == 0 {
				w.waiting = append(w.waiting, w.queue[0])
				w.queue = w.queue[1:]
				continue
			}
			batch := w.queue[:n:n]
			w.queue = w.queue[n:]
			w.buildBatch(ctx, batch)
			progress = true
		}
		if len(w.waiting) == 0 {
			return
		}
		w.queue, w.waiting = w.waiting, nil
		if progress {
			continue
		}
		// Nothing can make progress: report what is missing.
		sort.Slice(w.queue, func(i, j int) bool { return w.queue[i].ks.Name < w.queue[j].ks.Name })
		for _, it := range w.queue {
			w.Failures = append(w.Failures, Failure{
				Kustomization: it.cluster + ": " + it.ks.Namespace + "/" + it.ks.Name, Path: it.ks.Spec.Path,
				Cluster: it.cluster, Name: it.ks.Namespace + "/" + it.ks.Name,
				Err: fmt.Errorf("cannot build: not found on cluster %s: %s", it.cluster, strings.Join(w.missing(it), ", ")),
			})
		}
		w.queue = nil
		return
	}
}

// maxBatch bounds the items built in one round of Run.
const maxBatch = 64

// built is one item's build in a round of Run, with what it read.
type built struct {
	inputs string // see inputsOf
	out    []*unstructured.Unstructured
	err    error
}

// inputsOf identifies what building it reads from the walk's state: its
// source's URL and its substitution objects (AddVars replaces, never
// modifies, a registered object, so the object's address identifies its
// content).
func (w *Walker) inputsOf(it item) string {
	url, ok := w.source(it)
	var b strings.Builder
	fmt.Fprintf(&b, "%t %s", ok, url)
	if it.ks.Spec.PostBuild != nil {
		for _, ref := range it.ks.Spec.PostBuild.SubstituteFrom {
			k := ref.Kind + "/" + it.ks.Namespace + "/" + ref.Name
			fmt.Fprintf(&b, "\x00%s@%p", k, w.vars[it.cluster][k])
		}
	}
	return b.String()
}

// buildBatch builds the items concurrently, bounded by GOMAXPROCS, and
// registers the results in order.
func (w *Walker) buildBatch(ctx context.Context, batch []item) {
	res := make([]built, len(batch))
	clients := make([]client.Client, len(batch))
	for i, it := range batch {
		res[i].inputs = w.inputsOf(it)
		if url, _ := w.source(it); url == "" && it.ks.Spec.SourceRef.Kind == "GitRepository" {
			clients[i] = w.VarClient(it.cluster, it.ks)
		}
	}
	var g errgroup.Group
	g.SetLimit(goruntime.GOMAXPROCS(0))
	for i := range batch {
		if clients[i] == nil {
			continue
		}
		g.Go(func() error {
			res[i].out, res[i].err = w.Cache.Build(ctx, w.SourceRoot, batch[i].ks, clients[i])
			return nil
		})
	}
	_ = g.Wait()
	for i, it := range batch {
		if w.inputsOf(it) != res[i].inputs {
			// An earlier item of the round changed what this one reads.
			w.build(ctx, it)
			continue
		}
		w.finish(it, res[i].out, res[i].err)
	}
}

func (w *Walker) build(ctx context.Context, it item) {
	var out []*unstructured.Unstructured
	var err error
	if url, _ := w.source(it); url == "" && it.ks.Spec.SourceRef.Kind == "GitRepository" {
		out, err = w.Cache.Build(ctx, w.SourceRoot, it.ks, w.VarClient(it.cluster, it.ks))
	}
	w.finish(it, out, err)
}

// finish records the build of it: skipped (another repository's source),
// failed, or its objects registered on the cluster it applies to.
func (w *Walker) finish(it item, out []*unstructured.Unstructured, err error) {
	key := it.cluster + ": " + it.ks.Namespace + "/" + it.ks.Name
	if url, _ := w.source(it); url != "" || it.ks.Spec.SourceRef.Kind != "GitRepository" {
		w.Skipped = append(w.Skipped, fmt.Sprintf("%s: source %s (%s) is not this repository", key, sourceKey(it.ks), url))
		return
	}
	if err != nil {
		w.Failures = append(w.Failures, Failure{Kustomization: key, Cluster: it.cluster, Name: it.ks.Namespace + "/" + it.ks.Name, Path: it.ks.Spec.Path, Err: err})
		return
	}
	target := TargetCluster(it.cluster, it.ks)
	origin := "Kustomization " + key
	for _, o := range out {
		w.register(Built{Object: o, Origin: origin, Path: it.ks.Spec.Path, Cluster: target})
	}
}
