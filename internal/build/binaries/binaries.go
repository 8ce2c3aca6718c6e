// Package binaries builds the upstream programs the tests run for real
// (API servers, controllers, Crossplane, composition functions) from the
// tool modules under internal/build/tools, each of which pins one upstream
// release with the Go module proxy's go.sum. A binary is built once per
// content of its tool module (go.mod, go.sum and any Go files), link flags
// and Go toolchain, into the user cache directory, so a warm run does not
// rebuild and parallel test processes share one build.
//
// The binaries are built without debug information (buildFlags): no test
// attaches a debugger, and stack traces keep their files and lines (they
// come from the pclntab, not DWARF). Leaving DWARF out of every package's
// compile takes about a fifth off a cold build (sealed-secrets' controller
// on this repository's 2-core machine: 210 to 167 CPU-seconds).
package binaries

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
)

// buildFlags go to every tool's go build, ahead of its own link flags:
// no DWARF in any package (-dwarf=false) nor in the binary (-w), no symbol
// table (-s).
var buildFlags = []string{"-trimpath", "-gcflags=all=-dwarf=false"}

const baseLDFlags = "-s -w"

// Tool is one binary built from a tool module.
type Tool struct {
	// Name is the binary's file name.
	Name string
	// Module is the tool module's directory under internal/build/tools.
	Module string
	// Package is the main package to build, as its import path.
	Package string
	// LDFlags are passed to go build -ldflags.
	LDFlags string
	// Toolchain, when set, is the GOTOOLCHAIN the build needs (a module
	// that requires a newer Go than the local one); the go command fetches
	// that toolchain from the module proxy.
	Toolchain string
	// Embed are files of upstream modules the tool module's own main
	// package embeds (files upstream generates into a gitignored path, so
	// its module zip holds their sources only). They are copied, with the
	// tool module, into a build directory.
	Embed []ModuleFile
	// Overlay replaces files of upstream modules in the build with files
	// of the tool module: a registration list cut to what the fleet uses,
	// where upstream offers no build tag for it at the pinned release. The
	// module is copied from the module cache (go build -overlay refuses
	// files there) and the staged tool module's go.mod replaces it with
	// the copy. Each replaced file's package must still compile.
	Overlay []Overlay
	// After names tools whose compiled packages this one reuses. Builds
	// run in one build cache (scripts/tools and .ci/run build every tool
	// in one run), where a package two tools compile with every package
	// below it at the same versions is compiled once; BuildAll starts t
	// only when these are built, rather than have both compile the same
	// packages side by side. Their tool modules require the same version
	// of every module both compile (TestAfterSharesModules).
	After []string
}

// Overlay is a file of a module the tool module requires (Module, Path)
// replaced in the build: by the file File of the tool module (a path
// relative to it), or, when Map is set instead, by upstream's own file
// with the composite literal of its package-level variable Map left with
// the entries whose string keys are in Keep (upstream's registration map
// cut to what the fleet uses), and the imports only the dropped entries
// used removed. A key of Keep that upstream's map lacks fails the build.
type Overlay struct {
	Module, Path, File string
	Map                string
	Keep               []string
}

// Dropped are the keys of upstream's map that the overlays of t with a Map
// leave out, by the overlaid file's module and path ("module/path").
func (t Tool) Dropped(ctx context.Context) (map[string][]string, error) {
	tools, err := ToolsDir()
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, o := range t.Overlay {
		if o.Map == "" {
			continue
		}
		modDir, err := t.moduleDir(ctx, filepath.Join(tools, filepath.FromSlash(t.Module)), o.Module)
		if err != nil {
			return nil, err
		}
		src, err := os.ReadFile(filepath.Join(modDir, filepath.FromSlash(o.Path)))
		if err != nil {
			return nil, fmt.Errorf("overlay of %s %s: %w", o.Module, o.Path, err)
		}
		keys, err := MapKeys(src, o.Map)
		if err != nil {
			return nil, fmt.Errorf("overlay of %s %s: %w", o.Module, o.Path, err)
		}
		for _, k := range keys {
			if !slices.Contains(o.Keep, k) {
				out[o.Module+"/"+o.Path] = append(out[o.Module+"/"+o.Path], k)
			}
		}
	}
	return out, nil
}

