// Package xrender renders a WorkloadCluster claim (or any Crossplane claim)
// into the composite resource and the resources its Composition composes,
// with Crossplane's own render at the pinned release (`crossplane internal
// render`: the real composite reconciler against an in-memory client, its
// protobuf RenderRequest contract, served to many requests by one process,
// internal/build/tools/crossplane/renderserver) and the real composition
// functions: this project's function-workload-cluster served in-process
// over gRPC (package fn, the deployed function's code), pinned upstream
// functions built from their tool modules and run as local processes;
// render reaches each at its gRPC address.
//
// The claim is bound the way Crossplane's claim controller binds it: the
// claim is defaulted by its CRD, its spec copied into a new composite
// resource (without the claim-only fields), claimRef and the claim labels
// set, and the composite defaulted by its CRD. Rendering is repeated with
// the composed resources fed back as observed resources whose status looks
// like a provider's after creation (atProvider mirrors forProvider, plus
// ids, ARNs and the EKS OIDC issuer), so that patches from composed status
// (e.g. IRSA trust policies that need the cluster's issuer) converge as they
// do in a live control plane.
package xrender

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	xpapiextv1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"
	renderv1alpha1 "github.com/crossplane/crossplane/v2/proto/render/v1alpha1"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/awsgroups"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/proof/apivalidate"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
)

// Labels Crossplane puts on a claim's composite and composed resources.
const (
	LabelClaimName      = "crossplane.io/claim-name"
	LabelClaimNamespace = "crossplane.io/claim-namespace"
	LabelComposite      = "crossplane.io/composite"
)

// Result is a rendered claim.
type Result struct {
	Composite *unstructured.Unstructured
	Composed  []*unstructured.Unstructured
	// Warnings are the functions' non-fatal results of the last pass.
	Warnings []string
}

// Objects returns the composite first, then the composed resources.
func (r *Result) Objects() []*unstructured.Unstructured {
	return append([]*unstructured.Unstructured{r.Composite}, r.Composed...)
}

// passes bounds the observe-and-render loop.
const passes = 4

// Render renders claim with the XRD, Composition and Functions found among
// defs (typically every object the tree builds into). info supplies the
// account and region the fake provider status uses. This project's
// function runs in-process, pinned upstream functions as subprocesses.
func Render(ctx context.Context, claim *unstructured.Unstructured, defs []*unstructured.Unstructured, info clusterinfo.Values[string]) (*Result, error) {
	return Renderer{}.Render(ctx, claim, defs, info)
}

// Renderer renders claims. Target, when set, returns the gRPC target that
// serves a Function package (repository and tag, as its spec.package names
// them); nil means Render's default.
type Renderer struct {
	Target func(ctx context.Context, repository, tag string) (string, error)
}

