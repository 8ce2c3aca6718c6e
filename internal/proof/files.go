package proof

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
)

// fileIndex maps "Kind/name" to the tree files (relative) that define it,
// so findings name a file rather than a build directory.
type fileIndex struct {
	byKey map[string][]string
	// apis lists every apiVersion line in the tree's YAML (also nested
	// ones: Composition bases, embedded manifests), with the nearest kind.
	apis []apiLine
	// docs lists every top-level object in the tree's YAML files.
	docs []rawDoc
}

type rawDoc struct {
	file                              string
	apiVersion, kind, name, namespace string
}

type apiLine struct {
	file             string
	line             int
	apiVersion, kind string
}

var (
	apiVersionLine = regexp.MustCompile(`^(\s*(?:-\s+)?)apiVersion:\s*["']?([^\s"'#]+)`)
	kindLine       = regexp.MustCompile(`^\s*(?:-\s+)?kind:\s*["']?([^\s"'#]+)`)
)

func scanAPIs(rel string, b []byte) []apiLine {
	lines := strings.Split(string(b), "\n")
	var out []apiLine
	for i, l := range lines {
		m := apiVersionLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		kind := ""
		for j := max(0, i-3); j < min(len(lines), i+4) && kind == ""; j++ {
			if k := kindLine.FindStringSubmatch(lines[j]); k != nil {
				kind = k[1]
			}
		}
		out = append(out, apiLine{file: rel, line: i + 1, apiVersion: m[2], kind: kind})
	}
	return out
}

func indexFiles(tree string) *fileIndex {
	idx := &fileIndex{byKey: map[string][]string{}}
	_ = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(tree, p)
		rel = filepath.ToSlash(rel)
		idx.apis = append(idx.apis, scanAPIs(rel, b)...)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if err == io.EOF {
					break
				}
				break
			}
			if m == nil {
				continue
			}
			u := unstructured.Unstructured{Object: m}
			if u.GetKind() == "" || u.GetName() == "" {
				continue
			}
			k := u.GetKind() + "/" + u.GetName()
			idx.byKey[k] = append(idx.byKey[k], rel)
			idx.docs = append(idx.docs, rawDoc{file: rel, apiVersion: u.GetAPIVersion(), kind: u.GetKind(), name: u.GetName(), namespace: u.GetNamespace()})
		}
		return nil
	})
	return idx
}

// fileOf names the file an object comes from: the tree file defining an
// object of that kind and name (preferring one under the Kustomization's
// path), else the Kustomization's path, else its origin.
func (r *run) fileOf(b kbuild.Built) string {
	o := b.Object
	cands := r.files.byKey[o.GetKind()+"/"+o.GetName()]
	dir := r.relPath(b.Path)
	for _, c := range cands {
		if dir != "" && strings.HasPrefix(c, dir+"/") {
			return c
		}
	}
	if len(cands) > 0 {
		return cands[0]
	}
	if dir != "" {
		return dir
	}
	return b.Origin
}
