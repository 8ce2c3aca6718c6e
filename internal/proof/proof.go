// Package proof is the offline proof of the GitOps system tree: it builds
// the tree the way the hub's Flux does, renders every claim through the
// real Composition and functions, and checks what results with the upstream
// code that will run it for real:
//
//	build       every Flux Kustomization (from the tree, and every one the
//	            Composition emits) builds with fluxcd/pkg/kustomize and strict
//	            post-build substitution from the cluster-info variables
//	schema      every object built validates against its CRD (OpenAPI + CEL)
//	            or the Kubernetes OpenAPI; unknown kinds are errors
//	render      every claim renders with Crossplane's render and the real
//	            functions; every composed resource validates against its
//	            provider CRD; composed names are unique per spoke and fleet
//	graph       Flux dependsOn is acyclic and every reference resolves
//	deprecated  no deprecated or removed API version
//	irsa        IRSA trust subjects equal internal/contract/serviceaccounts and the
//	            service accounts the manifests create
//	sealing     a Secret sealed with kubeseal's code and a certificate made
//	            the way SealingKeys makes it unseals, on every cluster, with
//	            the controller's code and the key Secrets the walk applies
//	            there: on the hub as the tree's ExternalSecrets deliver
//	            them, on a spoke as the hub's Flux substitutes them from
//	            what the hub's External Secrets delivers
package proof

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof/apivalidate"
	"github.com/gitops-fleet/eks-fleet/internal/proof/appproof"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

// Check names.
const (
	CheckBuild      = "build"
	CheckSchema     = "schema"
	CheckRender     = "render"
	CheckGraph      = "graph"
	CheckDeprecated = "deprecated"
	CheckIRSA       = "irsa"
	CheckSealing    = "sealing"
	// CheckApps covers the app path: every AppInfrastructure claim a spoke
	// applies, rendered through that spoke's app-infra Composition, with a
	// role that reaches only the claim's own table and queues.
	CheckApps = "apps"
	// CheckImpersonation: a Kustomization's impersonated service account
	// may apply, prune and health-check its build (internal/proof/rbacproof).
	CheckImpersonation = "impersonation"
	// CheckSecretStore: each ClusterSecretStore serves only the namespaces
	// of the ExternalSecrets that use it (internal/proof/secretstore).
	CheckSecretStore = "secret-store"
)

// Finding is one problem the proof found.
type Finding struct {
	Check   string // one of the Check* names
	File    string // file (relative to the tree) or directory the object comes from
	Object  string // Kind namespace/name, with the cluster when not the hub
	Message string
}

func (f Finding) String() string {
	var b strings.Builder
	b.WriteString("[" + f.Check + "]")
	if f.File != "" {
		b.WriteString(" " + f.File)
	}
	if f.Object != "" {
		b.WriteString(" " + f.Object)
	}
	b.WriteString(": " + f.Message)
	return b.String()
}

// Report is the outcome of a proof run.
type Report struct {
	Findings []Finding
	// Objects counts the objects built and rendered.
	Objects int
	// Claims counts the claims rendered.
	Claims int
	// AppClaims lists the AppInfrastructure claims rendered, as
	// "cluster: namespace/name".
	AppClaims []string
	// Kustomizations counts the Flux Kustomizations built.
	Kustomizations int
	// Skipped lists Kustomizations whose source is another repository.
	Skipped []string
	// Notes lists accepted deprecations (see AcceptedDeprecations).
	Notes []string
	// Rendered holds each claim's rendered objects (composite first), keyed
	// by "namespace/name", when Options.KeepRendered is set.
	Rendered map[string][]*unstructured.Unstructured
	// Built holds every object the walk built, with what produced it and
	// the cluster it is applied to, when Options.KeepBuilt is set.
	Built []kbuild.Built
}

// OK reports whether the proof found nothing.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

