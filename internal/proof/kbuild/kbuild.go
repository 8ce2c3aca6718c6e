// Package kbuild builds a Flux Kustomization into the objects that
// kustomize-controller would apply, with the controller's own code path:
// github.com/fluxcd/pkg/kustomize generates the kustomization.yaml from the
// Kustomization's spec (NewGenerator/WriteFile), builds it with SecureBuild
// (no remote bases), checks every resource has apiVersion, kind and name,
// and runs post-build substitution (SubstituteVariables) in strict mode, the
// variables coming from postBuild.substitute and from the ConfigMaps and
// Secrets of postBuild.substituteFrom, read through a Kubernetes client
// (here an in-memory one holding what the cluster would hold).
package kbuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	securejoin "github.com/cyphar/filepath-securejoin"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	generator "github.com/fluxcd/pkg/kustomize"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/resid"
)

// buildMu serialises builds: kustomize keeps a process-global OpenAPI
// schema, and the generator writes kustomization.yaml into the build dir.
var buildMu sync.Mutex

// ErrPathNotFound is wrapped when spec.path does not exist in the source.
var ErrPathNotFound = errors.New("kustomization path not found")

// Build returns the objects kustomize-controller would apply for ks, with
// sourceRoot the root of the source artifact (the repository checkout).
// sourceRoot is modified while building (as the controller modifies its
// temporary checkout) and restored before Build returns; callers that may
// not touch the original should pass a copy (see CopySource). vars reads
// the ConfigMaps and Secrets of substituteFrom (see NewVarClient).
func Build(ctx context.Context, sourceRoot string, ks *kustomizev1.Kustomization, vars client.Client) ([]*unstructured.Unstructured, error) {
	return (*Cache)(nil).Build(ctx, sourceRoot, ks, vars)
}

// Cache remembers kustomize builds (before post-build substitution), so
// that Kustomizations which build the same path of the same source the
// same way (e.g. each spoke's spoke-bootstrap/* Kustomizations, which
// differ only in postBuild) run kustomize once. kustomize-controller
// builds every Kustomization from scratch, re-reading kustomize's OpenAPI
// schema each time; the result of that step depends only on the source
// tree, spec.path and the spec fields the generator reads, so it is
// computed once per key and every Kustomization then runs Flux's own
// strict post-build substitution on a deep copy of it. The source tree
// must not change while a Cache is in use. A Cache is safe for concurrent
// use; the zero value and nil are valid (nil: no caching).
type Cache struct {
	mu sync.Mutex
	m  map[string]*cacheEntry
	// hits and misses count lookups (for tests and benchmarks).
	hits, misses int
	// numbers: what substitution's round trips make of each number
	// literal (decode.go).
	numbers numberMemo
}

type cacheEntry struct {
	once sync.Once
	res  resmap.ResMap
	err  error
	// prep holds, per resource of res, what substitution needs and the
	// results that do not depend on the variables (see prepare).
	prep []prepared
}

// NewCache returns an empty build cache.
func NewCache() *Cache { return &Cache{} }

