package secretstore

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func store(t *testing.T, spec string) *Store {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte("apiVersion: external-secrets.io/v1\nkind: ClusterSecretStore\nmetadata: {name: s}\nspec:\n"+spec), &m); err != nil {
		t.Fatal(err)
	}
	s, err := FromObject(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The cases follow ESO v0.20.4's shouldProcessSecret.
func TestServes(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		ns     string
		labels map[string]string
		want   bool
	}{
		{"no conditions: every namespace", "  provider: {}\n", "team-a", nil, true},
		{"listed namespace", "  conditions: [{namespaces: [sealed-secrets]}]\n", "sealed-secrets", nil, true},
		{"other namespace", "  conditions: [{namespaces: [sealed-secrets]}]\n", "team-a", nil, false},
		{"a label cannot forge the name", "  conditions: [{namespaces: [sealed-secrets]}]\n", "team-a", map[string]string{NameLabel: "sealed-secrets"}, false},
		{"selector", "  conditions: [{namespaceSelector: {matchLabels: {tier: system}}}]\n", "x", map[string]string{"tier": "system"}, true},
		{"selector, unlabelled", "  conditions: [{namespaceSelector: {matchLabels: {tier: system}}}]\n", "x", nil, false},
		{"regex", "  conditions: [{namespaceRegexes: ['^sealed-']}]\n", "sealed-secrets", nil, true},
		{"regex miss", "  conditions: [{namespaceRegexes: ['^sealed-']}]\n", "team-a", nil, false},
		{"any condition", "  conditions: [{namespaces: [a]}, {namespaces: [b]}]\n", "b", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store(t, tt.spec).Serves(tt.ns, tt.labels)
			if err != nil || got != tt.want {
				t.Errorf("Serves(%q) = %v, %v; want %v", tt.ns, got, err, tt.want)
			}
		})
	}
	if _, err := store(t, "  conditions: [{namespaceRegexes: ['(']}]\n").Serves("x", nil); err == nil {
		t.Error("a bad regex accepted")
	}
}
