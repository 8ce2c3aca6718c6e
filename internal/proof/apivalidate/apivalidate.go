// Package apivalidate checks objects the way the API server would admit
// them, offline: custom resources against their CRD (structural schema,
// unknown fields, OpenAPI validation and CEL x-kubernetes-validations, with
// k8s.io/apiextensions-apiserver), built-in kinds against the Kubernetes
// OpenAPI schema that client-go ships (structured-merge-diff, the schema the
// API server uses for server-side apply). CRDs come from the pinned upstream
// modules (internal/build/upstream) and from CRDs and Crossplane XRDs found in
// the tree itself. A kind that is neither built in nor defined anywhere is
// an error: the API server would reject it.
package apivalidate

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// Kind describes how the validator knows a kind.
type Kind struct {
	Known      bool
	BuiltIn    bool
	Namespaced bool
	// Source names where the schema comes from (module and file, or tree).
	Source string
	// Deprecated is set when the API version is deprecated or no longer
	// served; Warning says why.
	Deprecated bool
	Warning    string
}

// Validator validates objects. It is safe for concurrent use.
type Validator struct {
	upstream *upstream.CRDSet
	tc       managedfields.TypeConverter

	mu       sync.Mutex
	local    map[schema.GroupKind]*apiextv1.CustomResourceDefinition
	localSrc map[schema.GroupKind]string
	compiled map[schema.GroupVersionKind]*compiled
}

type compiledKey struct {
	crd     *apiextv1.CustomResourceDefinition
	version string
}

var sharedCompiled sync.Map // compiledKey -> *compiled

type compiled struct {
	crd        *apiextv1.CustomResourceDefinition
	version    *apiextv1.CustomResourceDefinitionVersion
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
	err        error
}

// New returns a validator that knows the built-in kinds and the CRDs of
// the pinned upstream modules.
func New(ctx context.Context) (*Validator, error) {
	set, err := upstream.CRDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("load upstream CRDs: %w", err)
	}
	return NewWithCRDs(set), nil
}

// NewWithCRDs returns a validator over the given upstream CRD index (nil
// for none).
func NewWithCRDs(set *upstream.CRDSet) *Validator {
	return &Validator{
		upstream: set,
		tc:       applyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
		local:    map[schema.GroupKind]*apiextv1.CustomResourceDefinition{},
		localSrc: map[schema.GroupKind]string{},
		compiled: map[schema.GroupVersionKind]*compiled{},
	}
}

