// Package upstream gives the offline proof the pinned upstream releases as
// local directories: each module is fetched through the Go module proxy with
// `go mod download -json MODULE@VERSION` (so it lands in, and is read from,
// the module cache) and its CRDs are indexed by group and kind. Nothing is
// copied into the repository; everything is cached once per process.
package upstream

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/mod/module"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// Module is one pinned upstream Go module and the directories inside it
// that hold its CustomResourceDefinitions.
type Module struct {
	Path    string
	Version string
	CRDDirs []string
}

// Module paths of the pinned releases.
const (
	CrossplaneModule          = "github.com/crossplane/crossplane/v2"
	ProviderAWSModule         = "github.com/crossplane-contrib/provider-upjet-aws/v2"
	KustomizeControllerModule = "github.com/fluxcd/kustomize-controller"
	SourceControllerModule    = "github.com/fluxcd/source-controller"
	HelmControllerModule      = "github.com/fluxcd/helm-controller"
	FluxOperatorModule        = "github.com/controlplaneio-fluxcd/flux-operator"
	ExternalSecretsModule     = "github.com/external-secrets/external-secrets"
	SealedSecretsModule       = "github.com/bitnami-labs/sealed-secrets"
)

// Modules returns the pinned modules whose CRDs the proof validates
// against, with versions from internal/contract/versions.
func Modules() []Module {
	return []Module{
		{CrossplaneModule, "v" + versions.Crossplane, []string{"cluster/crds"}},
		{ProviderAWSModule, "v" + versions.ProviderAWS, []string{"package/crds"}},
		{KustomizeControllerModule, "v" + versions.KustomizeController, []string{"config/crd/bases"}},
		{SourceControllerModule, "v" + versions.SourceController, []string{"config/crd/bases"}},
		{HelmControllerModule, "v" + versions.HelmController, []string{"config/crd/bases"}},
		{FluxOperatorModule, "v" + versions.FluxOperator, []string{"config/crd/bases"}},
		{ExternalSecretsModule, "v" + versions.ExternalSecrets, []string{"config/crds/bases"}},
		{SealedSecretsModule, "v" + versions.SealedSecrets, []string{"helm/sealed-secrets/crds"}},
	}
}

type dirResult struct {
	once sync.Once
	dir  string
	err  error
}

var dirs sync.Map // "path@version" -> *dirResult

// Dir returns the local directory holding MODULE@VERSION, downloading it
// through the module proxy when it is not in the module cache yet. A module
// that the local Go toolchain refuses to extract (for example one that
// requires a newer Go) is extracted from its verified zip into the user
// cache directory instead.
func Dir(ctx context.Context, path, version string) (string, error) {
	v, _ := dirs.LoadOrStore(path+"@"+version, &dirResult{})
	r := v.(*dirResult)
	r.once.Do(func() {
		if d, ok := cachedDir(path, version); ok {
			r.dir = d
			return
		}
		r.dir, r.err = download(ctx, path, version)
	})
	return r.dir, r.err
}

// cachedDir is where `go mod download` would report MODULE@VERSION when
// it is already extracted, complete, in the module cache (GOMODCACHE, else
// the first GOPATH entry's pkg/mod, else ~/go/pkg/mod), or in this
// package's own extraction directory; asking the go command costs a
// process per module on every run.
func cachedDir(path, version string) (string, bool) {
	if cache, err := os.UserCacheDir(); err == nil {
		dest := filepath.Join(cache, "eks-fleet", "upstream", filepath.FromSlash(path)+"@"+version)
		if _, err := os.Stat(filepath.Join(dest, ".complete")); err == nil {
			return dest, true
		}
	}
	modCache := os.Getenv("GOMODCACHE")
	if modCache == "" {
		gopath := filepath.SplitList(os.Getenv("GOPATH"))
		if len(gopath) > 0 && gopath[0] != "" {
			modCache = filepath.Join(gopath[0], "pkg", "mod")
		} else if home, err := os.UserHomeDir(); err == nil {
			modCache = filepath.Join(home, "go", "pkg", "mod")
		} else {
			return "", false
		}
	}
	ep, err := module.EscapePath(path)
	if err != nil {
		return "", false
	}
	ev, err := module.EscapeVersion(version)
	if err != nil {
		return "", false
	}
	dir := filepath.Join(modCache, filepath.FromSlash(ep)+"@"+ev)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", false
	}
	// The go command marks a module whose extraction has not finished.
	if _, err := os.Stat(filepath.Join(modCache, "cache", "download", filepath.FromSlash(ep), "@v", ev+".partial")); err == nil {
		return "", false
	}
	return dir, true
}

