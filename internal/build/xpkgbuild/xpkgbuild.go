// Package xpkgbuild builds a Crossplane function package (xpkg) offline: it
// cross-compiles the function's main package with the local Go toolchain and
// assembles a multi-platform OCI image index with go-containerregistry,
// following Crossplane's xpkg conventions (package.yaml in a layer annotated
// io.crossplane.xpkg: base, the binary as entrypoint serving gRPC on 9443).
// Every timestamp is fixed and the build is -trimpath with an empty build ID,
// so two builds of the same source give the same digest.
package xpkgbuild

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/Masterminds/semver/v3"
	pkgmetav1 "github.com/crossplane/crossplane/apis/v2/pkg/meta/v1"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

const (
	// AnnotationKey and BaseAnnotation mark the layer holding package.yaml,
	// as Crossplane's package manager looks for it.
	AnnotationKey  = "io.crossplane.xpkg"
	BaseAnnotation = "base"
	// PackageFile is the metadata file's name inside the base layer.
	PackageFile = "package.yaml"
	// Entrypoint is the function binary's path in the image.
	Entrypoint = "/function"
	// Port is the gRPC port Crossplane dials on a function.
	Port = "9443/tcp"
	// nonroot is distroless' nonroot user.
	nonroot = "65532:65532"
)

// epoch is the fixed timestamp of every file, layer and config.
var epoch = time.Unix(0, 0).UTC()

// DefaultPlatforms are the platforms a release builds.
var DefaultPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Options says what to build.
type Options struct {
	// ModuleDir is the Go module root (go build runs there).
	ModuleDir string
	// MainPackage is the function's main package, e.g. ./functions/workload-cluster.
	MainPackage string
	// Metadata is the path of the package's crossplane.yaml.
	Metadata string
	// Platforms to build; DefaultPlatforms when empty.
	Platforms []v1.Platform
}

// ParseMetadata reads and checks a function's package metadata: it must be a
// meta.pkg.crossplane.io/v1 Function with a name and a valid Crossplane
// version constraint.
func ParseMetadata(data []byte) (*pkgmetav1.Function, error) {
	f := &pkgmetav1.Function{}
	if err := yaml.UnmarshalStrict(data, f); err != nil {
		return nil, fmt.Errorf("parse package metadata: %w", err)
	}
	want := pkgmetav1.SchemeGroupVersion.String()
	if f.APIVersion != want || f.Kind != pkgmetav1.FunctionKind {
		return nil, fmt.Errorf("package metadata: apiVersion/kind is %s/%s, want %s/%s", f.APIVersion, f.Kind, want, pkgmetav1.FunctionKind)
	}
	if f.Name == "" {
		return nil, fmt.Errorf("package metadata: metadata.name is empty")
	}
	if f.Spec.Crossplane == nil || f.Spec.Crossplane.Version == "" {
		return nil, fmt.Errorf("package metadata: spec.crossplane.version is empty (a semver constraint such as >=v2.2.1)")
	}
	if _, err := semver.NewConstraint(f.Spec.Crossplane.Version); err != nil {
		return nil, fmt.Errorf("package metadata: spec.crossplane.version %q: %w", f.Spec.Crossplane.Version, err)
	}
	return f, nil
}

// Build compiles the function for every platform and returns the xpkg as an
// OCI image index.
func Build(ctx context.Context, o Options) (v1.ImageIndex, error) {
	meta, err := os.ReadFile(o.Metadata)
	if err != nil {
		return nil, fmt.Errorf("read package metadata: %w", err)
	}
	if _, err := ParseMetadata(meta); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Metadata, err)
	}
	pkgLayer, err := fileLayer(PackageFile, meta, 0o644)
	if err != nil {
		return nil, fmt.Errorf("package layer: %w", err)
	}
	platforms := o.Platforms
	if len(platforms) == 0 {
		platforms = DefaultPlatforms
	}
	tmp, err := os.MkdirTemp("", "xpkgbuild-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		bin, err := compile(ctx, o, p, tmp)
		if err != nil {
			return nil, err
		}
		img, err := image(p, bin, pkgLayer)
		if err != nil {
			return nil, fmt.Errorf("image %s/%s: %w", p.OS, p.Architecture, err)
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}

func compile(ctx context.Context, o Options, p v1.Platform, dir string) ([]byte, error) {
	out := filepath.Join(dir, "function-"+p.OS+"-"+p.Architecture)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags=-s -w -buildid=", "-o", out, o.MainPackage)
	cmd.Dir = o.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s/%s: %w: %s", o.MainPackage, p.OS, p.Architecture, err, stderr.String())
	}
	return os.ReadFile(out)
}

func image(p v1.Platform, bin []byte, pkgLayer v1.Layer) (v1.Image, error) {
	binLayer, err := fileLayer(Entrypoint[1:], bin, 0o755)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer},
		mutate.Addendum{Layer: pkgLayer, MediaType: types.OCILayer, Annotations: map[string]string{AnnotationKey: BaseAnnotation}},
	)
	if err != nil {
		return nil, err
	}
	pkgDigest, err := pkgLayer.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.User = nonroot
	cf.Config.ExposedPorts = map[string]struct{}{Port: {}}
	// Crossplane's xpkg build also labels the config with the base layer's
	// digest, so the layer can be found from the config alone.
	cf.Config.Labels = map[string]string{AnnotationKey + ":" + pkgDigest.String(): BaseAnnotation}
	cf.History = nil
	return mutate.ConfigFile(img, cf)
}

// fileLayer is an uncompressed-content tar layer holding one file with fixed
// metadata, gzip-compressed deterministically by go-containerregistry.
func fileLayer(name string, data []byte, mode int64) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// WriteLayout writes idx as an OCI image layout at dir (created or replaced).
func WriteLayout(dir string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("write OCI layout %s: %w", dir, err)
	}
	return nil
}