// Options configure a run.
type Options struct {
	// Tree is the path of the repository's manifests/ directory (the
	// directory that GITOPS_SYSTEM_PATH's first element names).
	Tree string
	// ClusterInfo is what the hub's cluster-info ConfigMap holds; the zero
	// value means clusterinfo.Example().
	ClusterInfo clusterinfo.Values[string]
	// SkipSealing leaves out the sealing round trip (it generates an
	// RSA-4096 key once per process).
	SkipSealing bool
	// Claims, when not nil, limits rendering to the claims of these names
	// (a change's own clusters): the hub tree still builds and validates
	// in full, every named claim renders and its spoke Kustomizations
	// build; composed names are checked to derive from the claim (a twin
	// under another name), which with unique claim names (the fleet
	// policy) keeps names unique fleet-wide. Empty: no claim renders.
	Claims []string
	// Overlay and Removed are a change the proof sees applied to Tree
	// (files written, and paths removed, relative to Tree); Tree itself is
	// not read for them and not modified. Prune lists paths relative to
	// Tree (files or directories) the scope does not reach, left out of
	// the build source (see scope.go: a pruned file listed in a
	// kustomization.yaml is taken out of that listing only when the
	// listing builds resource by resource, else it stays). With any of
	// them, the file index covers the build source.
	Overlay map[string][]byte
	Removed []string
	Prune   []string
	// KeepRendered keeps every claim's rendered objects whole, in
	// Report.Rendered too. Without it, once the claim's own checks ran on
	// its render, the composed objects only those checks read are let go
	// (see examine and keptComposed): at 1,000 claims they are ~400 MB.
	KeepRendered bool
	// KeepBuilt keeps every built object in Report.Built (the real
	// API server suite applies them).
	KeepBuilt bool
}

type run struct {
	ctx      context.Context
	opts     Options
	info     clusterinfo.Values[string]
	tree     string
	prefix   string // the tree's path in the repository (kbuild.TreePrefix)
	work     string
	v        *apivalidate.Validator
	w        *kbuild.Walker
	files    *fileIndex
	report   *Report
	rendered []renderedClaim
	// twin is a second spoke rendered only to check names across spokes.
	twin      *unstructured.Unstructured
	twinNames []composedName
}

type renderedClaim struct {
	claim *unstructured.Unstructured
	// res.Composed holds, unless Options.KeepRendered, only the composed
	// objects the walk and the fleet-wide checks read (see examine).
	res *xrender.Result
	// names are the names checkUnique compares across claims, one entry
	// per composed object.
	names []composedName
	// own is what the checks of the claim's render alone found
	// (validation, deprecation, spoke access, Usages).
	own findingList
	// dropped counts the composed objects let go after those checks.
	dropped int
	// kinds holds one composed object of each kind (checkServed).
	kinds []*unstructured.Unstructured
}