// Render is Render with r's function targets.
func (r Renderer) Render(ctx context.Context, claim *unstructured.Unstructured, defs []*unstructured.Unstructured, info clusterinfo.Values[string]) (*Result, error) {
	target := r.Target
	if target == nil {
		target = functionTarget
	}
	xrd, err := findXRD(claim, defs)
	if err != nil {
		return nil, err
	}
	crds, err := apivalidate.CRDs([]*unstructured.Unstructured{xrd})
	if err != nil {
		return nil, fmt.Errorf("derive CRDs from XRD %s: %w", xrd.GetName(), err)
	}
	xr, err := bind(claim, crds)
	if err != nil {
		return nil, err
	}
	comp, err := findComposition(xr, defs)
	if err != nil {
		return nil, err
	}
	fns, err := functions(ctx, comp, defs, target)
	if err != nil {
		return nil, err
	}

	client, err := renderClient(ctx)
	if err != nil {
		return nil, err
	}
	in := &renderv1alpha1.CompositeInput{Functions: fns}
	if in.Composition, err = toStruct(comp); err != nil {
		return nil, err
	}
	if in.CompositeResourceDefinition, err = toStruct(xrd.Object); err != nil {
		return nil, err
	}
	var observed []*unstructured.Unstructured
	var out *renderv1alpha1.CompositeOutput
	var composedObjs []*unstructured.Unstructured
	for pass := 0; pass < passes; pass++ {
		if in.CompositeResource, err = toStruct(xr.Object); err != nil {
			return nil, err
		}
		in.ObservedResources = in.ObservedResources[:0]
		for _, o := range observed {
			st, err := toStruct(o.Object)
			if err != nil {
				return nil, err
			}
			in.ObservedResources = append(in.ObservedResources, st)
		}
		out, err = renderComposite(ctx, client, in)
		if err != nil {
			return nil, fmt.Errorf("render %s %s/%s with Composition %s: %w", claim.GetKind(), claim.GetNamespace(), claim.GetName(), comp.GetName(), err)
		}
		composedObjs = composedObjs[:0]
		for _, c := range out.GetComposedResources() {
			composedObjs = append(composedObjs, &unstructured.Unstructured{Object: c.AsMap()})
		}
		next := observe(composedObjs, info)
		// The XR status the reconcile wrote is what the next reconcile
		// observes (e.g. ToCompositeFieldPath from composed status).
		status, _ := out.GetCompositeResource().AsMap()["status"].(map[string]any)
		statusChanged := !reflect.DeepEqual(status, xr.Object["status"])
		if status != nil {
			xr.Object["status"] = status
		}
		if pass > 0 && sameDesired(observed, next) && !statusChanged {
			break
		}
		observed = next
	}

	// Render reports the XR as the reconcile last wrote it: its status, or
	// the server-side apply of what the reconciler sets in spec (resource
	// references). The API server merges those writes into the XR; so does
	// this.
	res := &Result{Composite: xr.DeepCopy()}
	written := out.GetCompositeResource().AsMap()
	if spec, ok := written["spec"].(map[string]any); ok {
		into, _ := res.Composite.Object["spec"].(map[string]any)
		if into == nil {
			into = map[string]any{}
			res.Composite.Object["spec"] = into
		}
		for k, v := range spec {
			into[k] = v
		}
	}
	if uid, ok, _ := unstructured.NestedString(written, "metadata", "uid"); ok {
		res.Composite.SetUID(types.UID(uid))
	}
	for _, cd := range composedObjs {
		// Names the API server would generate are given deterministically.
		if cd.GetName() == "" && cd.GetGenerateName() != "" {
			cd.SetName(generatedName(cd))
		}
		res.Composed = append(res.Composed, cd)
	}
	for _, e := range out.GetEvents() {
		if e.GetType() == "Warning" {
			res.Warnings = append(res.Warnings, e.GetReason()+": "+e.GetMessage())
		}
	}
	return res, nil
}

// renderComposite sends one CompositeInput to the render server: Crossplane's
// `crossplane internal render` at the pinned release.
func renderComposite(ctx context.Context, c *http.Client, in *renderv1alpha1.CompositeInput) (*renderv1alpha1.CompositeOutput, error) {
	body, err := proto.Marshal(&renderv1alpha1.RenderRequest{Input: &renderv1alpha1.RenderRequest_Composite{Composite: in}})
	if err != nil {
		return nil, fmt.Errorf("encode RenderRequest: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://render/render", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	rsp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errServerGone, err)
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		return nil, err
	}
	if rsp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("crossplane internal render (exit %s): %s", rsp.Header.Get("X-Render-Exit-Code"), rsp.Header.Get("X-Render-Error"))
	}
	out := &renderv1alpha1.RenderResponse{}
	if err := proto.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("decode RenderResponse: %w", err)
	}
	if out.GetComposite() == nil || out.GetComposite().GetCompositeResource() == nil {
		return nil, errors.New("crossplane internal render returned no composite resource")
	}
	return out.GetComposite(), nil
}

// toStruct converts a JSON-shaped value (a map, or a typed object through
// its JSON form) to a protobuf Struct.
func toStruct(v any) (*structpb.Struct, error) {
	m, ok := v.(map[string]any)
	if !ok {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
		if err != nil {
			return nil, fmt.Errorf("convert %T: %w", v, err)
		}
		m = u
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, fmt.Errorf("convert %T to protobuf: %w", v, err)
	}
	return s, nil
}

