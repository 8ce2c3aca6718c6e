// Package treeedit applies a multi-file change to a directory tree
// atomically enough for Git working copies: every new content is first
// written to a temporary file next to its target, and only when all of them
// are on disk are they renamed into place; removals come last. If a step
// fails, what was already replaced is restored. A change can also be staged
// into a copy of the tree to be checked before it touches the real one.
package treeedit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Change is a set of writes and removals, keyed by slash-separated paths
// relative to the tree root.
type Change struct {
	writes  map[string][]byte
	removes map[string]bool // path -> recursive
}

// New returns an empty change.
func New() *Change { return &Change{writes: map[string][]byte{}, removes: map[string]bool{}} }

// Write records that rel gets data.
func (c *Change) Write(rel string, data []byte) { c.writes[clean(rel)] = data }

// Remove records that rel (a file) goes away.
func (c *Change) Remove(rel string) { c.removes[clean(rel)] = false }

// RemoveAll records that rel (a directory) goes away with its content.
func (c *Change) RemoveAll(rel string) { c.removes[clean(rel)] = true }

// Paths returns every path the change touches, sorted.
func (c *Change) Paths() []string {
	var out []string
	for p := range c.writes {
		out = append(out, p)
	}
	for p := range c.removes {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Written returns the content the change writes to rel.
func (c *Change) Written(rel string) ([]byte, bool) {
	b, ok := c.writes[clean(rel)]
	return b, ok
}

func clean(rel string) string { return filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel))) }

func (c *Change) check() error {
	for p := range c.writes {
		if filepath.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return fmt.Errorf("path %q leaves the tree", p)
		}
	}
	for p := range c.removes {
		if filepath.IsAbs(p) || p == "." || p == ".." || strings.HasPrefix(p, "../") {
			return fmt.Errorf("path %q leaves the tree", p)
		}
	}
	return nil
}

// Stage copies root into a new temporary directory and applies the change
// there. The copy keeps root's base name (tools that check the tree's name,
// like the proof, see the same tree). The caller checks the copy and calls
// cleanup.
func (c *Change) Stage(root string) (dir string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "fleet-stage-")
	if err != nil {
		return "", nil, fmt.Errorf("staging change: %w", err)
	}
	cleanup = func() { os.RemoveAll(tmp) }
	abs, err := filepath.Abs(root)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	dir = filepath.Join(tmp, filepath.Base(abs))
	if err := copyTree(abs, dir); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("staging change: %w", err)
	}
	if err := c.Apply(dir); err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}

// Writes returns the change's writes: content by slash-separated path.
func (c *Change) Writes() map[string][]byte {
	out := make(map[string][]byte, len(c.writes))
	for p, b := range c.writes {
		out[p] = b
	}
	return out
}

// Removes reports whether the change removes rel or a directory above it.
func (c *Change) Removes(rel string) bool {
	for p := clean(rel); p != "." && p != "/" && p != ".."; p = path.Dir(p) {
		if _, ok := c.removes[p]; ok {
			return true
		}
	}
	return false
}

// Removals returns the paths the change removes, sorted.
func (c *Change) Removals() []string {
	out := make([]string, 0, len(c.removes))
	for p := range c.removes {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Apply writes the change into root. On error nothing of it stays.
func (c *Change) Apply(root string) (err error) {
	if err := c.check(); err != nil {
		return err
	}
	type placed struct{ target, backup, temp string }
	var temps []placed
	var madeDirs []string
	defer func() {
		if err == nil {
			return
		}
		for _, t := range temps {
			os.Remove(t.temp)
		}
		for i := len(madeDirs) - 1; i >= 0; i-- {
			os.Remove(madeDirs[i]) // only if empty
		}
	}()
	// 1. Every new content to a temp file next to its target.
	paths := make([]string, 0, len(c.writes))
	for p := range c.writes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		target := filepath.Join(root, filepath.FromSlash(p))
		if st, err := os.Lstat(target); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("writing %s: exists and is not a regular file", p)
		}
		dirs, err := mkdirAll(filepath.Dir(target))
		madeDirs = append(madeDirs, dirs...)
		if err != nil {
			return fmt.Errorf("creating directory for %s: %w", p, err)
		}
		f, err := os.CreateTemp(filepath.Dir(target), ".fleet-tmp-*")
		if err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		temps = append(temps, placed{target: target, temp: f.Name()})
		_, werr := f.Write(c.writes[p])
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		mode := os.FileMode(0o644)
		if st, err := os.Stat(target); err == nil {
			mode = st.Mode().Perm()
		}
		if err := os.Chmod(f.Name(), mode); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	// 2. Move old files aside (kept until the end for rollback), then
	// rename the new ones in.
	var done []placed
	rollback := func() {
		for i := len(done) - 1; i >= 0; i-- {
			d := done[i]
			if d.backup != "" {
				os.Rename(d.backup, d.target)
			} else {
				os.Remove(d.target)
			}
		}
	}
	for _, t := range temps {
		if _, err := os.Lstat(t.target); err == nil {
			t.backup = t.temp + ".orig"
			if err := os.Rename(t.target, t.backup); err != nil {
				rollback()
				return fmt.Errorf("replacing %s: %w", t.target, err)
			}
		}
		if err := os.Rename(t.temp, t.target); err != nil {
			if t.backup != "" {
				os.Rename(t.backup, t.target)
			}
			rollback()
			return fmt.Errorf("replacing %s: %w", t.target, err)
		}
		done = append(done, t)
	}
	// 3. Removals: move aside first, so a failure can still roll back.
	type moved struct{ from, to string }
	var gone []moved
	rps := make([]string, 0, len(c.removes))
	for p := range c.removes {
		rps = append(rps, p)
	}
	sort.Strings(rps)
	for _, p := range rps {
		target := filepath.Join(root, filepath.FromSlash(p))
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		aside := filepath.Join(filepath.Dir(target), ".fleet-rm-"+filepath.Base(target))
		os.RemoveAll(aside)
		if err := os.Rename(target, aside); err != nil {
			for i := len(gone) - 1; i >= 0; i-- {
				os.Rename(gone[i].to, gone[i].from)
			}
			rollback()
			return fmt.Errorf("removing %s: %w", p, err)
		}
		gone = append(gone, moved{from: target, to: aside})
	}
	// 4. Commit: drop backups and removed content.
	for _, d := range done {
		if d.backup != "" {
			os.Remove(d.backup)
		}
	}
	for _, g := range gone {
		os.RemoveAll(g.to)
	}
	temps = nil
	return nil
}

// mkdirAll creates dir and returns the directories it created, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append([]string{d}, missing...)
		if filepath.Dir(d) == d {
			break
		}
	}
	var made []string
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, err
		}
		made = append(made, d)
	}
	return made, nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		default:
			return nil // symlinks and devices are not part of a manifests tree
		}
	})
}

// CopyTree copies a directory tree (regular files only); tests and
// benchmarks use it to work on a copy of the manifests.
func CopyTree(src, dst string) error { return copyTree(src, dst) }
