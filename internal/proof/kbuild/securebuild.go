package kbuild

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	generator "github.com/fluxcd/pkg/kustomize"
	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
)

// secureBuild is fluxcd/pkg/kustomize.SecureBuild(root, dirPath, false):
// the same secure on-disk filesystem and the same krusty options, without
// Flux's per-build reset of kustomize's global OpenAPI schema. Flux resets
// it and re-parses kustomize's built-in Kubernetes schema on every build
// (more than half the CPU of a proof) so that a kustomization's
// `openapi:` field cannot leak its schema into the next build. When no
// kustomization under root has that field, nothing ever changes the
// global schema, every Flux build sees exactly the built-in schema, and
// parsing it once per process gives the same result. Otherwise the build
// goes through Flux's function.
func secureBuild(root, dirPath string) (res resmap.ResMap, err error) {
	if usesOpenAPI(root) {
		return generator.SecureBuild(root, dirPath, false)
	}
	fsys, err := securefs.MakeFsOnDiskSecure(root)
	if err != nil {
		return nil, err
	}
	// As Flux: kustomize panics on some invalid input.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered from kustomize build panic: %v", r)
		}
	}()
	_ = openapi.Schema() // the built-in schema, parsed once per process
	k := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsNone,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	})
	return k.Run(fsys, dirPath)
}

var (
	openAPIMu   sync.Mutex
	openAPIRoot = map[string]bool{}
	openAPIKey  = regexp.MustCompile(`(?m)^openapi\s*:`)
)

// usesOpenAPI reports whether a kustomization file under root has a
// top-level openapi field (scanned once per root; kbuild writes the
// generated kustomization.yaml files itself and never adds one).
func usesOpenAPI(root string) bool {
	openAPIMu.Lock()
	defer openAPIMu.Unlock()
	if v, ok := openAPIRoot[root]; ok {
		return v
	}
	names := map[string]bool{}
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		names[n] = true
	}
	found := false
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if found {
			return filepath.SkipAll
		}
		if d.IsDir() || !names[d.Name()] {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		found = openAPIKey.Match(bytes.TrimPrefix(b, []byte("\ufeff")))
		return nil
	})
	if err != nil {
		found = true // unsure: take Flux's path
	}
	openAPIRoot[root] = found
	return found
}
