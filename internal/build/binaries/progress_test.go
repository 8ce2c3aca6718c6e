package binaries

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBuildShowingProgress: each build's start and end is reported, a
// line every interval names what still builds, a failure names its tool
// and the others are still built; a cached tool is not built again.
func TestBuildShowingProgress(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("EKS_FLEET_BIN_CACHE", filepath.Join(dir, "cache"))
	sources := map[string]string{
		"one":    "package main\n\nfunc main() {}\n",
		"broken": "package main\n\nfunc main() { undefined() }\n",
	}
	var tools []Tool
	for _, name := range []string{"one", "broken"} {
		mod := filepath.Join(dir, name)
		if err := os.MkdirAll(mod, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, s := range map[string]string{"go.mod": "module example.com/" + name + "\n\ngo 1.22\n", "main.go": sources[name]} {
			if err := os.WriteFile(filepath.Join(mod, f), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		tools = append(tools, Tool{Name: name, Module: name, Package: "example.com/" + name})
	}
	var mu sync.Mutex
	var lines []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	err := buildShowingProgress(context.Background(), dir, time.Millisecond, logf, tools)
	if err == nil || !strings.Contains(err.Error(), "build broken") {
		t.Errorf("error %v does not name the broken tool", err)
	}
	for _, want := range []string{"  build one", "  built one in ", "  build broken", " of 2 built; building "} {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, want)
		}
		if !found {
			t.Errorf("no line with %q in:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "  built broken") {
			t.Errorf("the broken tool is reported built: %q", l)
		}
	}
	left, err := uncached(dir, tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name != "broken" {
		t.Errorf("uncached after the build = %v, want only broken", left)
	}
}