// Run proves the tree. The error is for failures of the proof itself
// (unreadable tree, upstream modules not downloadable); problems in the
// tree are Findings.
func Run(ctx context.Context, opts Options) (*Report, error) {
	info := opts.ClusterInfo
	if info.AccountID == "" {
		info = clusterinfo.Example()
	}
	tree, err := filepath.Abs(opts.Tree)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(tree); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("tree %s: not a directory", opts.Tree)
	}
	work, err := os.MkdirTemp("", "proof-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if !opts.SkipSealing {
		// The RSA-4096 sealing key is made on the other core while the
		// tree builds; checkSealing waits for it (processKeyPair is once).
		go func() { _, _ = processKeyPair() }()
	}
	// Independent set-up steps run concurrently: the build source copy,
	// the upstream CRD index behind the validator, the tree's file index.
	var (
		prefix string
		v      *apivalidate.Validator
		files  *fileIndex
	)
	scoped := opts.Overlay != nil || opts.Removed != nil || opts.Prune != nil
	var rewritten []string
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		if scoped {
			// Only what the scope reaches, with the change: the file
			// index is of that copy.
			if prefix, rewritten, err = kbuild.CopyTreeScoped(tree, work, info.SystemPath, opts.Overlay, opts.Removed, opts.Prune); err != nil {
				return err
			}
			files = indexFiles(filepath.Join(work, filepath.FromSlash(prefix)))
			return nil
		}
		if prefix, err = kbuild.CopyTree(tree, work, info.SystemPath); err != nil {
			return fmt.Errorf("copy tree: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		var err error
		v, err = apivalidate.New(gctx)
		return err
	})
	if !scoped {
		g.Go(func() error {
			files = indexFiles(tree)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	r := &run{
		ctx: ctx, opts: opts, info: info, tree: tree, prefix: prefix, work: work, v: v,
		w:      kbuild.NewWalker(work, info.GitURL),
		files:  files,
		report: &Report{Rendered: map[string][]*unstructured.Unstructured{}},
	}
	r.w.Derive = r.deliverSealing
	if err := r.do(rewritten); err != nil {
		if errors.Is(err, kbuild.ErrScopeUnsafe) && opts.Prune != nil {
			// The pruned listing might not build resource by resource:
			// prove the change on everything.
			opts.Prune = nil
			return Run(ctx, opts)
		}
		return nil, err
	}
	sort.SliceStable(r.report.Findings, func(i, j int) bool {
		a, b := r.report.Findings[i], r.report.Findings[j]
		if a.Check != b.Check {
			return a.Check < b.Check
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Object < b.Object
	})
	return r.report, nil
}

func (r *run) add(check, file, object, format string, args ...any) {
	r.report.Findings = append(r.report.Findings, Finding{Check: check, File: file, Object: object, Message: fmt.Sprintf(format, args...)})
}

func (r *run) note(n string) {
	if !slices.Contains(r.report.Notes, n) {
		r.report.Notes = append(r.report.Notes, n)
	}
}

// sink takes findings and notes: the run's report, or a findingList
// filled concurrently and merged in a fixed order.
type sink interface {
	add(check, file, object, format string, args ...any)
	note(n string)
}

// findingList is a sink of its own.
type findingList struct {
	findings []Finding
	notes    []string
}

func (l *findingList) add(check, file, object, format string, args ...any) {
	l.findings = append(l.findings, Finding{Check: check, File: file, Object: object, Message: fmt.Sprintf(format, args...)})
}

func (l *findingList) note(n string) { l.notes = append(l.notes, n) }

// merge adds l to the run's report.
func (r *run) merge(l findingList) {
	r.report.Findings = append(r.report.Findings, l.findings...)
	for _, n := range l.notes {
		r.note(n)
	}
}

func (r *run) do(rewritten []string) error {
	// (a) the tree, from the root Kustomization Pulumi creates.
	xrender.SeedHub(r.w, r.info)
	r.w.Run(r.ctx)

	// Definitions the tree installs (XRDs, CRDs) become schemas.
	if err := r.v.AddDefinitions(objects(r.w.Results), "tree"); err != nil {
		r.add(CheckSchema, "", "", "%v", err)
	}

	// (c) every claim, rendered; what it composes joins the walk (the
	// hub-side Kustomizations that bootstrap the spoke).
	r.renderClaims()
	r.w.Run(r.ctx)
	if err := kbuild.CheckScoped(r.work, r.prefix, rewritten, r.w.Kustomizations); err != nil {
		return err
	}
	if err := r.v.AddDefinitions(objects(r.w.Results), "tree"); err != nil {
		r.add(CheckSchema, "", "", "%v", err)
	}

	for _, f := range r.w.Failures {
		name := "Kustomization " + f.Name
		if f.Cluster != kbuild.Hub {
			name += " on " + f.Cluster
		}
		r.add(CheckBuild, r.relPath(f.Path), name, "%v", f.Err)
	}
	r.report.Skipped = r.w.Skipped
	r.report.Kustomizations = len(r.w.Kustomizations) + 1
	r.report.Objects = len(r.w.Results)
	if r.opts.KeepBuilt {
		r.report.Built = r.w.Results
	}

	// (b) schemas, (d) deprecations, over everything built (rendered
	// objects were validated as they were rendered, see examine).
	composedBy := map[*unstructured.Unstructured]bool{}
	for _, rc := range r.rendered {
		for _, o := range rc.res.Composed {
			composedBy[o] = true
		}
	}
	var jobs []validation
	for _, b := range r.w.Results {
		if composedBy[b.Object] {
			continue // validated below as rendered
		}
		jobs = append(jobs, validation{check: CheckSchema, file: r.fileOf(b), name: objectName(b.Object, b.Cluster), obj: b.Object})
	}
	for _, rc := range r.rendered {
		r.report.Objects += 1 + rc.dropped // the composite, what was let go
	}
	r.validateAll(jobs)
	r.checkRawAPIs()
	r.checkUnreached()
	r.checkUnique()
	r.checkServed()
	r.checkGraph()
	r.checkIRSA()
	r.checkApps()
	r.checkImpersonation()
	r.checkSecretStores()
	if !r.opts.SkipSealing {
		r.checkSealing()
	}
	return nil
}

// checkApps runs the app path's proof (internal/proof/appproof) over what the
// walk built on every spoke.
func (r *run) checkApps() {
	rep := appproof.CheckBuilt(r.ctx, r.w.Results, appproof.ClusterVars(r.w.Results), r.info,
		func(ctx context.Context, u *unstructured.Unstructured) error {
			return r.v.Validate(ctx, u).ToAggregate()
		})
	r.report.AppClaims = rep.Claims
	for _, err := range rep.Errors {
		r.add(CheckApps, "", "", "%v", err)
	}
}

func objects(bs []kbuild.Built) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.Object)
	}
	return out
}