// AddDefinitions registers the CRDs and Crossplane XRDs among objs (XRDs
// become their composite and claim CRDs, exactly as Crossplane derives
// them). source names where they came from. Definitions in the tree win
// over upstream ones.
func (v *Validator) AddDefinitions(objs []*unstructured.Unstructured, source string) error {
	var defs []*unstructured.Unstructured
	for _, o := range objs {
		gk := o.GroupVersionKind().GroupKind()
		if gk == (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) ||
			gk == (schema.GroupKind{Group: "apiextensions.crossplane.io", Kind: "CompositeResourceDefinition"}) {
			defs = append(defs, o)
		}
	}
	if len(defs) == 0 {
		return nil
	}
	crds, err := CRDs(defs)
	if err != nil {
		return fmt.Errorf("derive CRDs from %s: %w", source, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, crd := range crds {
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		v.local[gk] = crd
		v.localSrc[gk] = source
		for gvk := range v.compiled {
			if gvk.GroupKind() == gk {
				delete(v.compiled, gvk)
			}
		}
	}
	return nil
}

// CRD returns the CRD that defines group/kind (tree first, then upstream).
func (v *Validator) CRD(group, kind string) (*apiextv1.CustomResourceDefinition, string, bool) {
	gk := schema.GroupKind{Group: group, Kind: kind}
	v.mu.Lock()
	crd, ok := v.local[gk]
	src := v.localSrc[gk]
	v.mu.Unlock()
	if ok {
		return crd, src, true
	}
	if v.upstream == nil || !v.upstream.Has(group, kind) {
		return nil, "", false
	}
	crd, err := v.upstream.Get(group, kind)
	if err != nil {
		return nil, "", false
	}
	return crd, v.upstream.Source(group, kind), true
}

// lifecycle is implemented by k8s.io/api prerelease types.
type lifecycle interface {
	APILifecycleDeprecated() (major, minor int)
	APILifecycleRemoved() (major, minor int)
}

// MinKubernetesMinor is the oldest Kubernetes minor the fleet runs (from
// internal/contract/versions); built-in API versions deprecated by then are flagged.
var MinKubernetesMinor = func() int {
	_, minor, err := versions.ParseMinor(versions.Kubernetes()[0])
	if err != nil {
		panic(err)
	}
	return minor
}()

// MaxKubernetesMinor is the newest Kubernetes minor the fleet runs; a
// built-in API version removed by then is flagged.
var MaxKubernetesMinor = func() int {
	vs := versions.Kubernetes()
	_, minor, err := versions.ParseMinor(vs[len(vs)-1])
	if err != nil {
		panic(err)
	}
	return minor
}()

// Lookup says whether and how gvk is known.
func (v *Validator) Lookup(gvk schema.GroupVersionKind) Kind {
	if crd, src, ok := v.CRD(gvk.Group, gvk.Kind); ok {
		k := Kind{Known: true, Source: src, Namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped}
		ver := crdVersion(crd, gvk.Version)
		switch {
		case ver == nil:
			k.Deprecated, k.Warning = true, fmt.Sprintf("version %s is not defined by the CRD (versions: %s)", gvk.Version, strings.Join(crdVersions(crd), ", "))
		case !ver.Served:
			k.Deprecated, k.Warning = true, fmt.Sprintf("version %s is no longer served (served: %s)", gvk.Version, strings.Join(crdVersions(crd), ", "))
		case ver.Deprecated:
			k.Deprecated = true
			k.Warning = fmt.Sprintf("version %s is deprecated", gvk.Version)
			if ver.DeprecationWarning != nil {
				k.Warning += ": " + *ver.DeprecationWarning
			}
		}
		return k
	}
	if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" {
		k := Kind{Known: true, BuiltIn: true, Source: "apiextensions.k8s.io"}
		if gvk.Version != "v1" {
			k.Deprecated, k.Warning = true, "apiextensions.k8s.io/"+gvk.Version+" was removed in Kubernetes 1.22"
		}
		return k
	}
	if clientgoscheme.Scheme.Recognizes(gvk) {
		k := Kind{Known: true, BuiltIn: true, Source: "Kubernetes OpenAPI (client-go)", Namespaced: !clusterScopedBuiltins[gvk.GroupKind()]}
		if o, err := clientgoscheme.Scheme.New(gvk); err == nil {
			if l, ok := o.(lifecycle); ok {
				if maj, mnr := l.APILifecycleRemoved(); maj > 0 && mnr <= MaxKubernetesMinor {
					k.Deprecated, k.Warning = true, fmt.Sprintf("%s is removed in Kubernetes %d.%d", gvk.GroupVersion(), maj, mnr)
				} else if maj, mnr := l.APILifecycleDeprecated(); maj > 0 && mnr <= MinKubernetesMinor {
					k.Deprecated, k.Warning = true, fmt.Sprintf("%s is deprecated since Kubernetes %d.%d", gvk.GroupVersion(), maj, mnr)
				}
			}
		}
		return k
	}
	if vs := builtinVersions(gvk.GroupKind()); len(vs) > 0 {
		return Kind{Known: true, BuiltIn: true, Deprecated: true,
			Warning: fmt.Sprintf("%s is not served by Kubernetes (versions: %s)", gvk.GroupVersion(), strings.Join(vs, ", "))}
	}
	return Kind{}
}

func builtinVersions(gk schema.GroupKind) []string {
	var out []string
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.GroupKind() == gk {
			out = append(out, gvk.Version)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

var clusterScopedBuiltins = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
}

func crdVersion(crd *apiextv1.CustomResourceDefinition, version string) *apiextv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

func crdVersions(crd *apiextv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

func (v *Validator) compile(gvk schema.GroupVersionKind) (*compiled, bool) {
	v.mu.Lock()
	c, ok := v.compiled[gvk]
	v.mu.Unlock()
	if ok {
		return c, true
	}
	crd, _, ok := v.CRD(gvk.Group, gvk.Kind)
	if !ok {
		return nil, false
	}
	// Upstream CRDs are shared process-wide, so are their compiled
	// validators (provider CRDs are large; CEL compilation is not free).
	ck := compiledKey{crd, gvk.Version}
	if cached, ok := sharedCompiled.Load(ck); ok {
		c = cached.(*compiled)
	} else {
		c = &compiled{crd: crd, version: crdVersion(crd, gvk.Version)}
		if c.version != nil {
			c.err = c.build()
		}
		if v.upstream != nil && v.upstream.Has(gvk.Group, gvk.Kind) {
			if up, err := v.upstream.Get(gvk.Group, gvk.Kind); err == nil && up == crd {
				sharedCompiled.Store(ck, c)
			}
		}
	}
	v.mu.Lock()
	v.compiled[gvk] = c
	v.mu.Unlock()
	return c, true
}

func (c *compiled) build() error {
	var s *apiextv1.JSONSchemaProps
	if c.version.Schema != nil {
		s = c.version.Schema.OpenAPIV3Schema
	}
	if s == nil {
		return fmt.Errorf("CRD %s version %s has no schema", c.crd.Name, c.version.Name)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		return fmt.Errorf("convert schema of %s: %w", c.crd.Name, err)
	}
	st, err := structuralschema.NewStructural(internal)
	if err != nil {
		return fmt.Errorf("structural schema of %s: %w", c.crd.Name, err)
	}
	c.structural = st
	c.validator, _, err = validation.NewSchemaValidator(internal)
	if err != nil {
		return fmt.Errorf("schema validator of %s: %w", c.crd.Name, err)
	}
	c.cel = cel.NewValidator(st, true, celconfig.PerCallLimit)
	return nil
}

// Validate returns every reason the API server would reject obj (an
// empty list when it would admit it). Deprecation is not an error here;
// see Lookup.
func (v *Validator) Validate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	gvk := obj.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return field.ErrorList{field.Required(field.NewPath("apiVersion"), "apiVersion and kind are required")}
	}
	if c, ok := v.compile(gvk); ok {
		return v.validateCustom(ctx, obj, c)
	}
	k := v.Lookup(gvk)
	if !k.Known {
		return field.ErrorList{field.NotSupported(field.NewPath("kind"), gvk.String(),
			[]string{"a built-in kind, or a kind defined by a pinned upstream CRD or by a CRD/XRD in the tree"})}
	}
	if k.BuiltIn && clientgoscheme.Scheme.Recognizes(gvk) {
		return v.validateBuiltin(obj, k)
	}
	if k.Deprecated {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), obj.GetAPIVersion(), k.Warning)}
	}
	return nil
}

