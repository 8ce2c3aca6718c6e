// Package kustfile edits the resources list of a kustomization.yaml and
// keeps the file's comments and order.
package kustfile

import (
	"bytes"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// New returns a kustomization.yaml listing resources, with a comment.
func New(comment string, resources ...string) []byte {
	var b bytes.Buffer
	if comment != "" {
		for _, l := range bytes.Split([]byte(comment), []byte("\n")) {
			b.WriteString("# ")
			b.Write(l)
			b.WriteString("\n")
		}
	}
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
	if len(resources) == 0 {
		b.WriteString("resources: []\n")
		return b.Bytes()
	}
	b.WriteString("resources:\n")
	for _, r := range resources {
		fmt.Fprintf(&b, "  - %s\n", r)
	}
	return b.Bytes()
}

// Resources returns the resources list.
func Resources(data []byte) ([]string, error) {
	var k struct {
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("kustomization.yaml: %w", err)
	}
	return k.Resources, nil
}

// Add appends entry to resources unless it is already listed.
func Add(data []byte, entry string) ([]byte, error) {
	return edit(data, func(seq *yaml.Node) bool {
		for _, n := range seq.Content {
			if n.Value == entry {
				return false
			}
		}
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: entry})
		seq.Style = 0 // block style, also when the list was "[]"
		return true
	})
}

// Remove drops entry from resources; it reports whether it was listed.
func Remove(data []byte, entry string) ([]byte, bool, error) {
	found := false
	out, err := edit(data, func(seq *yaml.Node) bool {
		seq.Content = slices.DeleteFunc(seq.Content, func(n *yaml.Node) bool {
			if n.Value == entry {
				found = true
				return true
			}
			return false
		})
		if len(seq.Content) == 0 {
			seq.Style = yaml.FlowStyle
		}
		return found
	})
	return out, found, err
}

func edit(data []byte, f func(seq *yaml.Node) bool) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("kustomization.yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("kustomization.yaml: not a YAML mapping")
	}
	m := doc.Content[0]
	var seq *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "resources" {
			seq = m.Content[i+1]
		}
	}
	if seq == nil {
		seq = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "resources"}, seq)
	}
	if seq.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("kustomization.yaml: resources is not a list")
	}
	if !f(seq) {
		return data, nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("kustomization.yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
