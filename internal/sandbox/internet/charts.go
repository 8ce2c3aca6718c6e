package internet

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// Chart is a Helm chart served from a source directory of a pinned
// upstream module.
type Chart struct {
	// Dir is the chart's directory (holding Chart.yaml).
	Dir string
	// Version and AppVersion, when set, replace Chart.yaml's: an upstream
	// whose release pipeline stamps the release into the chart when it
	// packages it (Crossplane's Chart.yaml says 0.0.1 in the source;
	// External Secrets bumps it after tagging) is served as it publishes it.
	Version, AppVersion string
	// StubDependencies are subcharts the chart lists but the module does not
	// vendor (upstream's package includes them); each is served as an empty
	// chart of that name and version. Only dependencies the release leaves
	// disabled may be stubbed: an enabled one would render nothing.
	StubDependencies map[string]string
	// Files are added to the chart (path relative to it): what upstream's
	// release generates into the chart before packaging it.
	Files map[string][]byte
}

// ChartRepo is a Helm HTTP repository (index.yaml and chart archives) for
// one host and path prefix, as helm and source-controller read one.
type ChartRepo struct {
	BaseURL string // e.g. https://charts.crossplane.io/stable

	mu      sync.Mutex
	entries map[string][]map[string]any
	files   map[string][]byte
}

// NewChartRepo makes an empty repository served at baseURL.
func NewChartRepo(baseURL string) *ChartRepo {
	return &ChartRepo{BaseURL: strings.TrimSuffix(baseURL, "/"), entries: map[string][]map[string]any{}, files: map[string][]byte{}}
}

// Add packages c and lists it in the index.
func (r *ChartRepo) Add(c Chart) error {
	meta, archive, err := c.Package()
	if err != nil {
		return err
	}
	name, _ := meta["name"].(string)
	version, _ := meta["version"].(string)
	file := fmt.Sprintf("%s-%s.tgz", name, version)
	sum := sha256.Sum256(archive)
	// helm package writes the index entry from the parsed chart metadata
	// (helm.sh/helm/v3 pkg/chart/metadata.go), so fields Helm does not know
	// (crossplane's Chart.yaml has "source") are dropped; source-controller
	// reads the index strictly.
	entry := map[string]any{}
	for k, v := range meta {
		if helmMetadataFields[k] {
			entry[k] = v
		}
	}
	entry["urls"] = []any{r.BaseURL + "/" + file}
	entry["digest"] = hex.EncodeToString(sum[:])
	entry["created"] = time.Unix(0, 0).UTC().Format(time.RFC3339)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[name] = append(r.entries[name], entry)
	r.files[file] = archive
	return nil
}

var helmMetadataFields = map[string]bool{
	"name": true, "home": true, "sources": true, "version": true, "description": true, "keywords": true,
	"maintainers": true, "icon": true, "apiVersion": true, "condition": true, "tags": true, "appVersion": true,
	"deprecated": true, "annotations": true, "kubeVersion": true, "dependencies": true, "type": true,
}

// ServeHTTP answers index.yaml and the archives under the base URL's path.
func (r *ChartRepo) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	u, err := url.Parse(r.BaseURL)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	base := strings.TrimSuffix(path.Clean("/"+u.Path), "/")
	p := path.Clean(req.URL.Path)
	rel, ok := strings.CutPrefix(p, base+"/")
	if !ok {
		http.NotFound(w, req)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rel == "index.yaml" {
		b, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": r.entries, "generated": time.Unix(0, 0).UTC().Format(time.RFC3339)})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-yaml")
		_, _ = w.Write(b)
		return
	}
	if b, ok := r.files[rel]; ok {
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(b)
		return
	}
	http.NotFound(w, req)
}

// Package returns the chart's metadata (Chart.yaml, with Version and
// AppVersion applied) and its archive as helm package writes it: every
// file under one top-level directory named after the chart.
func (c Chart) Package() (map[string]any, []byte, error) {
	raw, err := os.ReadFile(filepath.Join(c.Dir, "Chart.yaml"))
	if err != nil {
		return nil, nil, err
	}
	meta := map[string]any{}
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return nil, nil, fmt.Errorf("%s/Chart.yaml: %w", c.Dir, err)
	}
	if c.Version != "" {
		meta["version"] = c.Version
	}
	if c.AppVersion != "" {
		meta["appVersion"] = c.AppVersion
	}
	chartYAML, err := yaml.Marshal(meta)
	if err != nil {
		return nil, nil, err
	}
	name, _ := meta["name"].(string)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add := func(rel string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + rel, Mode: 0o644, Size: int64(len(b)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	ignored, err := helmIgnore(c.Dir)
	if err != nil {
		return nil, nil, err
	}
	var files []string
	err = filepath.WalkDir(c.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.Dir, p)
		if rel != "." && ignored(filepath.ToSlash(rel), d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	for _, p := range files {
		rel, _ := filepath.Rel(c.Dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "Chart.yaml" {
			if err := add(rel, chartYAML); err != nil {
				return nil, nil, err
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, err
		}
		if err := add(rel, b); err != nil {
			return nil, nil, err
		}
	}
	extra := make([]string, 0, len(c.Files))
	for f := range c.Files {
		extra = append(extra, f)
	}
	sort.Strings(extra)
	for _, f := range extra {
		if err := add(f, c.Files[f]); err != nil {
			return nil, nil, err
		}
	}
	deps := make([]string, 0, len(c.StubDependencies))
	for d := range c.StubDependencies {
		deps = append(deps, d)
	}
	sort.Strings(deps)
	for _, d := range deps {
		stub := fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ndescription: stand-in for a dependency the release leaves disabled\n", d, c.StubDependencies[d])
		if err := add("charts/"+d+"/Chart.yaml", []byte(stub)); err != nil {
			return nil, nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, nil, err
	}
	return meta, buf.Bytes(), nil
}

// helmIgnore reads the chart's .helmignore as helm package applies it
// (helm.sh/helm/v3 pkg/ignore/doc.go): one shell glob per line, matched
// against the base name, or against the path relative to the chart when
// the pattern has a slash; a trailing slash matches directories only.
// .helmignore itself is always left out. Negation ("!") is not modelled:
// a chart that uses it fails here rather than packaging other files.
func helmIgnore(dir string) (func(rel string, isDir bool) bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, ".helmignore"))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	type rule struct {
		pattern string
		dirOnly bool
	}
	var rules []rule
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			return nil, fmt.Errorf("%s/.helmignore: negation %q is not modelled", dir, line)
		}
		r := rule{pattern: strings.TrimSuffix(line, "/")}
		r.dirOnly = strings.HasSuffix(line, "/")
		rules = append(rules, r)
	}
	return func(rel string, isDir bool) bool {
		if rel == ".helmignore" {
			return true
		}
		for _, r := range rules {
			if r.dirOnly && !isDir {
				continue
			}
			target := path.Base(rel)
			if strings.Contains(r.pattern, "/") {
				target = rel
			}
			if ok, _ := path.Match(r.pattern, target); ok {
				return true
			}
		}
		return false
	}, nil
}
