package fleettree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

type seen struct {
	Exists bool
	Dir    bool
	Data   string
	Names  []string // ReadDir: name, "/" appended for directories
}

// look reads rel through t the way the checks do.
func look(t *testing.T, tree *Tree, rel string) seen {
	t.Helper()
	var s seen
	st, err := tree.Stat(rel)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stat %s: %v", rel, err)
		}
		if _, err := tree.ReadFile(rel); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: Stat says missing, ReadFile %v", rel, err)
		}
		if _, err := tree.ReadDir(rel); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: Stat says missing, ReadDir %v", rel, err)
		}
		return s
	}
	s.Exists, s.Dir = true, st.IsDir()
	if s.Dir {
		es, err := tree.ReadDir(rel)
		if err != nil {
			t.Fatalf("readdir %s: %v", rel, err)
		}
		s.Names = []string{}
		for _, e := range es {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			s.Names = append(s.Names, n)
		}
		return s
	}
	b, err := tree.ReadFile(rel)
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	s.Data = string(b)
	return s
}

// TestPendingReads: a tree read with a change pending reads exactly like
// the tree with the change applied (treeedit.Change.Apply on a copy).
func TestPendingReads(t *testing.T) {
	base := map[string]string{
		"c/kustomization.yaml":     "old listing\n",
		"c/a.yaml":                 "a\n",
		"c/b.yaml":                 "b\n",
		"w/a/kustomization.yaml":   "a\n",
		"w/a/flux-system/key.yaml": "key a\n",
		"w/b/kustomization.yaml":   "b\n",
		"p.yaml":                   "policy\n",
	}
	tests := []struct {
		name   string
		change func(*treeedit.Change)
	}{
		{"add a cluster", func(c *treeedit.Change) {
			c.Write("c/new.yaml", []byte("new\n"))
			c.Write("c/kustomization.yaml", []byte("new listing\n"))
			c.Write("w/new/kustomization.yaml", []byte("new\n"))
			c.Write("w/new/flux-system/key.yaml", []byte("key new\n"))
		}},
		{"edit a claim", func(c *treeedit.Change) { c.Write("c/a.yaml", []byte("a2\n")) }},
		{"write into an existing folder", func(c *treeedit.Change) {
			c.Write("w/a/app.yaml", []byte("app\n"))
			c.Write("w/a/kustomization.yaml", []byte("a+app\n"))
		}},
		{"remove a cluster", func(c *treeedit.Change) {
			c.Remove("c/b.yaml")
			c.Write("c/kustomization.yaml", []byte("without b\n"))
			c.RemoveAll("w/b")
		}},
		{"write under a removed folder", func(c *treeedit.Change) {
			c.RemoveAll("w/a")
			c.Write("w/a/flux-system/key.yaml", []byte("gone anyway\n"))
		}},
		{"nothing", func(*treeedit.Change) {}},
	}
	paths := []string{".", "c", "c/a.yaml", "c/b.yaml", "c/new.yaml", "c/kustomization.yaml", "w", "w/a", "w/a/flux-system",
		"w/a/flux-system/key.yaml", "w/a/app.yaml", "w/b", "w/b/kustomization.yaml", "w/new", "w/new/flux-system",
		"w/new/flux-system/key.yaml", "p.yaml", "missing", "missing/x.yaml"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, body := range base {
				p := filepath.Join(root, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ch := treeedit.New()
			tt.change(ch)
			pending := (&Tree{Root: root}).With(ch)
			want := map[string]seen{}
			got := map[string]seen{}
			for _, p := range paths {
				got[p] = look(t, pending, p)
			}
			applied := t.TempDir()
			if err := treeedit.CopyTree(root, applied); err != nil {
				t.Fatal(err)
			}
			if err := ch.Apply(applied); err != nil {
				t.Fatal(err)
			}
			for _, p := range paths {
				want[p] = look(t, &Tree{Root: applied}, p)
			}
			for _, p := range paths {
				if !reflect.DeepEqual(got[p], want[p]) {
					t.Errorf("%s: pending %+v, applied %+v", p, got[p], want[p])
				}
			}
			// The tree on disk is untouched.
			if b, _ := os.ReadFile(filepath.Join(root, "c", "kustomization.yaml")); string(b) != base["c/kustomization.yaml"] {
				t.Errorf("tree changed: %q", b)
			}
		})
	}
}