func objectName(o *unstructured.Unstructured, cluster string) string {
	s := o.GetKind() + " "
	if o.GetNamespace() != "" {
		s += o.GetNamespace() + "/"
	}
	s += o.GetName()
	if cluster != "" && cluster != kbuild.Hub {
		s += " on " + cluster
	}
	return s
}

// AcceptedDeprecations are deprecated API versions the design requires,
// with the reason; they are reported as notes, not findings.
var AcceptedDeprecations = map[string]string{
	"apiextensions.crossplane.io/v1 CompositeResourceDefinition": "claims (spec.claimNames) exist only in v1 XRDs, and the design asks for a namespaced claim",
}

// validation is one object to validate, and where findings go.
type validation struct {
	check, file, name string
	obj               *unstructured.Unstructured
	errs              field.ErrorList
}

// validateAll validates the objects concurrently (the validator is safe
// for concurrent use and validation is independent per object), bounded
// by GOMAXPROCS, then reports in the order given. An object that several
// jobs hold (the build cache gives every spoke the same object for a
// resource whose substitution does not depend on the spoke, see
// kbuild.Cache) is validated once and reported for each.
func (r *run) validateAll(jobs []validation) {
	first := make(map[*unstructured.Unstructured]int, len(jobs))
	var distinct []int
	for i, j := range jobs {
		if _, ok := first[j.obj]; !ok {
			first[j.obj] = i
			distinct = append(distinct, i)
		}
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, i := range distinct {
		g.Go(func() error {
			jobs[i].errs = r.v.Validate(r.ctx, jobs[i].obj)
			return nil
		})
	}
	_ = g.Wait()
	for _, j := range jobs {
		r.addValidation(r, j.check, j.file, j.name, j.obj, jobs[first[j.obj]].errs)
	}
}

// addValidation adds the deprecation and validation findings for o to s;
// errs is what the validator returned for it.
func (r *run) addValidation(s sink, check, file, name string, o *unstructured.Unstructured, errs field.ErrorList) {
	if msg, bad := deprecatedAPI(o.GetAPIVersion(), o.GetKind()); bad {
		s.add(CheckDeprecated, file, name, "%s %s: %s", o.GetAPIVersion(), o.GetKind(), msg)
	} else if k := r.v.Lookup(o.GroupVersionKind()); k.Deprecated {
		if why, ok := AcceptedDeprecations[o.GetAPIVersion()+" "+o.GetKind()]; ok {
			s.note(fmt.Sprintf("accepted deprecation: %s %s (%s): %s", o.GetAPIVersion(), o.GetKind(), k.Warning, why))
		} else {
			s.add(CheckDeprecated, file, name, "%s %s: %s", o.GetAPIVersion(), o.GetKind(), k.Warning)
		}
	}
	for _, e := range errs {
		msg := e.Error()
		if strings.Contains(msg, "expected string, got") || strings.Contains(msg, "cannot convert int64 to string") || strings.Contains(msg, "cannot convert bool to string") {
			msg += " (hint: Flux post-build substitution yields a number or boolean even when the variable is quoted in the file; write ${quote}${VAR}${quote} and substitute quote: '\"', see kustomize-controller's \"Post build substitution of numbers and booleans\")"
		}
		s.add(check, file, name, "%s", msg)
	}
}

// deprecatedAPI flags API versions the fleet's rules forbid, also when no
// CRD for them is around any more.
func deprecatedAPI(apiVersion, kind string) (string, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "", false
	}
	g, v := gv.Group, gv.Version
	switch {
	case strings.HasSuffix(g, ".toolkit.fluxcd.io") && (strings.Contains(v, "beta1") || strings.Contains(v, "beta2")) && g != "notification.toolkit.fluxcd.io":
		return "Flux " + v + " APIs are removed; use the v1 (helm: v2) API", true
	case g == "notification.toolkit.fluxcd.io" && (v == "v1beta1" || v == "v1beta2"):
		return "Flux notification " + v + " is removed", true
	case g == "pkg.crossplane.io" && kind == "ControllerConfig":
		return "ControllerConfig is removed in Crossplane v2; use DeploymentRuntimeConfig", true
	case g == "aws.crossplane.io" || strings.HasSuffix(g, ".aws.crossplane.io"):
		return "the classic provider-aws is legacy; use provider-upjet-aws (*.aws.upbound.io)", true
	case g == "external-secrets.io" && (v == "v1alpha1" || v == "v1beta1"):
		return "External Secrets " + v + " is removed; use external-secrets.io/v1", true
	case g == "apiextensions.crossplane.io" && kind == "Usage":
		return "apiextensions.crossplane.io Usage is deprecated in Crossplane v2; use protection.crossplane.io Usage/ClusterUsage", true
	case g == "apiextensions.crossplane.io" && (v == "v1alpha1" || v == "v1beta1") && (kind == "Composition" || kind == "CompositeResourceDefinition"):
		return kind + " " + v + " is not served by Crossplane v2", true
	}
	return "", false
}