func (v *Validator) validateCustom(ctx context.Context, obj *unstructured.Unstructured, c *compiled) field.ErrorList {
	gvk := obj.GroupVersionKind()
	if c.version == nil || !c.version.Served {
		return field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), obj.GetAPIVersion(), servedAPIVersions(c.crd))}
	}
	if c.err != nil {
		return field.ErrorList{field.InternalError(field.NewPath(""), c.err)}
	}
	var errs field.ErrorList
	namespaced := c.crd.Spec.Scope == apiextv1.NamespaceScoped
	errs = append(errs, validateMeta(obj, namespaced, path.ValidatePathSegmentName)...)

	// The API server defaults, prunes unknown fields, then validates.
	u, err := normalized(obj)
	if err != nil {
		return append(errs, field.Invalid(field.NewPath(""), nil, err.Error()))
	}
	structuraldefaulting.Default(u, c.structural)
	unknown := pruning.PruneWithOptions(u, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range unknown {
		errs = append(errs, field.Forbidden(field.NewPath(p), "unknown field (not in the "+gvk.Kind+" schema; the API server would drop it)"))
	}
	errs = append(errs, validation.ValidateCustomResource(nil, u, c.validator)...)
	if c.cel != nil {
		celErrs, _ := c.cel.Validate(ctx, nil, c.structural, u, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

func servedAPIVersions(crd *apiextv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, crd.Spec.Group+"/"+v.Name)
		}
	}
	return out
}

func (v *Validator) validateBuiltin(obj *unstructured.Unstructured, k Kind) field.ErrorList {
	var errs field.ErrorList
	nameFn := apimachineryvalidation.NameIsDNSSubdomain
	if obj.GroupVersionKind().Group == "rbac.authorization.k8s.io" {
		nameFn = path.ValidatePathSegmentName
	}
	errs = append(errs, validateMeta(obj, k.Namespaced, nameFn)...)
	if _, err := v.tc.ObjectToTyped(obj); err != nil {
		errs = append(errs, rootError(err))
	}
	// Typed round trip catches values of the wrong shape for Go types
	// (quantities, int-or-string) that the structural schema accepts.
	typed, err := clientgoscheme.Scheme.New(obj.GroupVersionKind())
	if err == nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.UnstructuredContent(), typed, true); err != nil {
			errs = append(errs, rootError(err))
		}
	}
	return errs
}

// validateMeta applies the API server's ObjectMeta rules. Namespaced
// objects may omit the namespace (Flux sets the Kustomization's target
// namespace or the object is rejected at apply time); cluster-scoped ones
// must not carry one.
func validateMeta(obj *unstructured.Unstructured, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if obj.GetName() == "" && obj.GetGenerateName() == "" {
		errs = append(errs, field.Required(meta.Child("name"), "name or generateName is required"))
	}
	if obj.GetName() != "" {
		for _, msg := range nameFn(obj.GetName(), false) {
			errs = append(errs, field.Invalid(meta.Child("name"), obj.GetName(), msg))
		}
	}
	if !namespaced && obj.GetNamespace() != "" {
		errs = append(errs, field.Forbidden(meta.Child("namespace"), "not allowed on a cluster-scoped resource"))
	}
	if obj.GetNamespace() != "" {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(obj.GetNamespace(), false) {
			errs = append(errs, field.Invalid(meta.Child("namespace"), obj.GetNamespace(), msg))
		}
	}
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(obj.GetAnnotations(), meta.Child("annotations"))...)
	errs = append(errs, metav1validation.ValidateLabels(obj.GetLabels(), meta.Child("labels"))...)
	return errs
}

func rootError(err error) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: "<object>", BadValue: field.OmitValueType{}, Detail: err.Error()}
}

// normalized copies obj through JSON, so numbers are int64 or float64 as
// the API server decodes them (YAML decoders may yield float64 for
// integers, which CEL then rejects).
func normalized(obj *unstructured.Unstructured) (map[string]any, error) {
	b, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return u.Object, nil
}
