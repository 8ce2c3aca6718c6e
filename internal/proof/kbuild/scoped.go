package kbuild

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A request (fleet cluster add/upgrade/remove, fleet app add) is about one
// cluster of a fleet: the tree as it is plus a small change, with what the
// request does not reach left out (the other clusters' claim files and
// workloads folders). CopyTreeScoped copies the tree that way: nothing
// copies the whole tree, and the hub's claims Kustomization builds the
// claims in scope only.
//
// Leaving a claim file out of a claims kustomization is exact for the
// claims that stay when each resource of that kustomization builds on its
// own: the kustomization.yaml has nothing but apiVersion, kind and
// resources naming files of its own directory (no transformer, generator,
// component or patch that reads or changes another resource), and the Flux
// Kustomizations that build the directory set nothing but path and fields
// that do not change the kustomize build (post-build substitution runs per
// resource). Then kustomize and Flux's post-build substitution produce for
// each remaining resource exactly what the full build produces for it. The
// one thing the full build checks across resources, ids unique in the
// build, is the fleet policy's unique claim names. When the condition does
// not hold (CheckScoped), the caller builds again without pruning.

// ErrScopeUnsafe: a pruned listing is built by a Kustomization that might
// combine its resources; build again without pruning.
var ErrScopeUnsafe = errors.New("pruned listing is not built resource by resource")

// scopedKeys are the kustomization.yaml fields a pruned listing may have.
var scopedKeys = []string{"apiVersion", "kind", "resources"}

// kustomizationNames are the file names kustomize reads in a directory.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// CopyTreeScoped copies tree into sourceRoot at the place systemPath gives
// it (as CopyTree does), leaving out the pruned and removed paths and
// writing the overlay; pruned files listed in a kustomization.yaml are
// taken out of its resources when that listing builds resource by
// resource (see above), else they are copied after all. It returns the
// tree's prefix and the directories (relative to the tree) whose listing
// it rewrote.
func CopyTreeScoped(tree, sourceRoot, systemPath string, overlay map[string][]byte, removed, prune []string) (string, []string, error) {
	prefix, err := treePrefixOf(tree, systemPath)
	if err != nil {
		return "", nil, err
	}
	dst := filepath.Join(sourceRoot, filepath.FromSlash(prefix))
	clean := func(ps []string) map[string]bool {
		m := map[string]bool{}
		for _, p := range ps {
			m[path.Clean(filepath.ToSlash(p))] = true
		}
		return m
	}
	gone, pruned := clean(removed), clean(prune)
	under := func(set map[string]bool, rel string) bool {
		for p := rel; p != "." && p != "/"; p = path.Dir(p) {
			if set[p] {
				return true
			}
		}
		return false
	}
	written := map[string]bool{}
	for p := range overlay {
		written[path.Clean(filepath.ToSlash(p))] = true
	}
	// Pruned files, by directory, to take out of that directory's listing.
	prunedFiles := map[string][]string{}
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if rel != "." && under(gone, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			if rel != "." && pruned[rel] {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() || written[rel] {
			return nil
		}
		if under(pruned, rel) {
			prunedFiles[path.Dir(rel)] = append(prunedFiles[path.Dir(rel)], rel)
			return nil
		}
		return copyFile(p, target)
	})
	if err != nil {
		return "", nil, fmt.Errorf("copy tree: %w", err)
	}
	for rel, b := range overlay {
		target := filepath.Join(dst, filepath.FromSlash(path.Clean(filepath.ToSlash(rel))))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return "", nil, fmt.Errorf("copy tree: %w", err)
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return "", nil, fmt.Errorf("copy tree: %w", err)
		}
	}
	var rewritten []string
	for _, dir := range sortedKeys(prunedFiles) {
		files := prunedFiles[dir]
		ok, err := dropFromListing(filepath.Join(dst, filepath.FromSlash(dir)), files)
		if err != nil {
			return "", nil, fmt.Errorf("copy tree: listing of %s: %w", dir, err)
		}
		if ok {
			rewritten = append(rewritten, dir)
			continue
		}
		// Not built resource by resource: the files are needed after all.
		for _, rel := range files {
			if err := copyFile(filepath.Join(tree, filepath.FromSlash(rel)), filepath.Join(dst, filepath.FromSlash(rel))); err != nil {
				return "", nil, fmt.Errorf("copy tree: %w", err)
			}
		}
	}
	return prefix, rewritten, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// dropFromListing takes files (tree-relative paths in dir) out of the