func (r *run) renderClaims() {
	var defs []*unstructured.Unstructured
	claimKinds := map[schema.GroupKind]bool{}
	for _, b := range r.w.Results {
		if b.Cluster != kbuild.Hub {
			continue
		}
		defs = append(defs, b.Object)
		o := b.Object
		if o.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: "apiextensions.crossplane.io", Kind: "CompositeResourceDefinition"}) {
			g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(o.Object, "spec", "claimNames", "kind")
			if k != "" {
				claimKinds[schema.GroupKind{Group: g, Kind: k}] = true
			}
		}
	}
	var claims []kbuild.Built
	for _, b := range r.w.Results {
		if b.Cluster == kbuild.Hub && claimKinds[b.Object.GroupVersionKind().GroupKind()] &&
			(r.opts.Claims == nil || slices.Contains(r.opts.Claims, b.Object.GetName())) {
			claims = append(claims, b)
		}
	}
	// With fewer than two claims, names across spokes are checked against
	// a twin of the first claim under another name (not reported otherwise).
	if len(claims) == 1 {
		r.twin = twinOf(claims[0].Object)
	}
	// Claims render concurrently (each render talks to the function
	// processes, which run in parallel); results are taken in claim order
	// so the report does not depend on scheduling.
	type rendered struct {
		rc  renderedClaim
		err error
	}
	inputs := make([]*unstructured.Unstructured, 0, len(claims)+1)
	for _, b := range claims {
		inputs = append(inputs, b.Object)
	}
	if r.twin != nil {
		inputs = append(inputs, r.twin)
	}
	files := make([]string, len(claims))
	for i, b := range claims {
		files[i] = r.fileOf(kbuild.Built{Object: b.Object})
	}
	outs := make([]rendered, len(inputs))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, c := range inputs {
		g.Go(func() error {
			res, err := xrender.Render(r.ctx, c, defs, r.info)
			switch {
			case err != nil:
				outs[i] = rendered{err: err}
			case c == r.twin:
				// Only its names count (checkUnique).
				outs[i] = rendered{rc: renderedClaim{claim: c, res: res, names: composedNames(res.Composed)}}
			default:
				outs[i] = rendered{rc: r.examine(files[i], c, res)}
			}
			return nil
		})
	}
	_ = g.Wait()
	for i, b := range claims {
		c := b.Object
		file := r.fileOf(b)
		name := objectName(c, kbuild.Hub)
		rc, err := outs[i].rc, outs[i].err
		if err != nil {
			r.add(CheckRender, file, name, "%v", err)
			continue
		}
		res := rc.res
		for _, w := range res.Warnings {
			r.add(CheckRender, file, name, "function result: %s", w)
		}
		r.merge(rc.own)
		r.report.Claims++
		r.rendered = append(r.rendered, rc)
		if r.opts.KeepRendered {
			r.report.Rendered[c.GetNamespace()+"/"+c.GetName()] = res.Objects()
		}
		r.w.AddObjects(kbuild.Hub, "Composition for "+name, res.Composed)
	}
	if r.twin != nil {
		if outs[len(claims)].err != nil {
			r.twin = nil // the claim's own render reports it
			return
		}
		r.twinNames = outs[len(claims)].rc.names
	}
}

