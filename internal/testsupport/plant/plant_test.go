package plant

import (
	"os"
	"path/filepath"
	"testing"
)

func TestApply(t *testing.T) {
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "a.yaml"), []byte("x: 1\nx: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Apply(t, tree, Edit{"a.yaml", "x: 1", "x: 2"}, Edit{"new/b.yaml", "", "y: 3\n"})
	for file, want := range map[string]string{"a.yaml": "x: 2\nx: 1\n", "new/b.yaml": "y: 3\n"} {
		b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("%s = %q, want %q (one replacement, or the whole new file)", file, b, want)
		}
	}
}

func TestStaleEditFails(t *testing.T) {
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "a.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		Apply(ft, tree, Edit{"a.yaml", "not there", "y"})
	}()
	if !ft.failed {
		t.Error("an edit whose Old the file does not contain must fail the test")
	}
}

func TestRepo(t *testing.T) {
	tree := Repo(t)
	if _, err := os.Stat(filepath.Join(tree, "gitops-system", "clusters", "mgmt")); err != nil {
		t.Errorf("Repo's copy lacks the hub's entry: %v", err)
	}
}

// fakeT records Fatalf without stopping the real test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
func (f *fakeT) Fatal(...any) {
	f.failed = true
	panic("fatal")
}