// RenderClaim renders the claim in the file claimPath against the tree at
// tree (the repository's manifests/ directory): the tree is built the way
// the hub's Flux builds it (root Kustomization at
// ./<GITOPS_SYSTEM_PATH>/clusters/mgmt, substituted from info) to find the
// XRD, Composition and Functions; the claim is taken as Flux applies it
// when the tree applies it, else as the file holds it. It returns the
// composite resource first, then the composed resources.
func RenderClaim(ctx context.Context, tree string, claimPath string, info clusterinfo.Values[string]) ([]*unstructured.Unstructured, error) {
	return Renderer{}.RenderClaim(ctx, tree, claimPath, info)
}

// RenderClaim is RenderClaim with r's function targets.
func (r Renderer) RenderClaim(ctx context.Context, tree string, claimPath string, info clusterinfo.Values[string]) ([]*unstructured.Unstructured, error) {
	return r.RenderClaimPruned(ctx, tree, claimPath, info, nil)
}

// RenderClaimPruned is RenderClaim with the paths prune (relative to tree:
// other claims' files, folders the hub does not build) left out of the
// tree's build, as kbuild.CopyTreeScoped leaves them out: the claim builds
// as in the whole tree, or the whole tree is built when that cannot be
// shown (kbuild.CheckScoped). nil prunes nothing.
func (r Renderer) RenderClaimPruned(ctx context.Context, tree string, claimPath string, info clusterinfo.Values[string], prune []string) ([]*unstructured.Unstructured, error) {
	claim, defs, failures, err := loadClaim(ctx, tree, claimPath, info, prune)
	if err != nil {
		return nil, err
	}
	res, err := r.Render(ctx, claim, defs, info)
	if err != nil {
		if len(failures) > 0 {
			return nil, fmt.Errorf("%w (the tree did not fully build: %s: %v)", err, failures[0].Kustomization, failures[0].Err)
		}
		return nil, err
	}
	return res.Objects(), nil
}

// loadClaim builds the tree as the hub's Flux does and returns the claim
// (as the tree applies it, else as the file holds it), every object the
// tree builds into and the Kustomizations that failed to build.
func loadClaim(ctx context.Context, tree string, claimPath string, info clusterinfo.Values[string], prune []string) (*unstructured.Unstructured, []*unstructured.Unstructured, []kbuild.Failure, error) {
	claim, err := readClaim(claimPath)
	if err != nil {
		return nil, nil, nil, err
	}
	work, err := os.MkdirTemp("", "xrender-*")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(work)
	var prefix string
	var rewritten []string
	if prune != nil {
		prefix, rewritten, err = kbuild.CopyTreeScoped(tree, work, info.SystemPath, nil, nil, prune)
	} else {
		_, err = kbuild.CopyTree(tree, work, info.SystemPath)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("copy %s: %w", tree, err)
	}
	w := kbuild.NewWalker(work, info.GitURL)
	SeedHub(w, info)
	w.Run(ctx)
	if err := kbuild.CheckScoped(work, prefix, rewritten, w.Kustomizations); err != nil {
		if errors.Is(err, kbuild.ErrScopeUnsafe) {
			return loadClaim(ctx, tree, claimPath, info, nil)
		}
		return nil, nil, nil, err
	}
	var defs []*unstructured.Unstructured
	for _, b := range w.Results {
		o := b.Object
		defs = append(defs, o)
		if b.Cluster == kbuild.Hub && o.GetKind() == claim.GetKind() && o.GetAPIVersion() == claim.GetAPIVersion() &&
			o.GetName() == claim.GetName() && o.GetNamespace() == claim.GetNamespace() {
			claim = o
		}
	}
	return claim, defs, w.Failures, nil
}

// RootKustomization is the hub's root Kustomization as the Pulumi program
// creates it (outside the tree): flux-system/flux-system, path
// ./<GITOPS_SYSTEM_PATH>/clusters/mgmt, substituted from cluster-info.
func RootKustomization(info clusterinfo.Values[string]) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: "flux-system", Namespace: "flux-system"},
		Spec: kustomizev1.KustomizationSpec{
			Path:           "./" + strings.Trim(info.SystemPath, "./") + "/clusters/mgmt",
			Prune:          true,
			DeletionPolicy: "WaitForTermination",
			SourceRef:      kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system"},
			PostBuild: &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{
				{Kind: "ConfigMap", Name: clusterinfo.Name},
			}},
		},
	}
}