// examine runs the checks that need only the claim's own render, while
// its objects are whole: each object validated (schema and deprecation),
// spoke access, Usages; it records the names checkUnique compares across
// claims. Then, unless Options.KeepRendered, the composed objects the walk
// and the fleet-wide checks do not read (see keptComposed) are let go.
// It runs concurrently for different claims.
func (r *run) examine(file string, claim *unstructured.Unstructured, res *xrender.Result) renderedClaim {
	rc := renderedClaim{claim: claim, res: res}
	s := &rc.own
	r.addValidation(s, CheckRender, file, objectName(res.Composite, kbuild.Hub)+" (composite of "+claim.GetName()+")", res.Composite, r.v.Validate(r.ctx, res.Composite))
	for _, o := range res.Composed {
		r.addValidation(s, CheckRender, file, objectName(o, kbuild.Hub)+" (composed for "+claim.GetName()+")", o, r.v.Validate(r.ctx, o))
	}
	r.checkSpokeAccess(s, file, claim, res.Composed)
	checkUsages(s, file, claim, res.Composed)
	rc.names = composedNames(res.Composed)
	rc.kinds = oneOfEachKind(res.Composed)
	if !r.opts.KeepRendered {
		n := len(res.Composed)
		res.Composed = keptComposed(res.Composed)
		rc.dropped = n - len(res.Composed)
	}
	return rc
}

// composedName is what checkUnique compares of one composed object.
type composedName struct {
	object string   // objectName
	res    string   // its composition resource name
	keys   []string // kind and name; for account-wide AWS names, the external name
}

func composedNames(objs []*unstructured.Unstructured) []composedName {
	out := make([]composedName, 0, len(objs))
	for _, o := range objs {
		gk := o.GroupVersionKind().GroupKind().String()
		n := composedName{
			object: objectName(o, kbuild.Hub),
			res:    o.GetAnnotations()["crossplane.io/composition-resource-name"],
			keys:   []string{gk + " " + o.GetNamespace() + "/" + o.GetName()},
		}
		if ext := o.GetAnnotations()["crossplane.io/external-name"]; ext != "" && accountWideName(o) {
			n.keys = append(n.keys, gk+" external-name "+regionOf(o)+ext)
		}
		out = append(out, n)
	}
	return out
}

// twinOf is a copy of claim under another valid name, to render a second
// spoke.
func twinOf(claim *unstructured.Unstructured) *unstructured.Unstructured {
	t := claim.DeepCopy()
	name := "x" + claim.GetName()
	if len(name) > 20 {
		name = strings.TrimRight(name[:20], "-")
	}
	t.SetName(name)
	return t
}