// ModuleFile is a file of a module the tool module requires, at the
// version its go.mod pins (go.sum holds the module's hash).
type ModuleFile struct {
	// Module is the module path, Path the file in it, As the file's name
	// in the tool module's directory.
	Module, Path, As string
}

// ToolsDir is internal/build/tools of the repository holding this source
// file, or found by walking up from the working directory.
func ToolsDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		d := filepath.Join(filepath.Dir(file), "..", "tools")
		if _, err := os.Stat(d); err == nil {
			return filepath.Clean(d), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		c := filepath.Join(d, "internal", "build", "tools")
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("cannot find internal/build/tools (the tool modules that pin upstream binaries)")
		}
	}
}

// CacheDir is where built binaries are kept: $EKS_FLEET_BIN_CACHE, else
// eks-fleet/bin under the user cache directory.
func CacheDir() string {
	if d := os.Getenv("EKS_FLEET_BIN_CACHE"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "eks-fleet", "bin")
}

// Key is what a built binary depends on: the tool module's files, the
// package, link flags, toolchain and the local Go version.
func (t Tool) Key(toolsDir string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00", t.Package, t.ldflags(), strings.Join(buildFlags, " "), t.Toolchain, runtime.Version(), runtime.GOARCH)
	for _, e := range t.Embed {
		fmt.Fprintf(h, "embed\x00%s\x00%s\x00%s\x00", e.Module, e.Path, e.As)
	}
	for _, o := range t.Overlay {
		fmt.Fprintf(h, "overlay\x00%s\x00%s\x00%s\x00", o.Module, o.Path, o.File)
		if o.Map != "" {
			fmt.Fprintf(h, "map\x00%s\x00%q\x00", o.Map, o.Keep)
		}
	}
	dir := filepath.Join(toolsDir, filepath.FromSlash(t.Module))
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another tool module
				}
			}
			return nil
		}
		if n := d.Name(); n == "go.mod" || n == "go.sum" || strings.HasSuffix(n, ".go") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("tool module %s: %w", t.Module, err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Path is where t's binary is cached (it may not exist yet).
func (t Tool) Path(toolsDir string) (string, error) {
	k, err := t.Key(toolsDir)
	if err != nil {
		return "", err
	}
	return filepath.Join(CacheDir(), t.Name+"-"+k), nil
}

// ldflags are the link flags t is built with.
func (t Tool) ldflags() string {
	return strings.TrimSpace(baseLDFlags + " " + t.LDFlags)
}

// Build returns the path of t's binary, building it first unless it is
// cached. Concurrent callers, in this process or others, build it once.
func Build(ctx context.Context, t Tool) (string, error) {
	tools, err := ToolsDir()
	if err != nil {
		return "", err
	}
	return build(ctx, tools, t)
}

// Parallel is how many builds BuildAll runs at once by default: two fill
// the gaps one leaves on this repository's 2-core CI machine (a cold
// .ci/run kept its cores 99-100 % busy, against 90 % one at a time); more
// would only share the same cores and memory (a Kubernetes compile takes
// gigabytes).
const Parallel = 2

// BuildAll builds every tool not yet cached, up to parallel at a time (at
// least one), and returns their paths by name. A single go build leaves
// cores idle while it links or waits on a long package, so a cold run of
// the suite builds its tools side by side: in the order given, each once
// the tools it names in After are built (the first in the order that may
// start, when a build ends). All are attempted; the error joins every
// failure.
func BuildAll(ctx context.Context, parallel int, tools ...Tool) (map[string]string, error) {
	dir, err := ToolsDir()
	if err != nil {
		return nil, err
	}
	return buildAll(ctx, dir, parallel, tools)
}

func buildAll(ctx context.Context, dir string, parallel int, tools []Tool) (map[string]string, error) {
	paths := make([]string, len(tools))
	errs := make([]error, len(tools))
	InOrder(tools, parallel, func(i int) {
		paths[i], errs[i] = build(ctx, dir, tools[i])
	})
	out := make(map[string]string, len(tools))
	for i, t := range tools {
		if errs[i] == nil {
			out[t.Name] = paths[i]
		}
	}
	return out, errors.Join(errs...)
}

// InOrder calls run for each index of tools, up to parallel (at least
// one) at a time: when a slot is free, for the first tool not yet started
// whose After tools among these have returned. Should only tools waiting
// on each other be left, the first of them runs.
func InOrder(tools []Tool, parallel int, run func(i int)) {
	started := make([]bool, len(tools))
	done := map[string]bool{}
	listed := map[string]bool{}
	for _, t := range tools {
		listed[t.Name] = true
	}
	waits := func(t Tool) bool {
		return slices.ContainsFunc(t.After, func(a string) bool { return listed[a] && !done[a] })
	}
	finished := make(chan int)
	running := 0
	for left := len(tools); left > 0; left-- {
		for running < max(parallel, 1) {
			i := -1
			for j, t := range tools {
				if !started[j] && !waits(t) {
					i = j
					break
				}
			}
			if i < 0 && running == 0 {
				i = slices.Index(started, false)
			}
			if i < 0 {
				break
			}
			started[i] = true
			running++
			go func() {
				run(i)
				finished <- i
			}()
		}
		i := <-finished
		running--
		done[tools[i].Name] = true
	}
}

func build(ctx context.Context, tools string, t Tool) (string, error) {
	bin, err := t.Path(tools)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close anyway
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // built while we waited
	}
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	dir := filepath.Join(tools, filepath.FromSlash(t.Module))
	if len(t.Embed) > 0 || len(t.Overlay) > 0 {
		src := fmt.Sprintf("%s.src-%d", bin, os.Getpid())
		defer os.RemoveAll(src)
		if err := t.stage(ctx, dir, src); err != nil {
			return "", fmt.Errorf("build %s: %w", t.Name, err)
		}
		dir = src
	}
	args := append([]string{"build"}, buildFlags...)
	args = append(args, "-ldflags", t.ldflags(), "-o", tmp, t.Package)
	cmd := t.goCommand(ctx, dir, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build %s (%s) in %s: %w\n%s", t.Name, t.Package, cmd.Dir, err, out.String())
	}
	if err := os.Rename(tmp, bin); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return bin, nil
}

