package xrender

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"google.golang.org/grpc"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fn"
	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/build/loopback"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// Function is a composition function the proof can run locally: its
// package repository (as a Function's spec.package names it), the tool
// that builds it and the pinned release.
type Function struct {
	Repository string // e.g. xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform
	Tool       binaries.Tool
	Version    string
}

// Functions lists the pinned upstream functions.
func Functions() []Function {
	return []Function{
		{"xpkg.crossplane.io/crossplane-contrib/function-patch-and-transform", binaries.PatchAndTransform, "v" + versions.FunctionPatchAndTransform},
		{"xpkg.crossplane.io/crossplane-contrib/function-auto-ready", binaries.AutoReady, "v" + versions.FunctionAutoReady},
	}
}

// Programs are the upstream programs a render runs, each built once at its
// pinned release: the render server and the pinned functions.
func Programs() []binaries.Tool {
	out := []binaries.Tool{binaries.RenderServer}
	for _, f := range Functions() {
		out = append(out, f.Tool)
	}
	return out
}

// process is a local server this process started: a pinned function or
// the render server.
type process struct {
	cmd    *exec.Cmd
	target string
	done   chan struct{}
	stderr *bytes.Buffer
}

var (
	fnMu       sync.Mutex
	sockDir    string
	servers    = map[string]*process{} // repository -> function server
	render     *process                // the render server
	renderHTTP *http.Client
	inProcess  *grpc.Server // function-workload-cluster, served by this process
	inTarget   string
)

// socketDir is a private directory for this process's unix sockets.
func socketDir() (string, error) {
	if sockDir == "" {
		d, err := os.MkdirTemp("", "xrender-*")
		if err != nil {
			return "", err
		}
		sockDir = d
	}
	return sockDir, nil
}

// IsInProcess reports whether the function package repository runs in this
// process (this project's function-workload-cluster, from any registry)
// rather than as a built subprocess.
func IsInProcess(repository string) bool {
	return path.Base(repository) == versions.WorkloadClusterFunctionPackage
}

// functionTarget starts the function serving repository (once per process)
// and returns its gRPC target: this project's function in-process (package
// fn, the deployed function's code, over gRPC on a unix socket), a pinned
// upstream function as a subprocess (built only when a Composition uses
// one).
func functionTarget(ctx context.Context, repository, tag string) (string, error) {
	if IsInProcess(repository) {
		if tag != "" && tag != versions.WorkloadClusterFunction {
			return "", fmt.Errorf("function package %s:%s differs from internal/contract/versions.WorkloadClusterFunction %s", repository, tag, versions.WorkloadClusterFunction)
		}
		fnMu.Lock()
		defer fnMu.Unlock()
		if inProcess == nil {
			dir, err := socketDir()
			if err != nil {
				return "", err
			}
			sock := filepath.Join(dir, "function-workload-cluster.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				return "", fmt.Errorf("serve function-workload-cluster: %w", err)
			}
			s := grpc.NewServer()
			fnv1.RegisterFunctionRunnerServiceServer(s, &fn.Function{})
			go func() { _ = s.Serve(l) }()
			inProcess, inTarget = s, "unix://"+sock
		}
		return inTarget, nil
	}
	var f *Function
	for _, c := range Functions() {
		if c.Repository == repository || strings.HasSuffix(repository, "/"+path.Base(c.Repository)) {
			f = &c
			break
		}
	}
	if f == nil {
		var known []string
		for _, c := range Functions() {
			known = append(known, c.Repository)
		}
		return "", fmt.Errorf("function package %q is not one the proof can run (known: %s)", repository, strings.Join(known, ", "))
	}
	if tag != "" && tag != f.Version {
		return "", fmt.Errorf("function package %s:%s differs from the pinned release %s (internal/contract/versions)", repository, tag, f.Version)
	}
	bin, err := binaries.Build(ctx, f.Tool)
	if err != nil {
		return "", err
	}
	fnMu.Lock()
	defer fnMu.Unlock()
	if s, ok := servers[f.Repository]; ok && s.alive() {
		return s.target, nil
	}
	port, err := loopback.Port()
	if err != nil {
		return "", err
	}
	target := fmt.Sprintf("127.0.0.1:%d", port)
	s, err := start(ctx, bin, target, func() error {
		c, err := net.DialTimeout("tcp", target, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}, "--insecure", "--address", target)
	if err != nil {
		return "", err
	}
	servers[f.Repository] = s
	return target, nil
}

// renderClient starts the render server (once per process) and returns a
// client that reaches it.
func renderClient(ctx context.Context) (*http.Client, error) {
	bin, err := binaries.Build(ctx, binaries.RenderServer)
	if err != nil {
		return nil, err
	}
	fnMu.Lock()
	defer fnMu.Unlock()
	if render != nil && render.alive() {
		return renderHTTP, nil
	}
	dir, err := socketDir()
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "render.sock")
	os.Remove(sock)
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 64,
	}}
	s, err := start(ctx, bin, sock, func() error {
		rsp, err := c.Get("http://render/healthz")
		if err == nil {
			rsp.Body.Close()
		}
		return err
	}, "--socket", sock)
	if err != nil {
		return nil, err
	}
	render, renderHTTP = s, c
	return c, nil
}

// start runs bin with args until ready reports no error.
func start(ctx context.Context, bin, target string, ready func() error, args ...string) (*process, error) {
	// Not CommandContext: the server outlives the caller's context and is
	// stopped by Shutdown (or dies with this process, Pdeathsig).
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stderr := &bytes.Buffer{}
	cmd.Stderr, cmd.Stdout = stderr, stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	s := &process{cmd: cmd, target: target, done: make(chan struct{}), stderr: stderr}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for ready() != nil {
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited: %s", filepath.Base(bin), stderr.String())
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond): // a server listens within milliseconds
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("%s did not listen on %s", filepath.Base(bin), target)
		}
	}
	return s, nil
}

func (p *process) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// errServerGone is returned when the render server died during a request.
var errServerGone = errors.New("the render server exited")

// Shutdown stops the processes this process started and the in-process
// function server. Rendering again afterwards starts them again.
func Shutdown() {
	fnMu.Lock()
	defer fnMu.Unlock()
	if inProcess != nil {
		inProcess.Stop()
		inProcess, inTarget = nil, ""
	}
	for k, s := range servers {
		s.stop()
		delete(servers, k)
	}
	if render != nil {
		render.stop()
		render, renderHTTP = nil, nil
	}
	if sockDir != "" {
		os.RemoveAll(sockDir)
		sockDir = ""
	}
}