// ClusterInfoConfigMap is the hub's cluster-info ConfigMap for info.
func ClusterInfoConfigMap(info clusterinfo.Values[string]) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: clusterinfo.Name, Namespace: clusterinfo.Namespace},
		Data:       info.Map(),
	}
}

// RedactedHubKeys stands in for the hub's Secret of the sealing keys as it
// hands them to spokes (sealingkey.HubSecret, which External Secrets writes
// from Secrets Manager), where the keys themselves must not show: the
// Secret names as the hub's tree makes them from cluster-info, each key
// the base64 of a note saying what it stands for.
func RedactedHubKeys(info clusterinfo.Values[string]) *corev1.Secret {
	note := func(what string) []byte {
		return []byte(base64.StdEncoding.EncodeToString([]byte("(redacted: " + what + ", from Secrets Manager " + info.SealingSecretName + ")")))
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: sealingkey.HubSecret, Namespace: clusterinfo.Namespace},
		Data: map[string][]byte{
			sealingkey.SpokeActiveSecretVar:   []byte(sealingkey.SpokeSecretName(info.SealingActiveKeySecret)),
			sealingkey.SpokeActiveCertVar:     note("the active certificate"),
			sealingkey.SpokeActiveKeyVar:      note("the active private key"),
			sealingkey.SpokePreviousSecretVar: []byte(sealingkey.SpokeSecretName(info.SealingPreviousKeySecret)),
			sealingkey.SpokePreviousCertVar:   note("the previous certificate"),
			sealingkey.SpokePreviousKeyVar:    note("the previous private key"),
		},
	}
}

// SeedHub gives a walker what Pulumi creates on the hub: the flux-system
// GitRepository, the cluster-info ConfigMap and the root Kustomization.
func SeedHub(w *kbuild.Walker, info clusterinfo.Values[string]) {
	w.AddSource(kbuild.Hub, "flux-system", "flux-system")
	w.AddVars(kbuild.Hub, ClusterInfoConfigMap(info))
	w.Enqueue(kbuild.Hub, RootKustomization(info), "Pulumi (FluxBootstrap)")
}

func readClaim(path string) (*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read claim: %w", err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			return nil, fmt.Errorf("no claim in %s: %w", filepath.Base(path), err)
		}
		if u.Object != nil && u.GetKind() != "" && u.GetKind() != "Kustomization" {
			return u, nil
		}
	}
}

func findXRD(claim *unstructured.Unstructured, defs []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := claim.GroupVersionKind()
	for _, d := range defs {
		if d.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.crossplane.io", Kind: "CompositeResourceDefinition"}) {
			continue
		}
		group, _, _ := unstructured.NestedString(d.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(d.Object, "spec", "claimNames", "kind")
		xrKind, _, _ := unstructured.NestedString(d.Object, "spec", "names", "kind")
		if group == gvk.Group && (kind == gvk.Kind || xrKind == gvk.Kind) {
			return d, nil
		}
	}
	return nil, fmt.Errorf("no CompositeResourceDefinition in the tree defines %s", gvk.GroupKind())
}