// Stats returns how many builds were served from the cache and how many
// ran kustomize.
func (c *Cache) Stats() (hits, misses int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// nonBuildFields are Kustomization spec fields that do not change what
// kustomize builds (they act on substitution, apply, health or
// scheduling). Every other spec field is part of the cache key, so a
// field Flux adds later is keyed (a cache miss, never a wrong hit).
var nonBuildFields = []string{
	"postBuild", "kubeConfig", "dependsOn", "interval", "retryInterval", "timeout",
	"prune", "wait", "force", "suspend", "healthChecks", "healthCheckExprs",
	"serviceAccountName", "deletionPolicy", "sourceRef",
}

// cacheKey is the source root, spec.path and the build-relevant spec.
func cacheKey(root string, spec map[string]any) (string, error) {
	keyed := make(map[string]any, len(spec))
	for k, v := range spec {
		keyed[k] = v
	}
	for _, f := range nonBuildFields {
		delete(keyed, f)
	}
	b, err := json.Marshal(keyed) // map keys are sorted: deterministic
	if err != nil {
		return "", err
	}
	return root + "\x00" + string(b), nil
}

// Build is Build through the cache.
func (c *Cache) Build(ctx context.Context, sourceRoot string, ks *kustomizev1.Kustomization, vars client.Client) ([]*unstructured.Unstructured, error) {
	root, err := filepath.Abs(sourceRoot)
	if err != nil {
		return nil, err
	}
	k, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ks)
	if err != nil {
		return nil, err
	}
	u := unstructured.Unstructured{Object: k}

	var m resmap.ResMap
	if c == nil {
		m, err = kustomizeBuild(root, ks, u)
	} else {
		spec, _ := k["spec"].(map[string]any)
		key, kerr := cacheKey(root, spec)
		if kerr != nil {
			return nil, kerr
		}
		c.mu.Lock()
		if c.m == nil {
			c.m = map[string]*cacheEntry{}
		}
		e, hit := c.m[key]
		if !hit {
			e = &cacheEntry{}
			c.m[key] = e
			c.misses++
		} else {
			c.hits++
		}
		c.mu.Unlock()
		e.once.Do(func() {
			if e.res, e.err = kustomizeBuild(root, ks, u); e.err == nil {
				e.prep = prepare(e.res)
			}
		})
		if e.err != nil {
			return nil, e.err
		}
		return e.postBuild(ctx, ks, u, vars, &c.numbers)
	}
	if err != nil {
		return nil, err
	}
	return postBuild(ctx, m, ks, u, vars)
}

// kustomizeBuild is kustomize-controller's build step: generate the
// kustomization.yaml from the spec and build it with SecureBuild.
func kustomizeBuild(root string, ks *kustomizev1.Kustomization, u unstructured.Unstructured) (resmap.ResMap, error) {
	buildMu.Lock()
	defer buildMu.Unlock()

	dirPath, err := securejoin.SecureJoin(root, ks.Spec.Path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dirPath); err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrPathNotFound, ks.Spec.Path, err)
	}

	action, err := generator.NewGenerator(root, u).WriteFile(dirPath, generator.WithSaveOriginalKustomization())
	if err != nil {
		return nil, fmt.Errorf("generate kustomization.yaml: %w", err)
	}
	defer func() { _ = generator.CleanDirectory(dirPath, action) }()

	m, err := secureBuild(root, dirPath)
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %w", err)
	}
	return m, nil
}

