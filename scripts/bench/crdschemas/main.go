// Command crdschemas writes the JSON schemas kubeconform needs for the
// anchor pipeline of scripts/bench/bench.sh: one file per served version of
// every CRD the offline proof knows (the pinned upstream CRDs of
// internal/build/upstream, and the CRDs and Crossplane XRDs in the tree, for the
// composite and the claim kind), at
// OUT/<group>/<kind lower-case>_<version>.json, the layout of kubeconform's
// -schema-location '{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json'.
//
//	go run ./scripts/bench/crdschemas -tree manifests -out /tmp/schemas
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
)

func main() {
	tree := flag.String("tree", "manifests", "tree whose CRDs and XRDs are converted too")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: crdschemas -tree DIR -out DIR")
		os.Exit(2)
	}
	n, err := run(context.Background(), *tree, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crdschemas:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "crdschemas: %d schema(s) in %s\n", n, *out)
}

func run(ctx context.Context, tree, out string) (int, error) {
	set, err := upstream.CRDs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, gk := range set.Kinds() {
		crd, err := set.Get(gk.Group, gk.Kind)
		if err != nil {
			return n, err
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			if err := write(out, crd.Spec.Group, crd.Spec.Names.Kind, v.Name, v.Schema.OpenAPIV3Schema); err != nil {
				return n, err
			}
			n++
		}
	}
	m, err := fromTree(tree, out)
	return n + m, err
}

// fromTree converts the CRDs and XRDs written in the tree's YAML files.
func fromTree(tree, out string) (int, error) {
	n := 0
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte("CustomResourceDefinition")) {
			return nil
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var doc struct {
				Kind string `json:"kind"`
				Spec struct {
					Group      string                                     `json:"group"`
					Names      apiextv1.CustomResourceDefinitionNames     `json:"names"`
					ClaimNames *apiextv1.CustomResourceDefinitionNames    `json:"claimNames"`
					Versions   []apiextv1.CustomResourceDefinitionVersion `json:"versions"`
				} `json:"spec"`
			}
			if err := dec.Decode(&doc); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return nil // not Kubernetes YAML: the proof reports it
			}
			if doc.Kind != "CustomResourceDefinition" && doc.Kind != "CompositeResourceDefinition" {
				continue
			}
			kinds := []string{doc.Spec.Names.Kind}
			if doc.Spec.ClaimNames != nil && doc.Spec.ClaimNames.Kind != "" {
				kinds = append(kinds, doc.Spec.ClaimNames.Kind)
			}
			for _, v := range doc.Spec.Versions {
				if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
					continue
				}
				for _, k := range kinds {
					if err := write(out, doc.Spec.Group, k, v.Name, v.Schema.OpenAPIV3Schema); err != nil {
						return err
					}
					n++
				}
			}
		}
	})
	return n, err
}

func write(out, group, kind, version string, s *apiextv1.JSONSchemaProps) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("%s/%s %s: %w", group, kind, version, err)
	}
	dir := filepath.Join(out, group)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, strings.ToLower(kind)+"_"+version+".json"), b, 0o644)
}