// bind makes the composite resource for claim, as Crossplane's claim
// controller does. A composite resource is passed through unchanged
// (apart from defaulting).
func bind(claim *unstructured.Unstructured, crds []*extv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	xrCRD, claimCRD := crds[0], (*extv1.CustomResourceDefinition)(nil)
	if len(crds) > 1 {
		claimCRD = crds[1]
	}
	gvk := claim.GroupVersionKind()
	if gvk.Kind == xrCRD.Spec.Names.Kind {
		xr := claim.DeepCopy()
		if err := apivalidate.Default(xr.Object, xr.GetAPIVersion(), xrCRD); err != nil {
			return nil, err
		}
		return xr, nil
	}
	if claimCRD == nil {
		return nil, fmt.Errorf("XRD for %s has no claimNames", gvk.GroupKind())
	}
	c := claim.DeepCopy()
	if err := apivalidate.Default(c.Object, c.GetAPIVersion(), claimCRD); err != nil {
		return nil, fmt.Errorf("claim %s/%s: %w", claim.GetNamespace(), claim.GetName(), err)
	}
	version := ""
	for _, v := range xrCRD.Spec.Versions {
		if v.Storage || version == "" {
			version = v.Name
		}
	}
	xr := &unstructured.Unstructured{Object: map[string]any{}}
	xr.SetAPIVersion(xrCRD.Spec.Group + "/" + version)
	xr.SetKind(xrCRD.Spec.Names.Kind)
	xr.SetName(generatedName(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"generateName": claim.GetName() + "-", "namespace": claim.GetNamespace()}}}))
	lbls := map[string]string{}
	for k, v := range claim.GetLabels() {
		lbls[k] = v
	}
	lbls[LabelClaimName] = claim.GetName()
	lbls[LabelClaimNamespace] = claim.GetNamespace()
	lbls[LabelComposite] = xr.GetName()
	xr.SetLabels(lbls)
	annos := map[string]string{}
	for k, v := range claim.GetAnnotations() {
		if k != corev1.LastAppliedConfigAnnotation {
			annos[k] = v
		}
	}
	if len(annos) > 0 {
		xr.SetAnnotations(annos)
	}
	spec, _, _ := unstructured.NestedMap(c.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	// Claim-only fields stay on the claim.
	for _, k := range []string{"compositeDeletePolicy", "resourceRef", "writeConnectionSecretToRef"} {
		delete(spec, k)
	}
	spec["claimRef"] = map[string]any{
		"apiVersion": claim.GetAPIVersion(),
		"kind":       claim.GetKind(),
		"name":       claim.GetName(),
		"namespace":  claim.GetNamespace(),
	}
	xr.Object["spec"] = spec
	if err := apivalidate.Default(xr.Object, xr.GetAPIVersion(), xrCRD); err != nil {
		return nil, err
	}
	return xr, nil
}

func findComposition(xr *unstructured.Unstructured, defs []*unstructured.Unstructured) (*xpapiextv1.Composition, error) {
	refName, _, _ := unstructured.NestedString(xr.Object, "spec", "compositionRef", "name")
	sel, _, _ := unstructured.NestedStringMap(xr.Object, "spec", "compositionSelector", "matchLabels")
	var found []*unstructured.Unstructured
	for _, d := range defs {
		if d.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.crossplane.io", Kind: "Composition"}) {
			continue
		}
		api, _, _ := unstructured.NestedString(d.Object, "spec", "compositeTypeRef", "apiVersion")
		kind, _, _ := unstructured.NestedString(d.Object, "spec", "compositeTypeRef", "kind")
		if api != xr.GetAPIVersion() || kind != xr.GetKind() {
			continue
		}
		if refName != "" && d.GetName() != refName {
			continue
		}
		if len(sel) > 0 && !labels.SelectorFromSet(sel).Matches(labels.Set(d.GetLabels())) {
			continue
		}
		found = append(found, d)
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no Composition in the tree for %s %s (compositionRef %q)", xr.GetAPIVersion(), xr.GetKind(), refName)
	case 1:
	default:
		var names []string
		for _, f := range found {
			names = append(names, f.GetName())
		}
		return nil, fmt.Errorf("%d Compositions match %s %s (%s); set compositionRef or compositionSelector", len(found), xr.GetAPIVersion(), xr.GetKind(), strings.Join(names, ", "))
	}
	comp := &xpapiextv1.Composition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, comp); err != nil {
		return nil, fmt.Errorf("decode Composition %s: %w", found[0].GetName(), err)
	}
	if comp.Spec.Mode != xpapiextv1.CompositionModePipeline {
		return nil, fmt.Errorf("Composition %s: mode %q, want Pipeline", comp.GetName(), comp.Spec.Mode)
	}
	return comp, nil
}