// ToolsGoCacheEnv names the Go build cache every tool build uses, when
// set, whatever the calling process's own GOCACHE: .ci/run points the
// background build of every tool and the tests' builds (a test that needs
// a tool before the background has built it builds it itself) at one
// cache, so that what one compiled the other reuses (After), and removes
// it once every tool is built.
const ToolsGoCacheEnv = "EKS_FLEET_TOOLS_GOCACHE"

// goCommand is the go command run in a tool module's directory dir.
func (t Tool) goCommand(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if c := os.Getenv(ToolsGoCacheEnv); c != "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+c)
	}
	if t.Toolchain != "" {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN="+t.Toolchain)
	}
	return cmd
}

// stage copies the tool module in dir (its top level: go.mod, go.sum and
// the Go files of the main package a tool with Embed builds there) to
// dst, with the files of t.Embed from their modules, and each module t
// overlays copied beside it with its files replaced, and replaced by
// that copy in dst's go.mod.
func (t Tool) stage(ctx context.Context, dir, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	copyFile := func(from, to string) error {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && (n == "go.mod" || n == "go.sum" || strings.HasSuffix(n, ".go")) {
			if err := copyFile(filepath.Join(dir, n), filepath.Join(dst, n)); err != nil {
				return err
			}
		}
	}
	for _, e := range t.Embed {
		modDir, err := t.moduleDir(ctx, dir, e.Module)
		if err != nil {
			return err
		}
		if err := copyFile(filepath.Join(modDir, filepath.FromSlash(e.Path)), filepath.Join(dst, e.As)); err != nil {
			return fmt.Errorf("embed %s of %s: %w", e.Path, e.Module, err)
		}
	}
	var modules []string
	for _, o := range t.Overlay {
		if !slices.Contains(modules, o.Module) {
			modules = append(modules, o.Module)
		}
	}
	for i, m := range modules {
		modDir, err := t.moduleDir(ctx, dir, m)
		if err != nil {
			return err
		}
		rel := fmt.Sprintf("_overlaid/%d", i) // _: no ./... pattern of the tool module walks it
		copied := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.CopyFS(copied, os.DirFS(modDir)); err != nil {
			return fmt.Errorf("copy %s: %w", m, err)
		}
		for _, o := range t.Overlay {
			if o.Module != m {
				continue
			}
			if err := o.apply(dir, modDir, copied); err != nil {
				return fmt.Errorf("overlay of %s %s: %w", o.Module, o.Path, err)
			}
		}
		var errOut bytes.Buffer
		cmd := t.goCommand(ctx, dst, "mod", "edit", "-replace="+m+"=./"+rel)
		cmd.Stderr = &errOut
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go mod edit -replace %s: %w\n%s", m, err, errOut.String())
		}
	}
	return nil
}

