package xpkgbuild_test

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/gitops-fleet/eks-fleet/internal/build/xpkgbuild"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// options package the function's real metadata with a fixture main
// package (testdata/fixturefn) for every default platform.
func options(t *testing.T) xpkgbuild.Options {
	root := repoRoot(t)
	return xpkgbuild.Options{
		ModuleDir:   root,
		MainPackage: "./internal/build/xpkgbuild/testdata/fixturefn",
		Metadata:    filepath.Join(root, "functions", "workload-cluster", "package", "crossplane.yaml"),
	}
}

// readFile returns the single file name from layer l, or fails.
func readFile(t *testing.T, l v1.Layer, name string) []byte {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("layer has no %s", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			if !h.ModTime.Equal(h.ModTime.Truncate(0)) || h.ModTime.Unix() != 0 {
				t.Errorf("%s mtime %v, want epoch", name, h.ModTime)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func TestBuildFunctionPackage(t *testing.T) {
	ctx := context.Background()
	idx, err := xpkgbuild.Build(ctx, options(t))
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	// The package must survive an OCI layout round trip (what the release pushes).
	dir := filepath.Join(t.TempDir(), "oci")
	if err := xpkgbuild.WriteLayout(dir, idx); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	li, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	// layout.Write makes the index itself the layout's index.json.
	idx = li
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		plat := d.Platform.OS + "/" + d.Platform.Architecture
		got[plat] = true
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS+"/"+cf.Architecture != plat {
			t.Errorf("%s: config says %s/%s", plat, cf.OS, cf.Architecture)
		}
		if strings.Join(cf.Config.Entrypoint, " ") != xpkgbuild.Entrypoint {
			t.Errorf("%s: entrypoint %v, want [%s]", plat, cf.Config.Entrypoint, xpkgbuild.Entrypoint)
		}
		if _, ok := cf.Config.ExposedPorts[xpkgbuild.Port]; !ok {
			t.Errorf("%s: ports %v, want %s", plat, cf.Config.ExposedPorts, xpkgbuild.Port)
		}
		if cf.Created.Unix() != 0 {
			t.Errorf("%s: created %v, want the fixed epoch", plat, cf.Created)
		}
		mf, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		var base, bin int
		for i, ld := range mf.Layers {
			if ld.Annotations[xpkgbuild.AnnotationKey] == xpkgbuild.BaseAnnotation {
				base++
				meta := readFile(t, layers[i], xpkgbuild.PackageFile)
				f, err := xpkgbuild.ParseMetadata(meta)
				if err != nil {
					t.Fatalf("%s: package.yaml: %v", plat, err)
				}
				if f.Name != "function-workload-cluster" {
					t.Errorf("%s: package name %q", plat, f.Name)
				}
				if !strings.Contains(f.Spec.Crossplane.Version, "v2") {
					t.Errorf("%s: crossplane constraint %q does not target v2", plat, f.Spec.Crossplane.Version)
				}
				if cf.Config.Labels[xpkgbuild.AnnotationKey+":"+ld.Digest.String()] != xpkgbuild.BaseAnnotation {
					t.Errorf("%s: config labels %v do not mark base layer %s", plat, cf.Config.Labels, ld.Digest)
				}
				continue
			}
			b := readFile(t, layers[i], xpkgbuild.Entrypoint[1:])
			bin++
			// An ELF binary for the right machine: e_machine at offset 18.
			if len(b) < 20 || string(b[1:4]) != "ELF" {
				t.Fatalf("%s: %s is not an ELF binary", plat, xpkgbuild.Entrypoint)
			}
			machine := map[string]uint16{"amd64": 62, "arm64": 183}[d.Platform.Architecture]
			if uint16(b[18])|uint16(b[19])<<8 != machine {
				t.Errorf("%s: ELF machine %d, want %d", plat, uint16(b[18])|uint16(b[19])<<8, machine)
			}
		}
		if base != 1 || bin != 1 {
			t.Errorf("%s: %d base layers and %d binary layers, want 1 and 1", plat, base, bin)
		}
	}
	for _, want := range []string{"linux/amd64", "linux/arm64"} {
		if !got[want] {
			t.Errorf("index lacks %s (has %v)", want, got)
		}
	}

	// Reproducible: a second build gives the same index digest.
	d1, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	again, err := xpkgbuild.Build(ctx, options(t))
	if err != nil {
		t.Fatal(err)
	}
	d2, err := again.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Errorf("two builds differ: %s vs %s", d1, d2)
	}
}

func TestBadMetadataFails(t *testing.T) {
	good, err := os.ReadFile(options(t).Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := xpkgbuild.ParseMetadata(good); err != nil {
		t.Fatalf("committed metadata: %v", err)
	}
	for name, tc := range map[string]struct{ old, new, want string }{
		"wrong kind":       {"kind: Function", "kind: Provider", "kind"},
		"wrong apiVersion": {"meta.pkg.crossplane.io/v1", "meta.pkg.crossplane.io/v1beta1", "apiVersion"},
		"no name":          {"name: function-workload-cluster", "name: \"\"", "metadata.name"},
		"bad constraint":   {`version: ">=v2.2.1"`, `version: "newest"`, "spec.crossplane.version"},
		"no constraint":    {`version: ">=v2.2.1"`, `version: ""`, "spec.crossplane.version"},
		"unknown field":    {"spec:", "spec:\n  entrypoint: x", "unknown field"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.old, tc.new, 1)
			if bad == string(good) {
				t.Fatalf("plant %q not found", tc.old)
			}
			_, err := xpkgbuild.ParseMetadata([]byte(bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
			// Build refuses it before compiling anything.
			path := filepath.Join(t.TempDir(), "crossplane.yaml")
			if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			o := options(t)
			o.Metadata = path
			o.MainPackage = "./does-not-exist"
			if _, err := xpkgbuild.Build(context.Background(), o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build err = %v, want metadata error naming %q", err, tc.want)
			}
		})
	}
}
