package proof

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestContentMemo: the check runs once per distinct content; objects of
// the same content (other pointers) get the first result, other content
// its own.
func TestContentMemo(t *testing.T) {
	obj := func(key string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"kind": "ExternalSecret", "spec": map[string]any{"key": key}}}
	}
	bad := errors.New("does not unseal")
	var m contentMemo
	calls := 0
	check := func(err error) func() error { return func() error { calls++; return err } }
	steps := []struct {
		objs  []*unstructured.Unstructured
		check error
		want  error
		calls int
	}{
		{[]*unstructured.Unstructured{obj("a")}, nil, nil, 1},
		{[]*unstructured.Unstructured{obj("a")}, bad, nil, 1},           // same content: remembered
		{[]*unstructured.Unstructured{obj("b")}, bad, bad, 2},           // other content: checked
		{[]*unstructured.Unstructured{obj("a"), obj("b")}, bad, bad, 3}, // another set
		{[]*unstructured.Unstructured{obj("ab")}, nil, nil, 4},          // not the same as a, b
		{[]*unstructured.Unstructured{obj("b")}, nil, bad, 4},           // remembered failure
	}
	for i, s := range steps {
		if got := m.do(s.objs, check(s.check)); !errors.Is(got, s.want) && got != s.want {
			t.Errorf("step %d: %v, want %v", i, got, s.want)
		}
		if calls != s.calls {
			t.Errorf("step %d: check ran %d times in all, want %d", i, calls, s.calls)
		}
	}
}
