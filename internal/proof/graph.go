package proof

import (
	"sort"
	"strings"

	kustomize "github.com/fluxcd/pkg/apis/kustomize"
	fluxcel "github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
)

type node struct {
	b    kbuild.Built
	key  string // Kind ns/name
	deps []string
}

// checkGraph checks, per cluster, that Flux dependsOn references resolve
// (Kustomization -> Kustomization, HelmRelease -> HelmRelease, same
// cluster, namespace defaulting to the object's) and form no cycle, and
// that sources and kubeConfig ConfigMaps exist where the controller looks.
func (r *run) checkGraph() {
	byCluster := map[string][]kbuild.Built{}
	for _, b := range r.w.Results {
		byCluster[b.Cluster] = append(byCluster[b.Cluster], b)
	}
	clusters := make([]string, 0, len(byCluster))
	for c := range byCluster {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	for _, c := range clusters {
		r.checkClusterGraph(c, byCluster[c])
	}
}

func key(kind, ns, name string) string { return kind + " " + ns + "/" + name }

func (r *run) checkClusterGraph(cluster string, objs []kbuild.Built) {
	present := map[string]bool{}
	for _, b := range objs {
		present[key(b.Object.GetKind(), b.Object.GetNamespace(), b.Object.GetName())] = true
	}
	if cluster == kbuild.Hub {
		// Made by Pulumi, outside the tree.
		present[key("GitRepository", "flux-system", "flux-system")] = true
		present[key("Kustomization", "flux-system", "flux-system")] = true
		present[key("ConfigMap", "flux-system", "cluster-info")] = true
	}
	nodes := map[string]*node{}
	var order []string
	for _, b := range objs {
		o := b.Object
		kind := o.GetKind()
		if !strings.HasSuffix(o.GroupVersionKind().Group, ".toolkit.fluxcd.io") || (kind != "Kustomization" && kind != "HelmRelease") {
			continue
		}
		n := &node{b: b, key: key(kind, o.GetNamespace(), o.GetName())}
		file, name := r.fileOf(b), objectName(o, cluster)
		deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn")
		for _, d := range deps {
			m, _ := d.(map[string]any)
			dn, _ := m["name"].(string)
			dns, _ := m["namespace"].(string)
			if dns == "" {
				dns = o.GetNamespace()
			}
			dk := key(kind, dns, dn)
			if !present[dk] {
				r.add(CheckGraph, file, name, "dependsOn %s: not found on cluster %s", dk, cluster)
				continue
			}
			n.deps = append(n.deps, dk)
		}
		r.checkRefs(cluster, b, present, file, name)
		nodes[n.key] = n
		order = append(order, n.key)
	}
	sort.Strings(order)
	// Cycles: depth-first search with colours; report each cycle once.
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	reported := map[string]bool{}
	var stack []string
	var visit func(k string)
	visit = func(k string) {
		colour[k] = grey
		stack = append(stack, k)
		n := nodes[k]
		for _, d := range n.deps {
			switch colour[d] {
			case white:
				if _, ok := nodes[d]; ok {
					visit(d)
				}
			case grey:
				i := len(stack) - 1
				for i >= 0 && stack[i] != d {
					i--
				}
				cycle := append(append([]string{}, stack[i:]...), d)
				sig := cycleSig(cycle)
				if !reported[sig] {
					reported[sig] = true
					r.add(CheckGraph, r.fileOf(nodes[d].b), objectName(nodes[d].b.Object, cluster), "dependsOn cycle: %s", strings.Join(cycle, " -> "))
				}
			}
		}
		stack = stack[:len(stack)-1]
		colour[k] = black
	}
	for _, k := range order {
		if colour[k] == white {
			visit(k)
		}
	}
}

func cycleSig(c []string) string {
	s := append([]string{}, c[:len(c)-1]...)
	sort.Strings(s)
	return strings.Join(s, "|")
}

// checkRefs: sourceRef, chart sources and kubeConfig ConfigMaps exist.
func (r *run) checkRefs(cluster string, b kbuild.Built, present map[string]bool, file, name string) {
	o := b.Object
	ns := o.GetNamespace()
	ref := func(path ...string) {
		m, ok, _ := unstructured.NestedMap(o.Object, path...)
		if !ok {
			return
		}
		kind, _ := m["kind"].(string)
		n, _ := m["name"].(string)
		rns, _ := m["namespace"].(string)
		if rns == "" {
			rns = ns
		}
		if kind == "" || n == "" {
			return
		}
		if !present[key(kind, rns, n)] {
			r.add(CheckGraph, file, name, "%s %s: not found on cluster %s", strings.Join(path[1:], "."), key(kind, rns, n), cluster)
		}
	}
	switch o.GetKind() {
	case "Kustomization":
		ref("spec", "sourceRef")
		r.checkHealthCheckExprs(b, file, name)
	case "HelmRelease":
		ref("spec", "chartRef")
		ref("spec", "chart", "spec", "sourceRef")
	}
	if cm, ok, _ := unstructured.NestedString(o.Object, "spec", "kubeConfig", "configMapRef", "name"); ok && cm != "" {
		if !present[key("ConfigMap", ns, cm)] {
			r.add(CheckGraph, file, name, "kubeConfig.configMapRef %s: not found on cluster %s", key("ConfigMap", ns, cm), cluster)
		}
	}
}

// checkUsages: the Crossplane Usages a claim composes (teardown order)
// name composed resources of that claim, and their "by -> of" order has no
// cycle (a cycle would block deletion forever).
func checkUsages(s sink, file string, claim *unstructured.Unstructured, composed []*unstructured.Unstructured) {
	present := map[string]bool{}
	for _, o := range composed {
		present[o.GetAPIVersion()+" "+o.GetKind()+" "+o.GetName()] = true
	}
	edges := map[string][]string{}
	var nodes []string
	for _, o := range composed {
		g := o.GroupVersionKind().Group
		if (g != "protection.crossplane.io" && g != "apiextensions.crossplane.io") || (o.GetKind() != "Usage" && o.GetKind() != "ClusterUsage") {
			continue
		}
		ref := func(side string) string {
			m, _, _ := unstructured.NestedMap(o.Object, "spec", side)
			if m == nil {
				return ""
			}
			api, _ := m["apiVersion"].(string)
			kind, _ := m["kind"].(string)
			name, _, _ := unstructured.NestedString(m, "resourceRef", "name")
			if name == "" {
				return "" // selector-based: resolved by Crossplane at run time
			}
			k := api + " " + kind + " " + name
			if !present[k] {
				s.add(CheckGraph, file, objectName(o, kbuild.Hub), "spec.%s names %s, which the claim does not compose", side, k)
			}
			return k
		}
		of, by := ref("of"), ref("by")
		if of != "" && by != "" {
			if _, ok := edges[by]; !ok {
				nodes = append(nodes, by)
			}
			edges[by] = append(edges[by], of)
		}
	}
	sort.Strings(nodes)
	state := map[string]int{}
	var stack []string
	var visit func(n string) bool
	visit = func(n string) bool {
		state[n] = 1
		stack = append(stack, n)
		for _, m := range edges[n] {
			if state[m] == 1 {
				i := len(stack) - 1
				for i >= 0 && stack[i] != m {
					i--
				}
				s.add(CheckGraph, file, objectName(claim, kbuild.Hub),
					"Usage cycle blocks deletion: %s -> %s", strings.Join(stack[i:], " -> "), m)
				return true
			}
			if state[m] == 0 && visit(m) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = 2
		return false
	}
	for _, n := range nodes {
		if state[n] == 0 && visit(n) {
			break
		}
	}
}

// checkHealthCheckExprs builds spec.healthCheckExprs with the status reader
// the pinned kustomize-controller builds before it applies anything
// (kustomize-controller internal/controller/kustomization_controller.go:190,
// fluxcd/pkg/runtime cel/status_reader.go:43): a duplicate GroupKind or an
// expression that does not compile stalls the Kustomization there.
func (r *run) checkHealthCheckExprs(b kbuild.Built, file, name string) {
	raw, ok, _ := unstructured.NestedSlice(b.Object.Object, "spec", "healthCheckExprs")
	if !ok || len(raw) == 0 {
		return
	}
	var spec struct {
		Checks []kustomize.CustomHealthCheck `json:"checks"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"checks": raw}, &spec); err != nil {
		r.add(CheckGraph, file, name, "spec.healthCheckExprs: %v", err)
		return
	}
	if _, err := fluxcel.NewStatusReader(spec.Checks); err != nil {
		r.add(CheckGraph, file, name, "spec.healthCheckExprs: kustomize-controller would stall this Kustomization: %v", err)
	}
}
