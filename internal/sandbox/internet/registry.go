package internet

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/build/xpkgbuild"
)

// Registry is an OCI registry (go-containerregistry's in-memory one)
// served for one host through the Internet, and on a loopback address the
// test pushes to.
type Registry struct {
	Host string
	push string
}

// NewRegistry returns the registry in serves for host, starting an empty
// one the first time.
func NewRegistry(in *Internet, host string) (*Registry, error) {
	in.mu.Lock()
	r, ok := in.registries[host]
	in.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := newRegistry(in, host)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.registries == nil {
		in.registries = map[string]*Registry{}
	}
	in.registries[host] = r
	return r, nil
}

// RepositoryPath drops the registry host of an image repository.
func RepositoryPath(repo string) string {
	_, rest, _ := strings.Cut(repo, "/")
	return rest
}

func newRegistry(in *Internet, host string) (*Registry, error) {
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = http.Serve(l, h) }()
	in.Handle(host, h)
	return &Registry{Host: host, push: l.Addr().String()}, nil
}

// Push stores img as repository:tag (repository without the host).
func (r *Registry) Push(repository, tag string, img v1.Image) error {
	ref, err := name.ParseReference(r.push+"/"+repository+":"+tag, name.Insecure)
	if err != nil {
		return err
	}
	return remote.Write(ref, img)
}

// PushIndex stores an image index as repository:tag.
func (r *Registry) PushIndex(repository, tag string, idx v1.ImageIndex) error {
	ref, err := name.ParseReference(r.push+"/"+repository+":"+tag, name.Insecure)
	if err != nil {
		return err
	}
	return remote.WriteIndex(ref, idx)
}

// PackageImage is a Crossplane package image holding package.yaml (the
// metadata document followed by the objects) in a layer annotated
// io.crossplane.xpkg: base, as `crossplane xpkg build` writes one.
func PackageImage(meta []byte, objects [][]byte) (v1.Image, error) {
	var doc bytes.Buffer
	doc.Write(bytes.TrimSpace(meta))
	for _, o := range objects {
		doc.WriteString("\n---\n")
		doc.Write(bytes.TrimSpace(o))
	}
	doc.WriteString("\n")
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	if err := tw.WriteHeader(&tar.Header{Name: xpkgbuild.PackageFile, Mode: 0o644, Size: int64(doc.Len()), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(doc.Bytes()); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := tb.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, Annotations: map[string]string{xpkgbuild.AnnotationKey: xpkgbuild.BaseAnnotation}})
	if err != nil {
		return nil, err
	}
	d, err := layer.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Labels = map[string]string{xpkgbuild.AnnotationKey + ":" + d.String(): xpkgbuild.BaseAnnotation}
	return mutate.ConfigFile(img, cf)
}

// readYAMLFiles reads every file of dir whose name matches one of the
// prefixes (all files when none).
func readYAMLFiles(dir string, prefixes ...string) ([][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		ok := len(prefixes) == 0
		for _, p := range prefixes {
			ok = ok || strings.HasPrefix(e.Name(), p)
		}
		if ok {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	out := make([][]byte, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// withConversionWebhook sets a CRD's conversion to the provider's webhook,
// as provider-upjet-aws's package/kustomize/webhook.yaml patch does to
// every CRD of its packages (Crossplane fills in the Service and CA).
func withConversionWebhook(crd []byte) ([]byte, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal(crd, &m); err != nil {
		return nil, err
	}
	spec, _ := m["spec"].(map[string]any)
	if spec == nil {
		return nil, fmt.Errorf("CRD without spec")
	}
	spec["conversion"] = map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"clientConfig":             map[string]any{"service": map[string]any{"path": "/convert"}},
			"conversionReviewVersions": []any{"v1"},
		},
	}
	return yaml.Marshal(m)
}