// checkUnique: composed resources must not collide within a spoke or
// across spokes (same kind and name, or same AWS external name).
func (r *run) checkUnique() {
	type owner struct{ claim, res string }
	seen := map[string]owner{}
	sets := append([]renderedClaim{}, r.rendered...)
	if r.twin != nil {
		sets = append(sets, renderedClaim{claim: r.twin, names: r.twinNames})
	}
	for _, rc := range sets {
		file := r.fileOf(kbuild.Built{Object: rc.claim})
		if rc.claim == r.twin {
			file = r.fileOf(kbuild.Built{Object: r.rendered[0].claim})
		}
		for _, n := range rc.names {
			for _, k := range n.keys {
				if prev, ok := seen[k]; ok {
					where := "another resource of the same claim (" + prev.res + ")"
					if prev.claim != rc.claim.GetName() {
						where = "claim " + prev.claim + " (" + prev.res + ")"
					}
					if rc.claim == r.twin {
						where += ", when a second claim named " + r.twin.GetName() + " exists: the name does not derive from the claim"
					}
					r.add(CheckRender, file, n.object, "name collision: %s is also composed by %s", k, where)
					continue
				}
				seen[k] = owner{rc.claim.GetName(), n.res}
			}
		}
	}
}

func (r *run) relPath(p string) string {
	if p == "" {
		return ""
	}
	p = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "./")
	if r.prefix == "" {
		return p
	}
	if rest, ok := strings.CutPrefix(p, r.prefix+"/"); ok {
		return rest
	}
	return p
}

// checkRawAPIs scans the text of every YAML file in the tree for forbidden
// API versions, so that files no Kustomization applies yet, and resources
// a Composition did not render for the example claims, are covered too.
func (r *run) checkRawAPIs() {
	reported := map[string]bool{}
	for _, f := range r.report.Findings {
		if f.Check == CheckDeprecated {
			reported[f.File] = true
		}
	}
	for _, a := range r.files.apis {
		msg, bad := deprecatedAPI(a.apiVersion, a.kind)
		if !bad || reported[a.file] {
			continue
		}
		r.add(CheckDeprecated, fmt.Sprintf("%s:%d", a.file, a.line), a.kind, "%s %s: %s", a.apiVersion, a.kind, msg)
	}
}

// accountWideName: kinds whose AWS name is unique per account (IAM) or per
// account and region (EKS clusters); other external names are IDs AWS
// assigns or names scoped to a parent (node groups within a cluster).
func accountWideName(o *unstructured.Unstructured) bool {
	g := o.GroupVersionKind().Group
	return strings.HasPrefix(g, "iam.aws.") || (strings.HasPrefix(g, "eks.aws.") && o.GetKind() == "Cluster")
}

func regionOf(o *unstructured.Unstructured) string {
	if strings.HasPrefix(o.GroupVersionKind().Group, "iam.aws.") {
		return ""
	}
	r, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "region")
	return r + "/"
}

