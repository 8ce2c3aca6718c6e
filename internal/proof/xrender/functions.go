package xrender

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/xpfn"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// Function is a composition function the proof can run locally: its
// package repository (as a Function's spec.package names it), the Go
// package that builds it from the tool module, and the pinned release.
type Function struct {
	Repository string // e.g. xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform
	GoPackage  string
	Version    string
	// ToolModule is the directory under internal/build/tools/functions of the
	// nested module that pins it.
	ToolModule string
}

// Functions lists the functions the tool module pins.
func Functions() []Function {
	return []Function{
		{"xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform", "github.com/crossplane-contrib/function-patch-and-transform", "v" + versions.FunctionPatchAndTransform, "patch-and-transform"},
		{"xpkg.crossplane.io/crossplane-contrib/function-auto-ready", "github.com/crossplane/function-auto-ready", "v" + versions.FunctionAutoReady, "auto-ready"},
	}
}

func (f Function) binary() string { return filepath.Base(f.GoPackage) }

// ToolModuleDir is the directory holding the nested tool modules that pin
// the function releases (internal/build/tools/functions/<function>/go.mod). It is
// found next to this source file, or by walking up from the working
// directory.
func ToolModuleDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		d := filepath.Join(filepath.Dir(file), "..", "..", "build", "tools", "functions")
		if _, err := os.Stat(filepath.Join(d, "patch-and-transform", "go.mod")); err == nil {
			return filepath.Clean(d), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		c := filepath.Join(d, "internal", "build", "tools", "functions")
		if _, err := os.Stat(filepath.Join(c, "patch-and-transform", "go.mod")); err == nil {
			return c, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("cannot find internal/build/tools/functions (the composition functions' tool modules)")
		}
	}
}

type server struct {
	cmd    *exec.Cmd
	target string
	done   chan struct{}
	stderr *bytes.Buffer
}

var (
	fnMu      sync.Mutex
	binDir    string
	servers   = map[string]*server{} // repository -> server
	inProcess *xpfn.Server           // function-workload-cluster, served by this process
	buildOnce sync.Once
	buildErr  error
)

// buildFunctions builds every pinned function once per process into a
// cache directory keyed by the tool module's go.mod and go.sum, so a later
// process reuses the binaries without even linking.
func buildFunctions(ctx context.Context) (string, error) {
	buildOnce.Do(func() {
		mod, err := ToolModuleDir()
		if err != nil {
			buildErr = err
			return
		}
		h := sha256.New()
		for _, fn := range Functions() {
			for _, f := range []string{"go.mod", "go.sum"} {
				b, err := os.ReadFile(filepath.Join(mod, fn.ToolModule, f))
				if err != nil {
					buildErr = fmt.Errorf("tool module: %w", err)
					return
				}
				h.Write(b)
			}
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "eks-fleet", "functions", hex.EncodeToString(h.Sum(nil))[:16])
		complete := true
		for _, f := range Functions() {
			if _, err := os.Stat(filepath.Join(dir, f.binary())); err != nil {
				complete = false
			}
		}
		if complete {
			binDir = dir
			return
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			buildErr = err
			return
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), ".build-*")
		if err != nil {
			buildErr = err
			return
		}
		for _, f := range Functions() {
			cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(tmp, f.binary()), f.GoPackage)
			cmd.Dir = filepath.Join(mod, f.ToolModule)
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
			out, err := cmd.CombinedOutput()
			if err != nil {
				os.RemoveAll(tmp)
				buildErr = fmt.Errorf("build %s in %s: %v: %s", f.GoPackage, cmd.Dir, err, out)
				return
			}
		}
		if err := os.Rename(tmp, dir); err != nil {
			os.RemoveAll(tmp)
			if _, statErr := os.Stat(dir); statErr != nil {
				buildErr = err
				return
			}
		}
		binDir = dir
	})
	return binDir, buildErr
}

// IsInProcess reports whether the function package repository runs in this
// process (this project's function-workload-cluster, from any registry)
// rather than as a built subprocess.
func IsInProcess(repository string) bool {
	return path.Base(repository) == versions.WorkloadClusterFunctionPackage
}

// functionTarget starts the function serving repository (once per process)
// and returns its gRPC address: this project's function in-process, a
// pinned upstream function as a subprocess (built only when a Composition
// uses one).
func functionTarget(ctx context.Context, repository, tag string) (string, error) {
	if IsInProcess(repository) {
		if tag != "" && tag != versions.WorkloadClusterFunction {
			return "", fmt.Errorf("function package %s:%s differs from internal/contract/versions.WorkloadClusterFunction %s", repository, tag, versions.WorkloadClusterFunction)
		}
		fnMu.Lock()
		defer fnMu.Unlock()
		if inProcess == nil {
			s, err := xpfn.Serve()
			if err != nil {
				return "", err
			}
			inProcess = s
		}
		return inProcess.Target, nil
	}
	var fn *Function
	for _, f := range Functions() {
		if f.Repository == repository || strings.HasSuffix(repository, "/"+filepath.Base(f.Repository)) {
			fn = &f
			break
		}
	}
	if fn == nil {
		var known []string
		for _, f := range Functions() {
			known = append(known, f.Repository)
		}
		return "", fmt.Errorf("function package %q is not one the proof can run (known: %s)", repository, strings.Join(known, ", "))
	}
	if tag != "" && tag != fn.Version {
		return "", fmt.Errorf("function package %s:%s differs from the pinned release %s (internal/contract/versions)", repository, tag, fn.Version)
	}
	dir, err := buildFunctions(ctx)
	if err != nil {
		return "", err
	}
	fnMu.Lock()
	defer fnMu.Unlock()
	if s, ok := servers[fn.Repository]; ok {
		select {
		case <-s.done:
			delete(servers, fn.Repository)
		default:
			return s.target, nil
		}
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	target := fmt.Sprintf("127.0.0.1:%d", port)
	// Not CommandContext: the server outlives the caller's context and is
	// stopped by Shutdown (or dies with this process, Pdeathsig).
	cmd := exec.Command(filepath.Join(dir, fn.binary()), "--insecure", "--address", target)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	cmd.Stdout = stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", fn.binary(), err)
	}
	s := &server{cmd: cmd, target: target, done: make(chan struct{}), stderr: stderr}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", target, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-s.done:
			return "", fmt.Errorf("%s exited: %s", fn.binary(), stderr.String())
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return "", ctx.Err()
		case <-time.After(5 * time.Millisecond): // a function listens within milliseconds
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return "", fmt.Errorf("%s did not listen on %s", fn.binary(), target)
		}
	}
	servers[fn.Repository] = s
	return target, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Shutdown stops the function processes this process started and the
// in-process function server. Rendering again afterwards starts them again.
func Shutdown() {
	fnMu.Lock()
	defer fnMu.Unlock()
	if inProcess != nil {
		_ = inProcess.Stop()
		inProcess = nil
	}
	for k, s := range servers {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		delete(servers, k)
	}
}
