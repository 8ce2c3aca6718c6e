package binaries

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestExternalSecretsRegistersWhatTheFleetUses holds the suite's External
// Secrets build (ExternalSecrets.Overlay) to the fleet's manifests: it
// registers the provider of every secret store they declare, no provider
// or generator upstream's own registration list at the pinned release
// lacks (the overlay only leaves out), and no generator, since the
// manifests use none.
func TestExternalSecretsRegistersWhatTheFleetUses(t *testing.T) {
	const eso = "github.com/external-secrets/external-secrets"
	dir, err := ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	module := filepath.Join(dir, filepath.FromSlash(ExternalSecrets.Module))
	upstream, err := ExternalSecrets.moduleDir(context.Background(), module, eso)
	if err != nil {
		t.Fatal(err)
	}
	providers, generators := manifestsUseOfExternalSecrets(t, filepath.Join(dir, "..", "..", "..", "manifests"))
	if len(providers) == 0 {
		t.Fatal("the manifests declare no secret store: the walk found nothing")
	}

	cases := map[string]struct {
		path string
		// want are the imports the fleet needs the overlay to keep.
		want []string
	}{
		"providers": {path: "pkg/provider/register/register.go", want: func() []string {
			var w []string
			for _, p := range providers {
				// upstream's directory for the provider key (aws, vault,
				// kubernetes, ...): add a case for one whose differs.
				w = append(w, eso+"/pkg/provider/"+p)
			}
			return w
		}()},
		"generators": {path: "pkg/generator/register/register.go"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i := slices.IndexFunc(ExternalSecrets.Overlay, func(o Overlay) bool { return o.Module == eso && o.Path == tc.path })
			if i < 0 {
				t.Fatalf("ExternalSecrets.Overlay does not replace %s", tc.path)
			}
			got := imports(t, filepath.Join(module, filepath.FromSlash(ExternalSecrets.Overlay[i].File)))
			all := imports(t, filepath.Join(upstream, filepath.FromSlash(tc.path)))
			for _, p := range got {
				if !slices.Contains(all, p) {
					t.Errorf("the overlay of %s imports %s, which upstream's at the pinned release does not", tc.path, p)
				}
			}
			for _, p := range tc.want {
				if !slices.Contains(got, p) {
					t.Errorf("the manifests declare a secret store on %s; the overlay of %s does not register it (imports %v)", p, tc.path, got)
				}
			}
			if len(tc.want) == 0 && len(got) > 0 {
				t.Errorf("the overlay of %s registers %v; the manifests use none", tc.path, got)
			}
		})
	}
	if len(generators) > 0 {
		t.Errorf("the manifests use External Secrets generators (%s); the suite's build registers none (tools/external-secrets/overlay/generator)", strings.Join(generators, ", "))
	}
}

// imports are the import paths of the Go file at p.
func imports(t *testing.T, p string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range f.Imports {
		v, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// manifestsUseOfExternalSecrets walks the YAML under dir and returns the
// provider keys of every SecretStore and ClusterSecretStore (sorted,
// unique), and where a generator is used (a generatorRef, or an object of
// the generators group).
func manifestsUseOfExternalSecrets(t *testing.T, dir string) (providers, generators []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			var o map[string]any
			if err := yaml.Unmarshal(doc, &o); err != nil || o == nil {
				continue // not an object (a kustomize patch list, a values file's scalar)
			}
			kind, _ := o["kind"].(string)
			api, _ := o["apiVersion"].(string)
			if strings.HasPrefix(api, "external-secrets.io/") && (kind == "SecretStore" || kind == "ClusterSecretStore") {
				spec, _ := o["spec"].(map[string]any)
				prov, _ := spec["provider"].(map[string]any)
				for k := range prov {
					if !slices.Contains(providers, k) {
						providers = append(providers, k)
					}
				}
			}
			if strings.HasPrefix(api, "generators.external-secrets.io/") || bytes.Contains(doc, []byte("generatorRef")) {
				generators = append(generators, p)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(providers)
	return providers, generators
}