// resources of dir's kustomization.yaml when that listing builds resource
// by resource; ok is false (nothing changed) when it does not, or when no
// kustomization.yaml lists them (then nothing builds them as a listing).
func dropFromListing(dir string, files []string) (ok bool, err error) {
	var found []string
	for _, n := range kustomizationNames {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			found = append(found, n)
		}
	}
	if len(found) != 1 {
		return len(found) == 0, nil
	}
	kpath := filepath.Join(dir, found[0])
	b, err := os.ReadFile(kpath)
	if err != nil {
		return false, err
	}
	var k map[string]any
	if err := yaml.Unmarshal(b, &k); err != nil {
		return false, nil // kustomize reports it
	}
	for key := range k {
		if !slices.Contains(scopedKeys, key) {
			return false, nil
		}
	}
	res, _ := k["resources"].([]any)
	drop := map[string]bool{}
	for _, f := range files {
		drop[path.Base(f)] = true
	}
	kept := make([]any, 0, len(res))
	for _, r := range res {
		s, isString := r.(string)
		if !isString {
			return false, nil
		}
		c := path.Clean(s)
		if strings.Contains(c, "/") || c == "." || c == ".." || strings.Contains(s, "://") {
			return false, nil // a directory, a file elsewhere or a remote
		}
		if drop[c] {
			continue // a file the walk saw
		}
		if st, err := os.Stat(filepath.Join(dir, c)); err != nil || !st.Mode().IsRegular() {
			return false, nil // a directory (a kustomization of its own), or missing
		}
		kept = append(kept, s)
	}
	if len(res) > 0 {
		k["resources"] = kept
	}
	out, err := yaml.Marshal(k)
	if err != nil {
		return false, err
	}
	return true, os.WriteFile(kpath, out, 0o644)
}

// CheckScoped: a directory whose listing CopyTreeScoped rewrote (rewritten,
// relative to the tree at prefix in sourceRoot) must be built only as the
// path of Flux Kustomizations (kustomizations, as a Walker lists them)
// that set nothing beyond spec.path and nonBuildFields (the fields that do
// not change what kustomize builds; post-build substitution runs per
// resource), and no kustomization.yaml
// may include it (its transformers would act on the listing as a whole).
// The error wraps ErrScopeUnsafe.
func CheckScoped(sourceRoot, prefix string, rewritten []string, kustomizations []Built) error {
	if len(rewritten) == 0 {
		return nil
	}
	dirs := map[string]bool{}
	for _, d := range rewritten {
		dirs[path.Join(prefix, d)] = true
	}
	for _, b := range kustomizations {
		spec, _, _ := unstructured.NestedMap(b.Object.Object, "spec")
		p, _ := spec["path"].(string)
		if !dirs[path.Clean(strings.TrimPrefix(path.Clean("/"+p), "/"))] {
			continue
		}
		for k := range spec {
			if k != "path" && !slices.Contains(nonBuildFields, k) {
				return fmt.Errorf("%w: Kustomization %s/%s sets spec.%s", ErrScopeUnsafe, b.Object.GetNamespace(), b.Object.GetName(), k)
			}
		}
	}
	// Any kustomization.yaml of the source that names a rewritten
	// directory (or a parent of it) as a resource or component.
	src := filepath.Join(sourceRoot, filepath.FromSlash(prefix))
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains(kustomizationNames, d.Name()) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k struct {
			Resources  []string `json:"resources"`
			Components []string `json:"components"`
			Bases      []string `json:"bases"`
		}
		if yaml.Unmarshal(b, &k) != nil {
			return nil
		}
		rel, _ := filepath.Rel(src, filepath.Dir(p))
		for _, e := range slices.Concat(k.Resources, k.Components, k.Bases) {
			target := path.Join(prefix, filepath.ToSlash(rel), e)
			for dir := range dirs {
				if target == dir || strings.HasPrefix(dir, target+"/") {
					return fmt.Errorf("%w: %s/%s includes %s", ErrScopeUnsafe, filepath.ToSlash(rel), d.Name(), e)
				}
			}
		}
		return nil
	})
}
