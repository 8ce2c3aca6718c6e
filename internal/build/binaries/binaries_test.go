package binaries

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// TestToolModulesPinVersions holds every tool module's go.mod to the one
// version fact in internal/contract/versions: the binaries the tests run
// are the releases the fleet pins.
func TestToolModulesPinVersions(t *testing.T) {
	dir, err := ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		module, path, version string
	}{
		"kubernetes":           {"kubernetes", "k8s.io/kubernetes", "v" + versions.KubernetesRelease},
		"etcd":                 {"etcd", "go.etcd.io/etcd/server/v3", "v" + versions.Etcd},
		"kwok":                 {"kwok", "sigs.k8s.io/kwok", "v" + versions.Kwok},
		"source-controller":    {"source-controller", "github.com/fluxcd/source-controller", "v" + versions.SourceController},
		"kustomize-controller": {"kustomize-controller", "github.com/fluxcd/kustomize-controller", "v" + versions.KustomizeController},
		"helm-controller":      {"helm-controller", "github.com/fluxcd/helm-controller", "v" + versions.HelmController},
		"crossplane":           {"crossplane", "github.com/crossplane/crossplane/v2", "v" + versions.Crossplane},
		"sealed-secrets":       {"sealed-secrets", "github.com/bitnami-labs/sealed-secrets", "v" + versions.SealedSecrets},
		"external-secrets":     {"external-secrets", "github.com/external-secrets/external-secrets", "v" + versions.ExternalSecrets},
		"patch-and-transform":  {"functions/patch-and-transform", "github.com/crossplane-contrib/function-patch-and-transform", "v" + versions.FunctionPatchAndTransform},
		"auto-ready":           {"functions/auto-ready", "github.com/crossplane/function-auto-ready", "v" + versions.FunctionAutoReady},
		"pulumi":               {"pulumi", "github.com/pulumi/pulumi/pkg/v3", "v" + versions.PulumiCLI},
		"pulumi-kubernetes":    {"pulumi", "github.com/pulumi/pulumi-kubernetes/provider/v4", "v" + versions.PulumiKubernetesProvider},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, filepath.FromSlash(tc.module), "go.mod")
			if got := required(t, p, tc.path); got != tc.version {
				t.Errorf("%s requires %s %q, want %q (internal/contract/versions)", p, tc.path, got, tc.version)
			}
		})
	}
	// Every tool the tests build is covered above.
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.module] = true
	}
	for _, tool := range All() {
		if !covered[tool.Module] {
			t.Errorf("tool %s: module %s has no version check here", tool.Name, tool.Module)
		}
	}
}

// TestEngineIsTheSDKRelease: the suite's Pulumi engine is the release of
// the SDK the program is built with, so what the engine runs is what a
// matching CLI runs.
func TestEngineIsTheSDKRelease(t *testing.T) {
	if got := required(t, "../../../go.mod", "github.com/pulumi/pulumi/sdk/v3"); got != "v"+versions.PulumiCLI {
		t.Errorf("go.mod's Pulumi SDK is %q, the suite's engine (versions.PulumiCLI) v%s", got, versions.PulumiCLI)
	}
}

// required is the version of module path the go.mod at p requires ("" if
// none).
func required(t *testing.T, p, path string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(p, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == path {
			return r.Mod.Version
		}
	}
	return ""
}