type downloadJSON struct {
	Dir   string
	Zip   string
	Error string
}

func download(ctx context.Context, path, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", path+"@"+version)
	// Outside any module, so the main module's go.mod is never touched.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var d downloadJSON
	if err := json.Unmarshal(out, &d); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", path, version, runErr, strings.TrimSpace(stderr.String()))
	}
	if d.Dir != "" {
		return d.Dir, nil
	}
	if d.Zip == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s %s", path, version, d.Error, strings.TrimSpace(stderr.String()))
	}
	return extractZip(path, version, d.Zip)
}

func extractZip(path, version, zipFile string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dest := filepath.Join(cache, "eks-fleet", "upstream", filepath.FromSlash(path)+"@"+version)
	if _, err := os.Stat(filepath.Join(dest, ".complete")); err == nil {
		return dest, nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", fmt.Errorf("extract %s@%s: %w", path, version, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".extract-*")
	if err != nil {
		return "", fmt.Errorf("extract %s@%s: %w", path, version, err)
	}
	defer os.RemoveAll(tmp)
	zr, err := zip.OpenReader(zipFile)
	if err != nil {
		return "", fmt.Errorf("extract %s@%s: %w", path, version, err)
	}
	defer zr.Close()
	prefix := path + "@" + version + "/"
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		target := filepath.Join(tmp, filepath.FromSlash(name))
		if !strings.HasPrefix(target, tmp+string(os.PathSeparator)) {
			return "", fmt.Errorf("extract %s@%s: bad path %q in zip", path, version, f.Name)
		}
		if err := writeZipFile(f, target); err != nil {
			return "", fmt.Errorf("extract %s@%s: %w", path, version, err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dest)
	if err := os.Rename(tmp, dest); err != nil {
		if _, statErr := os.Stat(filepath.Join(dest, ".complete")); statErr == nil {
			return dest, nil // another process won the race
		}
		return "", fmt.Errorf("extract %s@%s: %w", path, version, err)
	}
	return dest, nil
}

func writeZipFile(f *zip.File, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	w, err := os.Create(target)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, rc); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// CRDSet indexes the CRDs of the pinned modules by group and kind; a CRD
// is parsed the first time it is asked for.
type CRDSet struct {
	mu      sync.Mutex
	files   map[schema.GroupKind]string
	modules map[schema.GroupKind]string
	parsed  map[schema.GroupKind]*apiextv1.CustomResourceDefinition
}

var (
	setOnce sync.Once
	set     *CRDSet
	setErr  error
)

// CRDs returns the process-wide index of the pinned modules' CRDs.
func CRDs(ctx context.Context) (*CRDSet, error) {
	setOnce.Do(func() { set, setErr = load(ctx, Modules()) })
	return set, setErr
}

// LoadCRDs indexes the CRDs of the given modules (not cached).
func LoadCRDs(ctx context.Context, mods []Module) (*CRDSet, error) { return load(ctx, mods) }

func load(ctx context.Context, mods []Module) (*CRDSet, error) {
	s := &CRDSet{
		files:   map[schema.GroupKind]string{},
		modules: map[schema.GroupKind]string{},
		parsed:  map[schema.GroupKind]*apiextv1.CustomResourceDefinition{},
	}
	type res struct {
		dir string
		err error
	}
	results := make([]res, len(mods))
	var wg sync.WaitGroup
	for i, m := range mods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Dir(ctx, m.Path, m.Version)
			results[i] = res{d, err}
		}()
	}
	wg.Wait()
	for i, m := range mods {
		if results[i].err != nil {
			return nil, results[i].err
		}
		for _, sub := range m.CRDDirs {
			dir := filepath.Join(results[i].dir, filepath.FromSlash(sub))
			entries, err := os.ReadDir(dir)
			if err != nil {
				return nil, fmt.Errorf("CRDs of %s@%s: %w", m.Path, m.Version, err)
			}
			for _, e := range entries {
				if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
					continue
				}
				file := filepath.Join(dir, e.Name())
				gk, ok, err := scanGroupKind(file)
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				s.files[gk] = file
				s.modules[gk] = m.Path + "@" + m.Version
			}
		}
	}
	return s, nil
}