// apply writes o's file into copied, the copy of o.Module's directory
// modDir, from the tool module in dir.
func (o Overlay) apply(dir, modDir, copied string) error {
	if (o.File == "") == (o.Map == "") {
		return errors.New("set one of File (a file of the tool module) and Map (a variable of upstream's file to cut)")
	}
	// A file the pinned release lacks would be added, not replaced.
	src, err := os.ReadFile(filepath.Join(modDir, filepath.FromSlash(o.Path)))
	if err != nil {
		return err
	}
	var out []byte
	if o.File != "" {
		out, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(o.File)))
	} else {
		out, err = keepEntries(src, o.Map, o.Keep)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(copied, filepath.FromSlash(o.Path)), out, 0o644)
}

// moduleDir is the directory of module, at the version the tool module in
// dir requires, in the module cache (downloaded if need be).
func (t Tool) moduleDir(ctx context.Context, dir, module string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := t.goCommand(ctx, dir, "mod", "download", "-json", module)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go mod download %s: %w\n%s", module, err, errOut.String())
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out.Bytes(), &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no module directory (%v %s)", module, err, mod.Error)
	}
	return mod.Dir, nil
}

// Prune removes from the binary cache dir what the tools no longer use:
// binaries of a tool built from another content of its tool module (an
// earlier pin) with their locks, and what a build killed midway left (a
// .tmp- binary or .src- directory of a process that no longer runs). It
// removes nothing else: a file whose name is not one of tools' names with
// a key, and the current binaries, are kept. It returns what it removed.
// A machine that keeps its caches from run to run (CI) would otherwise
// keep every earlier release's binaries.
func Prune(dir string, tools []Tool) ([]string, error) {
	toolsDir, err := ToolsDir()
	if err != nil {
		return nil, err
	}
	return prune(dir, toolsDir, tools)
}

func prune(dir, toolsDir string, tools []Tool) ([]string, error) {
	current := map[string]string{}
	for _, t := range tools {
		k, err := t.Key(toolsDir)
		if err != nil {
			return nil, err
		}
		current[t.Name] = t.Name + "-" + k
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		tool, bin, rest := cachedName(e.Name(), current)
		if tool == "" {
			continue
		}
		keep := bin == current[tool] && (rest == "" || rest == ".lock")
		for _, mark := range []string{".tmp-", ".src-"} {
			if pid, ok := strings.CutPrefix(rest, mark); ok {
				n, err := strconv.Atoi(pid)
				keep = err == nil && ProcessRuns(n)
			}
		}
		if keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// cachedName splits a cache entry's name into the tool and binary it
// belongs to (<tool name>-<16 hex digits of a key>) and what follows ("",
// ".lock", ".tmp-<pid>", ".src-<pid>"); tool is "" for a name no tool of
// current makes.
func cachedName(name string, current map[string]string) (tool, bin, rest string) {
	for t := range current {
		k, ok := strings.CutPrefix(name, t+"-")
		if !ok || len(k) < 16 || strings.Trim(k[:16], "0123456789abcdef") != "" {
			continue
		}
		rest = k[16:]
		if rest != "" && rest != ".lock" && !strings.HasPrefix(rest, ".tmp-") && !strings.HasPrefix(rest, ".src-") {
			continue
		}
		return t, t + "-" + k[:16], rest
	}
	return "", "", ""
}

// ProcessRuns reports whether process pid runs on this machine: it exists
// and has not exited (a zombie, exited and not yet reaped by its parent,
// does not run).
func ProcessRuns(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z"
}