// postBuild is what kustomize-controller does next, resource by resource:
// check apiVersion, kind and name, run post-build substitution (strict) on
// m, which it modifies; it returns the objects as the API server would
// decode them.
func postBuild(ctx context.Context, m resmap.ResMap, ks *kustomizev1.Kustomization, u unstructured.Unstructured, vars client.Client) ([]*unstructured.Unstructured, error) {
	if vars == nil {
		vars = NewVarClient()
	}
	// kustomize-controller puts each substituted resource back with
	// m.Replace, which scans the whole list for the resource's current id
	// (O(N) per resource, O(N²) for the hub's list of claims). Substitution
	// rewrites the resource in place, so Replace only puts it where it is;
	// what it can do is fail when the new id matches several resources.
	// ids counts the current ids to give that failure in O(1).
	var ids map[string]int
	if ks.Spec.PostBuild != nil {
		ids = make(map[string]int, m.Size())
		for _, res := range m.Resources() {
			ids[idKey(res.CurId())]++
		}
	}
	for _, res := range m.Resources() {
		if res.GetName() == "" || res.GetKind() == "" || res.GetApiVersion() == "" {
			return nil, fmt.Errorf("failed to decode Kubernetes apiVersion, kind and name from: %v", res.String())
		}
		if ks.Spec.PostBuild != nil {
			before := idKey(res.CurId())
			always := ks.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways
			outRes, err := generator.SubstituteVariables(ctx, vars, u, res,
				generator.SubstituteWithStrict(true),
				generator.SubstituteWithAlways(always))
			if err != nil {
				return nil, fmt.Errorf("post build failed for '%s/%s': %w", res.GetGvk(), res.GetName(), err)
			}
			if outRes == nil {
				continue
			}
			if outRes != res {
				if _, err := m.Replace(outRes); err != nil {
					return nil, err
				}
				continue
			}
			after := idKey(res.CurId())
			ids[before]--
			ids[after]++
			if n := ids[after]; n > 1 {
				return nil, fmt.Errorf("in Replace: id matched %d resources", n)
			}
		}
	}
	out := make([]*unstructured.Unstructured, 0, m.Size())
	for _, res := range m.Resources() {
		u, err := toUnstructured(res)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// NewVarClient returns an in-memory client holding the given ConfigMaps
// and Secrets (typed, or unstructured as built from a tree), for
// substituteFrom.
func NewVarClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
}

// VarObject converts a built ConfigMap or Secret into a typed object for
// NewVarClient; other kinds return nil.
func VarObject(u *unstructured.Unstructured) (client.Object, error) {
	var obj client.Object
	switch u.GroupVersionKind() {
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		obj = &corev1.ConfigMap{}
	case corev1.SchemeGroupVersion.WithKind("Secret"):
		s := &corev1.Secret{}
		obj = s
		defer func() {
			// The API server moves stringData into data.
			for k, v := range s.StringData {
				if s.Data == nil {
					s.Data = map[string][]byte{}
				}
				s.Data[k] = []byte(v)
			}
		}()
	default:
		return nil, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return obj, nil
}

// CopySource copies the directory src into dst/<base of src>, so that a
// tree at .../manifests is reachable as ./manifests/... from dst, the way
// the repository checkout presents it to Flux. It returns dst.
func CopySource(src, dst string) error {
	src = filepath.Clean(src)
	base := filepath.Join(dst, filepath.Base(src))
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(base, rel)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// TreePrefix is where a tree sits in its repository: GITOPS_SYSTEM_PATH
// (systemPath, e.g. "manifests/gitops-system") names the tree's
// gitops-system directory from the repository root, so the tree is its
// parent ("manifests"; "" when gitops-system is at the root of a repository
// of its own). The tree's own directory name does not matter: a checkout
// anywhere, or a copy, works.
func TreePrefix(systemPath string) (string, error) {
	p := path.Clean("/" + strings.Trim(strings.TrimSpace(systemPath), "/"))
	if p == "/" || strings.Contains(systemPath, "..") {
		return "", fmt.Errorf("GITOPS_SYSTEM_PATH %q: want the path of the gitops-system directory in the repository, e.g. manifests/gitops-system or gitops-system", systemPath)
	}
	prefix := strings.TrimPrefix(path.Dir(p), "/")
	return prefix, nil
}

// CopyTree copies the tree at src into sourceRoot at the place
// GITOPS_SYSTEM_PATH gives it (see TreePrefix), so that Kustomization paths
// written from the repository root resolve; it returns the prefix.
func CopyTree(src, sourceRoot, systemPath string) (string, error) {
	prefix, err := treePrefixOf(src, systemPath)
	if err != nil {
		return "", err
	}
	stage, err := os.MkdirTemp(sourceRoot, ".copy-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	if err := CopySource(src, stage); err != nil {
		return "", err
	}
	copied := filepath.Join(stage, filepath.Base(filepath.Clean(src)))
	if prefix == "" {
		entries, err := os.ReadDir(copied)
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if err := os.Rename(filepath.Join(copied, e.Name()), filepath.Join(sourceRoot, e.Name())); err != nil {
				return "", err
			}
		}
		return "", nil
	}
	target := filepath.Join(sourceRoot, filepath.FromSlash(prefix))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(copied, target); err != nil {
		return "", err
	}
	return prefix, nil
}

// treePrefixOf is TreePrefix(systemPath) for the tree at tree, which must
// hold the directory systemPath's last element names.
func treePrefixOf(tree, systemPath string) (string, error) {
	prefix, err := TreePrefix(systemPath)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(filepath.Join(tree, path.Base(systemPath))); err != nil || !st.IsDir() {
		return "", fmt.Errorf("tree %s: no directory %s (GITOPS_SYSTEM_PATH %q names it)", tree, path.Base(systemPath), systemPath)
	}
	return prefix, nil
}

// idKey is a resid.ResId as ResId.Equals compares it (effective namespace,
// group, version, kind, name).
func idKey(id resid.ResId) string {
	return id.Group + "\x00" + id.Version + "\x00" + id.Kind + "\x00" + id.EffectiveNamespace() + "\x00" + id.Name
}
