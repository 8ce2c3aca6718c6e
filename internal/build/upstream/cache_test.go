package upstream

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCachedDir: a module already extracted, complete, in the module cache
// (or this package's extraction directory) is found without the go
// command; anything else is left to `go mod download`.
func TestCachedDir(t *testing.T) {
	const mod, ver = "github.com/Example/Mod/v2", "v2.1.0-RC1"
	escaped := filepath.FromSlash("github.com/!example/!mod/v2@v2.1.0-!r!c1")
	tests := []struct {
		name    string
		setup   func(t *testing.T, modCache, userCache string) string // returns the dir wanted, "" for none
		gopath  bool                                                  // GOMODCACHE unset, GOPATH set
		wantHit bool
	}{
		{"extracted in GOMODCACHE", func(t *testing.T, mc, _ string) string {
			return mkdir(t, filepath.Join(mc, escaped))
		}, false, true},
		{"extracted under GOPATH/pkg/mod", func(t *testing.T, mc, _ string) string {
			return mkdir(t, filepath.Join(mc, escaped))
		}, true, true},
		{"extraction not finished", func(t *testing.T, mc, _ string) string {
			mkdir(t, filepath.Join(mc, escaped))
			p := filepath.Join(mc, "cache", "download", filepath.FromSlash("github.com/!example/!mod/v2"), "@v", "v2.1.0-!r!c1.partial")
			mkdir(t, filepath.Dir(p))
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return ""
		}, false, false},
		{"not downloaded", func(*testing.T, string, string) string { return "" }, false, false},
		{"unescaped path only", func(t *testing.T, mc, _ string) string {
			mkdir(t, filepath.Join(mc, filepath.FromSlash(mod+"@"+ver)))
			return ""
		}, false, false},
		{"extracted by this package", func(t *testing.T, _, uc string) string {
			d := mkdir(t, filepath.Join(uc, "eks-fleet", "upstream", filepath.FromSlash(mod)+"@"+ver))
			if err := os.WriteFile(filepath.Join(d, ".complete"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, false, true},
		{"extraction by this package not complete", func(t *testing.T, _, uc string) string {
			mkdir(t, filepath.Join(uc, "eks-fleet", "upstream", filepath.FromSlash(mod)+"@"+ver))
			return ""
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			gopath := filepath.Join(tmp, "gopath")
			modCache := filepath.Join(tmp, "modcache")
			if tt.gopath {
				modCache = filepath.Join(gopath, "pkg", "mod")
				t.Setenv("GOMODCACHE", "")
			} else {
				t.Setenv("GOMODCACHE", modCache)
			}
			t.Setenv("GOPATH", gopath)
			t.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
			userCache, err := os.UserCacheDir()
			if err != nil {
				t.Fatal("no user cache directory:", err)
			}
			want := tt.setup(t, modCache, userCache)
			got, ok := cachedDir(mod, ver)
			if ok != tt.wantHit || got != want {
				t.Fatalf("cachedDir = %q, %v; want %q, %v", got, ok, want, tt.wantHit)
			}
		})
	}
}

func mkdir(t *testing.T, d string) string {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}
