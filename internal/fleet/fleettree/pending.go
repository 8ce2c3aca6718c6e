package fleettree

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// With returns the tree read as if ch were applied (see Tree.Pending).
func (t *Tree) With(ch *treeedit.Change) *Tree { return &Tree{Root: t.Root, Pending: ch} }

// removed: rel, or a directory above it, is removed by the pending change
// (Apply removes after it writes, so this wins over a write).
func (t *Tree) removed(rel string) bool {
	return t.Pending != nil && t.Pending.Removes(rel)
}

// ReadFile reads the file at rel (slash-separated, relative to the root).
func (t *Tree) ReadFile(rel string) ([]byte, error) {
	rel = path.Clean(rel)
	if t.removed(rel) {
		return nil, &fs.PathError{Op: "open", Path: t.Path(rel), Err: fs.ErrNotExist}
	}
	if t.Pending != nil {
		if b, ok := t.Pending.Written(rel); ok {
			return b, nil
		}
	}
	return os.ReadFile(t.Path(rel))
}

// Stat describes the file or directory at rel.
func (t *Tree) Stat(rel string) (fs.FileInfo, error) {
	rel = path.Clean(rel)
	if t.removed(rel) {
		return nil, &fs.PathError{Op: "stat", Path: t.Path(rel), Err: fs.ErrNotExist}
	}
	if t.Pending != nil {
		if b, ok := t.Pending.Written(rel); ok {
			return pendingInfo{name: path.Base(rel), size: int64(len(b))}, nil
		}
	}
	st, err := os.Stat(t.Path(rel))
	if err != nil && len(t.pendingChildren(rel)) > 0 {
		return pendingInfo{name: path.Base(rel), dir: true}, nil
	}
	return st, err
}

// ReadDir lists the directory at rel, sorted by name.
func (t *Tree) ReadDir(rel string) ([]fs.DirEntry, error) {
	rel = path.Clean(rel)
	if t.removed(rel) {
		return nil, &fs.PathError{Op: "open", Path: t.Path(rel), Err: fs.ErrNotExist}
	}
	entries, err := os.ReadDir(t.Path(rel))
	if t.Pending == nil {
		return entries, err
	}
	added := t.pendingChildren(rel)
	if err != nil && len(added) == 0 {
		return nil, err
	}
	out := make([]fs.DirEntry, 0, len(entries)+len(added))
	for _, e := range entries {
		child := path.Join(rel, e.Name())
		if _, ok := added[e.Name()]; ok || t.removed(child) {
			continue
		}
		out = append(out, e)
	}
	for name, dir := range added {
		if !dir {
			if st, err := t.Stat(path.Join(rel, name)); err == nil {
				out = append(out, fs.FileInfoToDirEntry(st))
			}
			continue
		}
		// A directory the change writes into: the one on disk, if any.
		if st, err := os.Stat(t.Path(path.Join(rel, name))); err == nil && st.IsDir() {
			out = append(out, fs.FileInfoToDirEntry(st))
		} else {
			out = append(out, fs.FileInfoToDirEntry(pendingInfo{name: name, dir: true}))
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// pendingChildren: the entries directly in rel that the pending change
// writes (a file, or a directory it writes into), by name -> is a directory.
func (t *Tree) pendingChildren(rel string) map[string]bool {
	out := map[string]bool{}
	if t.Pending == nil {
		return out
	}
	prefix := rel + "/"
	if rel == "." {
		prefix = ""
	}
	for p := range t.Pending.Writes() {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok || t.removed(p) {
			continue
		}
		name, _, dir := strings.Cut(rest, "/")
		out[name] = out[name] || dir
	}
	return out
}

// pendingInfo describes a file or directory that exists through the
// pending change only.
type pendingInfo struct {
	name string
	size int64
	dir  bool
}

func (i pendingInfo) Name() string { return i.name }
func (i pendingInfo) Size() int64  { return i.size }
func (i pendingInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i pendingInfo) ModTime() time.Time { return time.Time{} }
func (i pendingInfo) IsDir() bool        { return i.dir }
func (i pendingInfo) Sys() any           { return nil }