func TestKeyFollowsContent(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "m")
	if err := os.MkdirAll(filepath.Join(mod, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module m\n")
	write("go.sum", "")
	write("sub/main.go", "package main\n")
	tool := Tool{Name: "x", Module: "m", Package: "m/sub"}
	k1, err := tool.Key(dir)
	if err != nil {
		t.Fatal(err)
	}
	write("README.md", "not an input")
	if k, _ := tool.Key(dir); k != k1 {
		t.Error("a file that is not a build input changed the key")
	}
	write("sub/main.go", "package main\n\nfunc main() {}\n")
	k2, _ := tool.Key(dir)
	if k2 == k1 {
		t.Error("changed Go source kept the key: a stale binary would be reused")
	}
	tool.LDFlags = "-X a=b"
	k3, _ := tool.Key(dir)
	if k3 == k2 {
		t.Error("changed link flags kept the key")
	}
	tool.Embed = []ModuleFile{{Module: "example.com/up", Path: "schema.json", As: "schema.json"}}
	k4, _ := tool.Key(dir)
	if k4 == k3 {
		t.Error("an embedded upstream file kept the key")
	}
	tool.Overlay = []Overlay{{Module: "example.com/up", Path: "register.go", File: "sub/register.go"}}
	k5, _ := tool.Key(dir)
	if k5 == k4 {
		t.Error("an overlaid upstream file kept the key")
	}
	tool.Overlay = []Overlay{{Module: "example.com/up", Path: "register.go", Map: "providers"}}
	k6, _ := tool.Key(dir)
	if k6 == k5 {
		t.Error("an upstream map cut instead of a file replaced kept the key")
	}
	tool.Overlay[0].Keep = []string{"aws"}
	if k, _ := tool.Key(dir); k == k6 {
		t.Error("another key kept in an upstream map kept the key")
	}
}

// TestBuildStagesModuleFiles: a tool module's main embeds a file of a
// module it requires (as the Kubernetes provider's main embeds its
// generated schema), or the tool replaces a file of such a module with
// the tool module's own (as the suite's External Secrets build replaces
// upstream's registration lists), each taken from that module at the
// pinned version; a file the module lacks fails the build, naming it.
func TestBuildStagesModuleFiles(t *testing.T) {
	sum, err := os.ReadFile("../../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	var syncSum []string
	for _, l := range strings.Split(string(sum), "\n") {
		if strings.HasPrefix(l, "golang.org/x/sync v0.22.0 ") || strings.HasPrefix(l, "golang.org/x/sync v0.22.0/go.mod ") {
			syncSum = append(syncSum, l)
		}
	}
	if len(syncSum) != 2 {
		t.Fatalf("go.sum has no golang.org/x/sync v0.22.0 (the module this test takes files from): %v", syncSum)
	}
	const (
		embedMain   = "package main\n\nimport (\n\t_ \"embed\"\n\t\"fmt\"\n\t\"strings\"\n\n\t_ \"golang.org/x/sync/errgroup\"\n)\n\n//go:embed upstream.txt\nvar f string\n\nfunc main() { fmt.Print(strings.SplitN(f, \"\\n\", 2)[0]) }\n"
		overlayMain = "package main\n\nimport (\n\t\"fmt\"\n\n\t\"golang.org/x/sync/singleflight\"\n)\n\nfunc main() { fmt.Print(singleflight.Overlaid()) }\n"
	)
	cases := map[string]struct {
		reason  string
		main    string
		embed   []ModuleFile
		overlay []Overlay
		wantOut string // what the binary prints
		wantErr string
	}{
		"embedded": {reason: "the file comes from the module's zip at the pinned version", main: embedMain,
			embed: []ModuleFile{{Module: "golang.org/x/sync", Path: "LICENSE", As: "upstream.txt"}}, wantOut: "Copyright 2009 The Go Authors."},
		"embed missing": {reason: "a file the module lacks fails the build, naming it", main: embedMain,
			embed: []ModuleFile{{Module: "golang.org/x/sync", Path: "no-such-file.json", As: "upstream.txt"}}, wantErr: "embed no-such-file.json of golang.org/x/sync"},
		"overlaid": {reason: "the tool module's file is compiled in place of upstream's", main: overlayMain,
			overlay: []Overlay{{Module: "golang.org/x/sync", Path: "singleflight/singleflight.go", File: "overlay/replaced.go"}}, wantOut: "overlaid"},
		"overlay missing": {reason: "a file the module lacks fails the build, naming it, rather than being added", main: overlayMain,
			overlay: []Overlay{{Module: "golang.org/x/sync", Path: "singleflight/no-such-file.go", File: "overlay/replaced.go"}}, wantErr: "overlay of golang.org/x/sync singleflight/no-such-file.go"},
		"overlay unset": {reason: "an overlay with neither a file nor a map to cut fails, saying what to set", main: overlayMain,
			overlay: []Overlay{{Module: "golang.org/x/sync", Path: "singleflight/singleflight.go"}}, wantErr: "set one of File"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("EKS_FLEET_BIN_CACHE", filepath.Join(dir, "cache"))
			mod := filepath.Join(dir, "stg")
			if err := os.MkdirAll(filepath.Join(mod, "overlay"), 0o755); err != nil {
				t.Fatal(err)
			}
			for f, s := range map[string]string{
				"go.mod":              "module example.com/stg\n\ngo 1.22\n\nrequire golang.org/x/sync v0.22.0\n",
				"go.sum":              strings.Join(syncSum, "\n") + "\n",
				"main.go":             tc.main,
				"overlay/replaced.go": "package singleflight\n\n// Overlaid is what the overlay adds.\nfunc Overlaid() string { return \"overlaid\" }\n",
			} {
				if err := os.WriteFile(filepath.Join(mod, f), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tool := Tool{Name: "stg", Module: "stg", Package: "example.com/stg", Embed: tc.embed, Overlay: tc.overlay}
			got, err := buildAll(context.Background(), dir, 1, []Tool{tool})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s: error %v, want it to name %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			out, err := exec.Command(got["stg"]).Output()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.wantOut {
				t.Errorf("%s: the binary printed %q, want %q", tc.reason, out, tc.wantOut)
			}
			if _, err := os.Stat(filepath.Join(mod, "upstream.txt")); err == nil {
				t.Errorf("%s: the embedded file was written into the tool module's directory", tc.reason)
			}
		})
	}
}

// TestLDFlagsStable: link flags are part of the cache key, so they must be
// the same in every process (a map's order would rebuild the Kubernetes
// binaries on most runs).
func TestLDFlagsStable(t *testing.T) {
	first := kubeLDFlags()
	for range 100 {
		if got := kubeLDFlags(); got != first {
			t.Fatalf("kubeLDFlags() changed between calls:\n%s\n%s", first, got)
		}
	}
}

// TestBuildAll builds small tool modules side by side, as a cold suite
// does: each tool that compiles lands in the cache without debug
// information, and a failure names its tool without losing the others.
func TestBuildAll(t *testing.T) {
	const good = "package main\n\nfunc main() { println(\"ok\") }\n"
	cases := map[string]struct {
		reason  string
		sources map[string]string // tool name to its main.go
		wantErr []string          // tools the error must name
	}{
		"all build": {
			reason:  "two modules built at once both land in the cache",
			sources: map[string]string{"one": good, "two": good},
		},
		"one fails": {
			reason:  "a compile error names its tool and the other tool is still built",
			sources: map[string]string{"one": good, "broken": "package main\n\nfunc main() { undefined() }\n"},
			wantErr: []string{"build broken"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("EKS_FLEET_BIN_CACHE", filepath.Join(dir, "cache"))
			var tools []Tool
			for tool, src := range tc.sources {
				mod := filepath.Join(dir, tool)
				if err := os.MkdirAll(mod, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, s := range map[string]string{"go.mod": "module example.com/" + tool + "\n\ngo 1.22\n", "main.go": src} {
					if err := os.WriteFile(filepath.Join(mod, f), []byte(s), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				tools = append(tools, Tool{Name: tool, Module: tool, Package: "example.com/" + tool})
			}
			got, err := buildAll(context.Background(), dir, 2, tools)
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %v does not name %q", tc.reason, err, want)
				}
			}
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			for _, tool := range tools {
				broken := tool.Name == "broken"
				p, ok := got[tool.Name]
				if ok == broken {
					t.Errorf("%s: %s built = %v, want %v", tc.reason, tool.Name, ok, !broken)
					continue
				}
				if broken {
					continue
				}
				if want, _ := tool.Path(dir); p != want {
					t.Errorf("%s: %s at %s, want its cache path %s", tc.reason, tool.Name, p, want)
				}
				f, err := elf.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				for _, s := range f.Sections {
					if strings.HasPrefix(s.Name, ".debug_") || s.Name == ".symtab" {
						t.Errorf("%s: %s has section %s; tools are built without debug information", tc.reason, tool.Name, s.Name)
					}
				}
			}
		})
	}
}

// TestToolsGoCache: with ToolsGoCacheEnv set, a tool is compiled into
// that build cache, not the calling process's, so .ci/run's background
// builds and the tests' share what they compiled.
func TestToolsGoCache(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("EKS_FLEET_BIN_CACHE", filepath.Join(dir, "bin"))
	toolsCache := filepath.Join(dir, "tools-gocache")
	t.Setenv(ToolsGoCacheEnv, toolsCache)
	mod := filepath.Join(dir, "one")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, s := range map[string]string{"go.mod": "module example.com/one\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(mod, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := buildAll(context.Background(), dir, 1, []Tool{{Name: "one", Module: "one", Package: "example.com/one"}}); err != nil {
		t.Fatal(err)
	}
	// The go command keeps its outputs in the cache's two-hex-digit
	// directories; the main package's compile is one of them.
	entries, err := filepath.Glob(filepath.Join(toolsCache, "[0-9a-f][0-9a-f]", "*"))
	if err != nil || len(entries) == 0 {
		t.Errorf("nothing compiled into %s (%s): the build did not use it (%v)", toolsCache, ToolsGoCacheEnv, err)
	}
}

// TestInOrder: BuildAll's order. A tool starts after the tools it names
// in After (those in the same run), in the order given otherwise, never
// more than parallel at once, and tools waiting on each other still run.
func TestInOrder(t *testing.T) {
	cases := map[string]struct {
		reason   string
		tools    []Tool
		parallel int
		want     []string // the whole log, one at a time
	}{
		"in order": {
			reason:   "without After, tools run in the order given",
			tools:    []Tool{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			parallel: 1,
			want:     []string{"start a", "end a", "start b", "end b", "start c", "end c"},
		},
		"after a later tool": {
			reason:   "b waits for c, and a tool that may start goes first",
			tools:    []Tool{{Name: "a"}, {Name: "b", After: []string{"c"}}, {Name: "c"}},
			parallel: 1,
			want:     []string{"start a", "end a", "start c", "end c", "start b", "end b"},
		},
		"after a tool not in the run": {
			reason:   "a tool After names that is not being built does not hold it",
			tools:    []Tool{{Name: "b", After: []string{"x"}}, {Name: "a"}},
			parallel: 1,
			want:     []string{"start b", "end b", "start a", "end a"},
		},
		"waiting on each other": {
			reason:   "a cycle does not hang: the first of it runs",
			tools:    []Tool{{Name: "a", After: []string{"b"}}, {Name: "b", After: []string{"a"}}},
			parallel: 0,
			want:     []string{"start a", "end a", "start b", "end b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var log []string
			InOrder(tc.tools, tc.parallel, func(i int) {
				log = append(log, "start "+tc.tools[i].Name, "end "+tc.tools[i].Name)
			})
			if diff := cmp.Diff(tc.want, log); diff != "" {
				t.Errorf("%s: log (-want +got):\n%s", tc.reason, diff)
			}
		})
	}

	t.Run("side by side", func(t *testing.T) {
		// Two at a time: c starts beside a while b waits for a; b starts
		// only when a has ended; never three at once.
		tools := []Tool{{Name: "a"}, {Name: "b", After: []string{"a"}}, {Name: "c"}, {Name: "d"}}
		var mu sync.Mutex
		running, most := 0, 0
		release := map[string]chan struct{}{}
		for _, tool := range tools {
			release[tool.Name] = make(chan struct{})
		}
		started := make(chan string, len(tools))
		doneAll := make(chan struct{})
		go func() {
			InOrder(tools, 2, func(i int) {
				n := tools[i].Name
				mu.Lock()
				running++
				most = max(most, running)
				mu.Unlock()
				started <- n
				<-release[n]
				mu.Lock()
				running--
				mu.Unlock()
			})
			close(doneAll)
		}()
		first := []string{<-started, <-started}
		slices.Sort(first)
		if diff := cmp.Diff([]string{"a", "c"}, first); diff != "" {
			t.Fatalf("the first two to start (-want +got):\n%s", diff)
		}
		close(release["a"])
		if n := <-started; n != "b" {
			t.Fatalf("after a ended, %s started; want b, which waited for a", n)
		}
		close(release["c"])
		if n := <-started; n != "d" {
			t.Fatalf("after c ended, %s started; want d", n)
		}
		close(release["b"])
		close(release["d"])
		<-doneAll
		if most > 2 {
			t.Errorf("%d tools ran at once, want at most 2", most)
		}
	})
}

// TestAfterSharesModules: a tool that waits for another to reuse its
// compiled packages (After) comes later in All(), and the two builds
// compile every module both use at one version. A package is compiled
// once only when every package below it is the same (their versions are
// in the compiled file's paths), so one module a version apart makes the
// second build compile all that sits above it again.
func TestAfterSharesModules(t *testing.T) {
	dir, err := ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	all := All()
	index := map[string]int{}
	for i, tool := range all {
		index[tool.Name] = i
	}
	var mu sync.Mutex
	lists := map[string]func() map[string]string{}
	modules := func(tool Tool) map[string]string {
		mu.Lock()
		f, ok := lists[tool.Name]
		if !ok {
			f = sync.OnceValue(func() map[string]string { return buildModules(t, dir, tool) })
			lists[tool.Name] = f
		}
		mu.Unlock()
		return f()
	}
	for _, tool := range all {
		for _, after := range tool.After {
			t.Run(tool.Name+" after "+after, func(t *testing.T) {
				t.Parallel()
				i, ok := index[after]
				if !ok {
					t.Fatalf("%s waits for %s, which is not a tool", tool.Name, after)
				}
				if i > index[tool.Name] {
					t.Errorf("%s waits for %s, which All() lists after it", tool.Name, after)
				}
				mine, theirs := modules(tool), modules(all[i])
				var differ []string
				for m, v := range mine {
					if w, ok := theirs[m]; ok && w != v {
						differ = append(differ, fmt.Sprintf("%s %s (%s: %s)", m, v, after, w))
					}
				}
				slices.Sort(differ)
				if len(differ) > 0 {
					t.Errorf("%s (tools/%s) and %s (tools/%s) compile modules at different versions; require the higher in both go.mod files:\n%s",
						tool.Name, tool.Module, after, all[i].Module, strings.Join(differ, "\n"))
				}
			})
		}
	}
}

// buildModules are the modules, by path, of the packages tool's build
// compiles, with their versions.
func buildModules(t *testing.T, dir string, tool Tool) map[string]string {
	cmd := tool.goCommand(context.Background(), filepath.Join(dir, filepath.FromSlash(tool.Module)),
		"list", "-e", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", tool.Package)
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("go list %s: %v", tool.Package, err)
		return nil
	}
	mods := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, version, ok := strings.Cut(line, " "); ok {
			mods[path] = version
		}
	}
	return mods
}

// TestPrune: what an earlier pin or a killed build left is removed; the
// current binaries, a live build's files and anything that is not a
// tool's are kept.
func TestPrune(t *testing.T) {
	toolsDir := t.TempDir()
	for _, m := range []string{"m", "n"} {
		if err := os.MkdirAll(filepath.Join(toolsDir, m), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(toolsDir, m, "go.mod"), []byte("module "+m+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// "x-y" starts with another tool's name and a dash: its entries are
	// its own, never x's.
	x := Tool{Name: "x", Module: "m", Package: "m"}
	xy := Tool{Name: "x-y", Module: "n", Package: "n"}
	kx, err := x.Key(toolsDir)
	if err != nil {
		t.Fatal(err)
	}
	kxy, err := xy.Key(toolsDir)
	if err != nil {
		t.Fatal(err)
	}
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := strconv.Itoa(done.Process.Pid), strconv.Itoa(os.Getpid())
	const old = "0123456789abcdef"
	entries := map[string]struct {
		reason string
		dir    bool
		kept   bool
	}{
		"x-" + kx:                   {reason: "the current binary", kept: true},
		"x-" + kx + ".lock":         {reason: "its lock", kept: true},
		"x-y-" + kxy:                {reason: "the current binary of a tool whose name extends another's", kept: true},
		"x-" + old:                  {reason: "a binary of an earlier pin"},
		"x-" + old + ".lock":        {reason: "its lock"},
		"x-y-" + old:                {reason: "an earlier pin of the longer name"},
		"x-" + kx + ".tmp-" + dead:  {reason: "a killed build's binary"},
		"x-" + kx + ".src-" + dead:  {reason: "a killed build's staged module", dir: true},
		"x-" + kx + ".tmp-" + live:  {reason: "a build that still runs", kept: true},
		"x-" + old + ".src-" + live: {reason: "a build of an earlier pin that still runs", dir: true, kept: true},
		"z-" + old:                  {reason: "not a tool's", kept: true},
		"x-notakey":                 {reason: "no key", kept: true},
		"x-" + old + ".bak":         {reason: "not a name the cache makes", kept: true},
	}
	cache := t.TempDir()
	var wantRemoved, wantLeft []string
	for name, e := range entries {
		p := filepath.Join(cache, name)
		if e.dir {
			if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte(e.reason), 0o644); err != nil {
			t.Fatal(err)
		}
		if e.kept {
			wantLeft = append(wantLeft, name)
		} else {
			wantRemoved = append(wantRemoved, name)
		}
	}
	removed, err := prune(cache, toolsDir, []Tool{x, xy})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	des, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range des {
		left = append(left, d.Name())
	}
	slices.Sort(removed)
	slices.Sort(wantRemoved)
	slices.Sort(wantLeft)
	if diff := cmp.Diff(wantRemoved, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantLeft, left); diff != "" {
		t.Errorf("left in the cache (-want +got):\n%s", diff)
	}
	if again, err := prune(cache, toolsDir, []Tool{x, xy}); err != nil || len(again) > 0 {
		t.Errorf("a second prune removed %v (%v), want nothing", again, err)
	}
	if removed, err := prune(filepath.Join(cache, "absent"), toolsDir, []Tool{x}); err != nil || len(removed) > 0 {
		t.Errorf("pruning a cache that does not exist: %v, %v", removed, err)
	}
}

func TestProcessRuns(t *testing.T) {
	// A child that has exited and is not reaped yet is a zombie.
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zombie.Wait() })
	for zombie.Process != nil {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(zombie.Process.Pid) + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
	}
	tests := map[string]struct {
		reason string
		pid    int
		want   bool
	}{
		"ThisProcess": {reason: "the test itself runs", pid: os.Getpid(), want: true},
		"Zero":        {reason: "no process has pid 0", pid: 0},
		"Negative":    {reason: "a negative pid names a process group, not a process", pid: -1},
		"Absent":      {reason: "above the kernel's pid_max (2^22)", pid: 1 << 30},
		"Zombie":      {reason: "an exited child not yet reaped does not run", pid: zombie.Process.Pid},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ProcessRuns(tc.pid); got != tc.want {
				t.Errorf("%s\nProcessRuns(%d) = %v, want %v", tc.reason, tc.pid, got, tc.want)
			}
		})
	}
}