// scanGroupKind reads spec.group and spec.names.kind from the head of a
// controller-gen CRD file without parsing the (often huge) schema.
func scanGroupKind(file string) (schema.GroupKind, bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return schema.GroupKind{}, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var gk schema.GroupKind
	isCRD, inSpec, inNames := false, false, false
	for n := 0; sc.Scan() && n < 200; n++ {
		line := sc.Text()
		switch {
		case line == "kind: CustomResourceDefinition":
			isCRD = true
		case line == "spec:":
			inSpec = true
		case inSpec && strings.HasPrefix(line, "  group: "):
			gk.Group = strings.Trim(strings.TrimPrefix(line, "  group: "), `"'`)
		case inSpec && line == "  names:":
			inNames = true
		case inNames && strings.HasPrefix(line, "    kind: "):
			gk.Kind = strings.Trim(strings.TrimPrefix(line, "    kind: "), `"'`)
		case inNames && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "    "):
			inNames = false
		}
		if isCRD && gk.Group != "" && gk.Kind != "" {
			return gk, true, nil
		}
	}
	if !isCRD {
		return gk, false, nil
	}
	// Unusual layout: parse the whole file.
	crd, err := parseCRD(file)
	if err != nil {
		return gk, false, err
	}
	return schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}, true, nil
}

func parseCRD(file string) (*apiextv1.CustomResourceDefinition, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	// Some files start with a document separator.
	b = bytes.TrimPrefix(bytes.TrimSpace(b), []byte("---\n"))
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		return nil, fmt.Errorf("parse CRD %s: %w", file, err)
	}
	return crd, nil
}

// ErrNotFound is returned by Get when no pinned module defines the kind.
var ErrNotFound = errors.New("no pinned upstream CRD")

// Get returns the CRD that defines group/kind.
func (s *CRDSet) Get(group, kind string) (*apiextv1.CustomResourceDefinition, error) {
	gk := schema.GroupKind{Group: group, Kind: kind}
	s.mu.Lock()
	defer s.mu.Unlock()
	if crd, ok := s.parsed[gk]; ok {
		return crd, nil
	}
	file, ok := s.files[gk]
	if !ok {
		return nil, fmt.Errorf("%w for %s", ErrNotFound, gk)
	}
	crd, err := parseCRD(file)
	if err != nil {
		return nil, err
	}
	s.parsed[gk] = crd
	return crd, nil
}

// Has reports whether a pinned module defines group/kind.
func (s *CRDSet) Has(group, kind string) bool {
	_, ok := s.files[schema.GroupKind{Group: group, Kind: kind}]
	return ok
}

// Source names the module@version and file that define group/kind.
func (s *CRDSet) Source(group, kind string) string {
	gk := schema.GroupKind{Group: group, Kind: kind}
	return s.modules[gk] + " " + filepath.Base(s.files[gk])
}

// Kinds lists every indexed group/kind, sorted.
func (s *CRDSet) Kinds() []schema.GroupKind {
	out := make([]schema.GroupKind, 0, len(s.files))
	for gk := range s.files {
		out = append(out, gk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
