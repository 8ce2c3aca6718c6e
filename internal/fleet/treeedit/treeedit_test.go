package treeedit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func listing(t *testing.T, root string) string {
	t.Helper()
	var out []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		rel, _ := filepath.Rel(root, p)
		if info.IsDir() {
			out = append(out, rel+"/")
		} else {
			b, _ := os.ReadFile(p)
			out = append(out, rel+"="+string(b))
		}
		return nil
	})
	return strings.Join(out, "\n")
}

func TestApply(t *testing.T) {
	tests := []struct {
		name    string
		change  func(c *Change)
		want    map[string]string // path -> content ("" = absent)
		wantErr bool
	}{
		{"write new and replace", func(c *Change) { c.Write("a/new.yaml", []byte("n")); c.Write("old.yaml", []byte("2")) },
			map[string]string{"a/new.yaml": "n", "old.yaml": "2", "dir/x": "x"}, false},
		{"remove file and dir", func(c *Change) { c.Remove("old.yaml"); c.RemoveAll("dir") },
			map[string]string{"old.yaml": "", "dir/x": ""}, false},
		{"escape is refused", func(c *Change) { c.Write("ok.yaml", []byte("o")); c.Write("../evil", []byte("e")) },
			map[string]string{"ok.yaml": "", "old.yaml": "1"}, true},
		{"write over a directory fails and rolls back", func(c *Change) { c.Write("a.yaml", []byte("a")); c.Write("dir", []byte("not a dir")) },
			map[string]string{"a.yaml": "", "old.yaml": "1", "dir/x": "x"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree(t, map[string]string{"old.yaml": "1", "dir/x": "x"})
			c := New()
			tt.change(c)
			err := c.Apply(root)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			for p, want := range tt.want {
				b, rerr := os.ReadFile(filepath.Join(root, p))
				if want == "" {
					if rerr == nil {
						t.Errorf("%s exists", p)
					}
					continue
				}
				if string(b) != want {
					t.Errorf("%s = %q, want %q", p, b, want)
				}
			}
			if l := listing(t, root); strings.Contains(l, ".fleet-") {
				t.Errorf("temp files left:\n%s", l)
			}
		})
	}
}

func TestStage(t *testing.T) {
	root := tree(t, map[string]string{"old.yaml": "1"})
	before := listing(t, root)
	c := New()
	c.Write("new.yaml", []byte("n"))
	c.Remove("old.yaml")
	dir, cleanup, err := c.Stage(root)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if filepath.Base(dir) != filepath.Base(root) {
		t.Errorf("stage %s lost the tree's name %s", dir, filepath.Base(root))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.yaml")); string(b) != "n" {
		t.Errorf("stage lacks the change")
	}
	if _, err := os.Stat(filepath.Join(dir, "old.yaml")); err == nil {
		t.Errorf("stage kept the removed file")
	}
	if listing(t, root) != before {
		t.Errorf("Stage touched the tree")
	}
}

func TestRemoves(t *testing.T) {
	c := New()
	c.RemoveAll("w/b")
	c.Remove("c/x.yaml")
	c.Write("w/a/k.yaml", nil)
	for rel, want := range map[string]bool{"w/b": true, "w/b/k.yaml": true, "./w/b/": true, "w": false, "w/a/k.yaml": false, "c/x.yaml": true, "c": false, "w/bb": false} {
		if got := c.Removes(rel); got != want {
			t.Errorf("Removes(%q) = %v, want %v", rel, got, want)
		}
	}
}