// checkUnreached: every Flux Kustomization and every claim written in the
// system tree is applied by some Kustomization (a file missing from a
// kustomization.yaml is silently never applied). Names with ${VARS} match
// any value.
func (r *run) checkUnreached() {
	if r.report.Claims == 0 {
		// Without a claim the spoke directories are legitimately unapplied.
		r.report.Notes = append(r.report.Notes, "no claim rendered: the check that every Flux Kustomization and claim file is applied was skipped")
		return
	}
	claimKinds := map[string]bool{}
	for _, b := range r.w.Results {
		o := b.Object
		if o.GetKind() == "CompositeResourceDefinition" {
			g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(o.Object, "spec", "claimNames", "kind")
			if k != "" {
				claimKinds[g+"/"+k] = true
			}
		}
	}
	built := map[string][]string{}
	builtName := map[string]bool{} // kind/name
	for _, b := range r.w.Results {
		built[b.Object.GetKind()] = append(built[b.Object.GetKind()], b.Object.GetName())
		builtName[b.Object.GetKind()+"/"+b.Object.GetName()] = true
	}
	system := path.Base(strings.Trim(r.info.SystemPath, "/")) + "/"
	// Under a Kustomization that failed to build, the failure says it all.
	var failed []string
	for _, f := range r.w.Failures {
		if p := r.relPath(f.Path); p != "" {
			failed = append(failed, p+"/")
		}
	}
docs:
	for _, d := range r.files.docs {
		if !strings.HasPrefix(d.file, system) {
			continue
		}
		for _, p := range failed {
			if strings.HasPrefix(d.file, p) {
				continue docs
			}
		}
		gv, err := schema.ParseGroupVersion(d.apiVersion)
		if err != nil {
			continue
		}
		isKs := gv.Group == "kustomize.toolkit.fluxcd.io" && d.kind == "Kustomization"
		isClaim := claimKinds[gv.Group+"/"+d.kind]
		if !isKs && !isClaim {
			continue
		}
		// A name without ${VARS} matches itself only: a map lookup (the
		// fleet has one claim file per cluster).
		reached := builtName[d.kind+"/"+d.name]
		if !reached && strings.Contains(d.name, "${") {
			pat := regexp.MustCompile("^" + varPattern.ReplaceAllString(regexp.QuoteMeta(d.name), ".*") + "$")
			for _, n := range built[d.kind] {
				if pat.MatchString(n) {
					reached = true
					break
				}
			}
		}
		if !reached {
			check := CheckBuild
			what := "Flux Kustomization"
			if isClaim {
				check, what = CheckRender, "claim"
			}
			r.add(check, d.file, d.kind+" "+d.name, "%s is not applied: no Kustomization's build includes it (missing from a kustomization.yaml?)", what)
		}
	}
}

// varPattern matches ${VAR} as regexp.QuoteMeta writes it.
var varPattern = regexp.MustCompile(`\\\$\\\{[A-Za-z_][A-Za-z0-9_]*\\\}`)

// checkSpokeAccess: each claim's EKS cluster is named <hub>-<spoke>, and
// the ConfigMaps its Kustomizations reach the spoke through name it for
// Flux's aws provider (data.provider aws, data.cluster the cluster ARN).
func (r *run) checkSpokeAccess(s sink, file string, claim *unstructured.Unstructured, composed []*unstructured.Unstructured) {
	want := r.info.HubName + "-" + claim.GetName()
	cms := map[string]*unstructured.Unstructured{}
	var arns []string
	for _, o := range composed {
		switch {
		case o.GroupVersionKind().Group == "eks.aws.upbound.io" && o.GetKind() == "Cluster":
			name := o.GetAnnotations()["crossplane.io/external-name"]
			if name == "" {
				name = o.GetName()
			}
			if name != want {
				s.add(CheckRender, file, objectName(o, kbuild.Hub), "EKS cluster name %q, want <hub>-<spoke> %q", name, want)
			}
			region, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "region")
			account := r.info.AccountID
			if a := claimAccount(claim); a != "" {
				account = a
			}
			arns = append(arns, fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", r.info.Partition, region, account, name))
		case o.GetKind() == "ConfigMap" && o.GroupVersionKind().Group == "":
			cms[o.GetNamespace()+"/"+o.GetName()] = o
		}
	}
	for _, o := range composed {
		if o.GetKind() != "Kustomization" && o.GetKind() != "HelmRelease" {
			continue
		}
		ref, _, _ := unstructured.NestedString(o.Object, "spec", "kubeConfig", "configMapRef", "name")
		if ref == "" {
			continue
		}
		cm, ok := cms[o.GetNamespace()+"/"+ref]
		if !ok {
			continue // the graph check reports a missing ConfigMap
		}
		provider, _, _ := unstructured.NestedString(cm.Object, "data", "provider")
		cluster, _, _ := unstructured.NestedString(cm.Object, "data", "cluster")
		if provider != "aws" {
			s.add(CheckRender, file, objectName(cm, kbuild.Hub), "kubeConfig ConfigMap data.provider = %q, want aws", provider)
		}
		if len(arns) > 0 && !slices.Contains(arns, cluster) {
			s.add(CheckRender, file, objectName(cm, kbuild.Hub), "kubeConfig ConfigMap data.cluster = %q, want the spoke's EKS cluster ARN %q", cluster, arns[0])
		}
		delete(cms, o.GetNamespace()+"/"+ref)
	}
}
