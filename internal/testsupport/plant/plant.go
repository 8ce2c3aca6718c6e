// Package plant copies the repository's manifests tree (or a fixture tree)
// and plants edits in the copy, so a test can show that a check catches
// what it is meant to catch.
package plant

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
)

// Edit replaces Old with New once in File, a slash-separated path relative
// to the tree; with Old empty it writes New as the whole file. An Old the
// file does not contain fails the test, so a stale edit cannot pass
// silently.
type Edit struct{ File, Old, New string }

// RepoRoot is the repository's root directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("plant: cannot locate the repository from this source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Manifests is the repository's manifests/ directory.
func Manifests(t testing.TB) string {
	t.Helper()
	return filepath.Join(RepoRoot(t), "manifests")
}

// Copy copies the tree at src into a new temporary directory, plants edits
// in the copy and returns the copy's path (same base name as src).
func Copy(t testing.TB, src string, edits ...Edit) string {
	t.Helper()
	dir := t.TempDir()
	if err := kbuild.CopySource(src, dir); err != nil {
		t.Fatalf("plant: copy %s: %v", src, err)
	}
	tree := filepath.Join(dir, filepath.Base(filepath.Clean(src)))
	Apply(t, tree, edits...)
	return tree
}

// Repo is Copy of the repository's manifests/.
func Repo(t testing.TB, edits ...Edit) string {
	t.Helper()
	return Copy(t, Manifests(t), edits...)
}

// Apply plants edits in tree.
func Apply(t testing.TB, tree string, edits ...Edit) {
	t.Helper()
	for _, e := range edits {
		p := filepath.Join(tree, filepath.FromSlash(e.File))
		if e.Old == "" {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(e.New), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), e.Old) {
			t.Fatalf("plant: %s does not contain %q", e.File, e.Old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.Old, e.New, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// RaiseQuotas edits a fleet policy (fleet-policy.yaml) into the one of an
// account whose per-region VPC and Elastic IP quotas were raised for the
// fleet: AWS's defaults fit two single-NAT spokes beside the hub in its
// region, fewer than the fixtures and bench trees hold.
func RaiseQuotas(pol []byte) ([]byte, error) {
	for _, e := range [][2]string{{"vpcsPerRegion: 4", "vpcsPerRegion: 1000"}, {"elasticIPsPerRegion: 5", "elasticIPsPerRegion: 1000"}} {
		if !bytes.Contains(pol, []byte(e[0])) {
			return nil, fmt.Errorf("plant: the fleet policy has no %q to raise", e[0])
		}
		pol = bytes.Replace(pol, []byte(e[0]), []byte(e[1]), 1)
	}
	return pol, nil
}