// functions returns the pipeline's Functions as render's inputs: each at
// the gRPC address that serves it.
func functions(ctx context.Context, comp *xpapiextv1.Composition, defs []*unstructured.Unstructured, functionTarget func(context.Context, string, string) (string, error)) ([]*renderv1alpha1.FunctionInput, error) {
	byName := map[string]*unstructured.Unstructured{}
	for _, d := range defs {
		if d.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "pkg.crossplane.io", Kind: "Function"}) {
			byName[d.GetName()] = d
		}
	}
	var out []*renderv1alpha1.FunctionInput
	done := map[string]bool{}
	for _, step := range comp.Spec.Pipeline {
		name := step.FunctionRef.Name
		if done[name] {
			continue
		}
		done[name] = true
		d, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("Composition %s step %q: no Function %q in the tree", comp.GetName(), step.Step, name)
		}
		pkg, _, _ := unstructured.NestedString(d.Object, "spec", "package")
		repo, tag := splitPackage(pkg)
		target, err := functionTarget(ctx, repo, tag)
		if err != nil {
			return nil, fmt.Errorf("Function %s: %w", name, err)
		}
		out = append(out, &renderv1alpha1.FunctionInput{Name: name, Address: target})
	}
	return out, nil
}

func splitPackage(pkg string) (repo, tag string) {
	if i := strings.Index(pkg, "@"); i >= 0 {
		return pkg[:i], ""
	}
	slash := strings.LastIndex(pkg, "/")
	if i := strings.LastIndex(pkg, ":"); i > slash {
		return pkg[:i], pkg[i+1:]
	}
	return pkg, ""
}

// generatedName gives a generateName object the name the API server
// would, deterministically (5 characters from a hash of the prefix and the
// object's identity).
func generatedName(o *unstructured.Unstructured) string {
	h := sha256.Sum256([]byte(o.GetGenerateName() + "|" + o.GetNamespace() + "|" + o.GetKind() + "|" + o.GetAnnotations()[annotationCompositionResourceName]))
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var sb strings.Builder
	for i := 0; i < 5; i++ {
		sb.WriteByte(alphabet[int(h[i])%len(alphabet)])
	}
	return o.GetGenerateName() + sb.String()
}

// annotationCompositionResourceName names a composed resource within its
// composite (crossplane-runtime pkg/xcrd).
const annotationCompositionResourceName = "crossplane.io/composition-resource-name"

// observe turns desired composed resources into observed ones, as if the
// providers had created them. An observed object shares its spec (and all
// but metadata and status) with the desired one: this copies the two maps
// it writes, and neither render nor the functions write to what they
// observe (they get it as protobuf).
func observe(desired []*unstructured.Unstructured, info clusterinfo.Values[string]) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(desired))
	for _, d := range desired {
		u := &unstructured.Unstructured{Object: maps.Clone(d.Object)}
		for _, k := range []string{"metadata", "status"} {
			if m, ok := u.Object[k].(map[string]any); ok {
				u.Object[k] = maps.Clone(m)
			}
		}
		if u.GetName() == "" {
			u.SetName(generatedName(u))
		}
		fakeStatus(u, info)
		out = append(out, u)
	}
	return out
}

