package kustfile

import (
	"strings"
	"testing"
)

func TestAddRemove(t *testing.T) {
	const in = "# why this folder\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - a.yaml # first\n"
	tests := []struct {
		name  string
		in    string
		op    func(b []byte) ([]byte, error)
		want  []string
		keeps string
	}{
		{"add", in, func(b []byte) ([]byte, error) { return Add(b, "b.yaml") }, []string{"a.yaml", "b.yaml"}, "# first"},
		{"add twice is a no-op", in, func(b []byte) ([]byte, error) { return Add(b, "a.yaml") }, []string{"a.yaml"}, "# why this folder"},
		{"add to empty flow list", string(New("c")), func(b []byte) ([]byte, error) { return Add(b, "x.yaml") }, []string{"x.yaml"}, "# c"},
		{"add without resources", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n", func(b []byte) ([]byte, error) { return Add(b, "x.yaml") }, []string{"x.yaml"}, "kind: Kustomization"},
		{"remove", in, func(b []byte) ([]byte, error) { o, _, err := Remove(b, "a.yaml"); return o, err }, nil, "# why this folder"},
		{"remove absent", in, func(b []byte) ([]byte, error) { o, _, err := Remove(b, "z.yaml"); return o, err }, []string{"a.yaml"}, "# first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.op([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Resources(out)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("resources %v, want %v\n%s", got, tt.want, out)
			}
			if !strings.Contains(string(out), tt.keeps) {
				t.Errorf("lost %q:\n%s", tt.keeps, out)
			}
		})
	}
	if _, err := Add([]byte("resources: a\n"), "x"); err == nil {
		t.Error("non-list resources accepted")
	}
}