func fakeStatus(u *unstructured.Unstructured, info clusterinfo.Values[string]) {
	gvk := u.GroupVersionKind()
	ext := u.GetAnnotations()["crossplane.io/external-name"]
	if ext == "" {
		ext = u.GetName()
	}
	forProvider, _, _ := unstructured.NestedMap(u.Object, "spec", "forProvider")
	at := map[string]any{}
	for k, v := range forProvider {
		at[k] = v
	}
	region, _ := forProvider["region"].(string)
	if region == "" {
		region = info.Region
	}
	partition := info.Partition
	if partition == "" {
		partition = "aws"
	}
	// AWS names a resource in the account its ProviderConfig reached: a
	// spoke account's, or the hub's.
	if pc, _, _ := unstructured.NestedString(u.Object, "spec", "providerConfigRef", "name"); pc != "" {
		if id, ok := spokeaccounts.ProviderConfigAccount(pc); ok {
			info.AccountID = id
		}
	}
	if svc, _, ok := awsgroups.Service(gvk.Group); ok {
		at["id"] = ext
		switch {
		case svc == "iam" && gvk.Kind == "Role":
			at["arn"] = fmt.Sprintf("arn:%s:iam::%s:role/%s", partition, info.AccountID, ext)
			at["uniqueId"] = "AROA" + strings.ToUpper(hash(ext, 17))
		case svc == "iam" && gvk.Kind == "OpenIDConnectProvider":
			url, _ := forProvider["url"].(string)
			at["arn"] = fmt.Sprintf("arn:%s:iam::%s:oidc-provider/%s", partition, info.AccountID, strings.TrimPrefix(url, "https://"))
		case svc == "iam" && gvk.Kind == "Policy":
			at["arn"] = fmt.Sprintf("arn:%s:iam::%s:policy/%s", partition, info.AccountID, ext)
		case svc == "eks" && gvk.Kind == "Cluster":
			at["arn"] = fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", partition, region, info.AccountID, ext)
			at["endpoint"] = fmt.Sprintf("https://%s.gr7.%s.eks.amazonaws.com", strings.ToUpper(hash(ext, 32)), region)
			at["identity"] = []any{map[string]any{"oidc": []any{map[string]any{
				"issuer": fmt.Sprintf("https://oidc.eks.%s.amazonaws.com/id/%s", region, strings.ToUpper(hash(ext, 32))),
			}}}}
			at["certificateAuthority"] = []any{map[string]any{"data": "LS0tLS1CRUdJTi0tLS0t"}}
			at["status"] = "ACTIVE"
		case svc == "eks" && gvk.Kind == "NodeGroup":
			at["arn"] = fmt.Sprintf("arn:%s:eks:%s:%s:nodegroup/%s", partition, region, info.AccountID, ext)
			at["status"] = "ACTIVE"
		case svc == "ec2":
			at["id"] = strings.ToLower(prefixFor(gvk.Kind)) + "-" + hash(ext, 17)
			at["arn"] = fmt.Sprintf("arn:%s:ec2:%s:%s:%s/%s", partition, region, info.AccountID, strings.ToLower(gvk.Kind), at["id"])
			if gvk.Kind == "LaunchTemplate" {
				at["arn"] = fmt.Sprintf("arn:%s:ec2:%s:%s:launch-template/%s", partition, region, info.AccountID, at["id"])
				at["latestVersion"] = int64(1)
				at["defaultVersion"] = int64(1)
			}
			if gvk.Kind == "EIP" {
				at["publicIp"] = "198.51.100.10"
				at["allocationId"] = "eipalloc-" + hash(ext, 17)
			}
		default:
			at["arn"] = fmt.Sprintf("arn:%s:%s:%s:%s:%s/%s", partition, svc, region, info.AccountID, strings.ToLower(gvk.Kind), ext)
		}
		_ = unstructured.SetNestedMap(u.Object, at, "status", "atProvider")
	}
	now := metav1.Now().UTC().Format("2006-01-02T15:04:05Z")
	_ = unstructured.SetNestedSlice(u.Object, []any{
		map[string]any{"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": now},
		map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "lastTransitionTime": now},
		map[string]any{"type": "Healthy", "status": "True", "reason": "HealthCheckSucceeded", "lastTransitionTime": now},
	}, "status", "conditions")
}

func prefixFor(kind string) string {
	switch kind {
	case "VPC":
		return "vpc"
	case "Subnet":
		return "subnet"
	case "InternetGateway":
		return "igw"
	case "NATGateway":
		return "nat"
	case "EIP":
		return "eipalloc"
	case "RouteTable":
		return "rtb"
	case "RouteTableAssociation":
		return "rtbassoc"
	case "Route":
		return "r"
	case "SecurityGroup":
		return "sg"
	case "LaunchTemplate":
		return "lt"
	}
	return strings.ToLower(kind)
}

func hash(s string, n int) string {
	h := sha256.Sum256([]byte(s))
	x := hex.EncodeToString(h[:])
	if n > len(x) {
		n = len(x)
	}
	return x[:n]
}

// sameDesired reports whether two observed sets hold the same resources
// with the same specs.
func sameDesired(a, b []*unstructured.Unstructured) bool {
	if len(a) != len(b) {
		return false
	}
	idx := map[string]any{}
	for i := range a {
		idx[a[i].GetAnnotations()[annotationCompositionResourceName]] = a[i].Object["spec"]
	}
	for i := range b {
		s, ok := idx[b[i].GetAnnotations()[annotationCompositionResourceName]]
		if !ok || !reflect.DeepEqual(s, b[i].Object["spec"]) {
			return false
		}
	}
	return true
}
