// Package engine runs Pulumi programs through the real Pulumi engine: the
// CLI and the Kubernetes provider plugin built from their pinned modules
// (binaries.Pulumi, binaries.PulumiKubernetes), driven by the Automation
// API with an inline program (the program runs in this process, the
// engine in the CLI's), state in a local file backend, secrets under a
// passphrase. Nothing is mocked: the engine plans, orders, diffs and
// deletes, and the provider applies and awaits, as under `pulumi up`.
//
// Only the Kubernetes provider can be had here (the module proxy serves
// neither the AWS, EKS, TLS nor Random provider), so the programs run
// through it are the Kubernetes half of the hub (components/fluxbootstrap);
// the rest stays under pulumi.WithMocks.
package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
)

// Passphrase encrypts the stacks' secrets (the deploy key) in the file
// backend; the state lives and dies with the test's directory.
const Passphrase = "eks-fleet-e2e"

// Engine is one Pulumi installation: a home, a backend and the plugins.
type Engine struct {
	// Dir holds PULUMI_HOME, the file backend's state, the plugin's PATH
	// entry and each operation's log.
	Dir string

	cmd auto.PulumiCommand
	env map[string]string

	mu  sync.Mutex
	ops int
}

// New builds (or takes from the cache) the CLI and the Kubernetes
// provider, and lays out an engine under dir. env is added to the
// engine's and so the plugin's environment (the internet stand-in's proxy:
// the provider pulls Helm charts).
func New(ctx context.Context, dir string, env []string) (*Engine, error) {
	bins, err := binaries.BuildAll(ctx, binaries.Parallel, binaries.Pulumi, binaries.PulumiKubernetes)
	if err != nil {
		return nil, err
	}
	e := &Engine{Dir: dir, env: map[string]string{}}
	// auto.NewPulumiCommand runs Root/bin/pulumi; the provider is found
	// on PATH (an "ambient" plugin: pulumi sdk/v3
	// go/common/workspace/plugins.go, GetPluginPath), whatever version the
	// program's SDK asks for, so nothing is downloaded.
	bin := filepath.Join(dir, "bin")
	plugins := filepath.Join(dir, "plugins")
	for _, d := range []string{bin, plugins, filepath.Join(dir, "home"), filepath.Join(dir, "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	for link, target := range map[string]string{
		filepath.Join(bin, "pulumi"):                           bins[binaries.Pulumi.Name],
		filepath.Join(plugins, binaries.PulumiKubernetes.Name): bins[binaries.PulumiKubernetes.Name],
	} {
		if err := os.Symlink(target, link); err != nil && !os.IsExist(err) {
			return nil, err
		}
	}
	if e.cmd, err = auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: dir}); err != nil {
		return nil, fmt.Errorf("pulumi CLI %s: %w", bins[binaries.Pulumi.Name], err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		e.env[k] = v
	}
	for k, v := range map[string]string{
		"PATH":                     plugins + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME":                     filepath.Join(dir, "home"),
		"PULUMI_BACKEND_URL":       "file://" + filepath.Join(dir, "state"),
		"PULUMI_CONFIG_PASSPHRASE": Passphrase,
		"PULUMI_SKIP_UPDATE_CHECK": "true",
		// Never fetch a plugin: the engine runs what was built here.
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
	} {
		e.env[k] = v
	}
	return e, nil
}

// Stack is a stack of an inline program.
type Stack struct {
	auto.Stack
	e *Engine
}

// Stack creates or selects stack of project, running program.
func (e *Engine) Stack(ctx context.Context, project, stack string, program pulumi.RunFunc) (*Stack, error) {
	s, err := auto.UpsertStackInlineSource(ctx, stack, project, program,
		auto.Pulumi(e.cmd), auto.PulumiHome(filepath.Join(e.Dir, "home")), auto.EnvVars(e.env), auto.SecretsProvider("passphrase"))
	if err != nil {
		return nil, fmt.Errorf("stack %s/%s: %w", project, stack, err)
	}
	return &Stack{Stack: s, e: e}, nil
}

// SetProgram replaces the stack's inline program (the next operation runs
// it): `pulumi up` after the program or its settings changed.
func (s *Stack) SetProgram(program pulumi.RunFunc) {
	s.Workspace().SetProgram(program)
}

// Step is one resource step the engine took.
type Step struct {
	Op   apitype.OpType
	URN  string
	Type string
	// Diffs are the properties that changed (updates).
	Diffs []string
}

func (s Step) String() string {
	name := s.URN[strings.LastIndex(s.URN, "::")+2:]
	if len(s.Diffs) > 0 {
		return fmt.Sprintf("%s %s %s %v", s.Op, s.Type, name, s.Diffs)
	}
	return fmt.Sprintf("%s %s %s", s.Op, s.Type, name)
}

// Result is what one operation did.
type Result struct {
	// Steps are the resource steps other than "same", in the engine's
	// order.
	Steps []Step
	// Log is the operation's progress output (also in Dir/logs).
	Log string
}

// Changed reports whether any resource step changed something.
func (r Result) Changed() bool { return len(r.Steps) > 0 }

// Up runs `pulumi up`.
func (s *Stack) Up(ctx context.Context, opts ...optup.Option) (Result, error) {
	return s.run(ctx, "up", nil, func(progress *bytes.Buffer, ch chan<- events.EngineEvent) error {
		_, err := s.Stack.Up(ctx, append(opts, optup.ProgressStreams(progress), optup.EventStreams(ch))...)
		return err
	})
}

// UpKilled runs `pulumi up` and kills the CLI and its plugins (SIGKILL)
// `after` the first step at matches began, as a lost CI runner or a killed terminal stops
// it: no chance to finish the step or save its outcome. It returns what
// the engine did until then; the error is the killed CLI's.
func (s *Stack) UpKilled(ctx context.Context, at func(Step) bool, after time.Duration) (Result, error) {
	var once sync.Once
	var killErr error
	onStep := func(st Step) {
		if at(st) {
			once.Do(func() {
				time.AfterFunc(after, func() { killErr = s.e.killCLI() })
			})
		}
	}
	res, err := s.run(ctx, "up-killed", onStep, func(progress *bytes.Buffer, ch chan<- events.EngineEvent) error {
		_, err := s.Stack.Up(ctx, optup.ProgressStreams(progress), optup.EventStreams(ch))
		return err
	})
	if killErr != nil {
		return res, fmt.Errorf("kill the pulumi CLI: %w", killErr)
	}
	return res, err
}

// killCLI SIGKILLs each pulumi CLI this engine runs (a child of this
// process with this engine's backend in its environment: engines in one
// test process share the CLI binary) and every process under it (its
// plugins). The Automation API starts the CLI in this process's group on
// Linux (sdk/v3 go/auto/cmd_other.go), so the tree is found through /proc.
func (e *Engine) killCLI() error {
	cli, err := filepath.EvalSymlinks(filepath.Join(e.Dir, "bin", "pulumi"))
	if err != nil {
		return err
	}
	backend := "PULUMI_BACKEND_URL=" + e.env["PULUMI_BACKEND_URL"]
	ours := func(proc string) bool {
		env, err := os.ReadFile(filepath.Join(proc, "environ"))
		return err == nil && slices.Contains(strings.Split(string(env), "\x00"), backend)
	}
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return err
	}
	children := map[int][]int{}
	var roots []int
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], pid)
		if exe, err := os.Readlink(filepath.Join(p, "exe")); err == nil && exe == cli && ppid == os.Getpid() && ours(p) {
			roots = append(roots, pid)
		}
	}
	if len(roots) == 0 {
		return errors.New("no pulumi CLI of this process runs")
	}
	var tree []int
	for queue := roots; len(queue) > 0; queue = queue[1:] {
		tree = append(tree, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	for _, pid := range tree {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill %d: %w", pid, err)
		}
	}
	return nil
}

// Cancel runs `pulumi cancel`: it removes the lock a killed CLI left on the
// stack (the file backend's lock files: pkg/v3 backend/diy/backend.go,
// CancelCurrentUpdate), which every later operation otherwise refuses.
func (s *Stack) Cancel(ctx context.Context) error {
	if err := s.Stack.Cancel(ctx); err != nil {
		return fmt.Errorf("pulumi cancel: %w", err)
	}
	return nil
}

// Destroy runs `pulumi destroy`.
func (s *Stack) Destroy(ctx context.Context, opts ...optdestroy.Option) (Result, error) {
	return s.run(ctx, "destroy", nil, func(progress *bytes.Buffer, ch chan<- events.EngineEvent) error {
		_, err := s.Stack.Destroy(ctx, append(opts, optdestroy.ProgressStreams(progress), optdestroy.EventStreams(ch))...)
		return err
	})
}

// run runs one operation, collecting its steps from the engine's event
// stream and writing its progress to Dir/logs/<n>-<what>.log.
func (s *Stack) run(ctx context.Context, what string, onStep func(Step), op func(*bytes.Buffer, chan<- events.EngineEvent) error) (Result, error) {
	var res Result
	ch := make(chan events.EngineEvent)
	// The Automation API closes ch when the CLI's event stream ends; a CLI
	// that fails before it streams (a locked stack) never opens one, so
	// ch stays open. Once the operation has returned nothing more is sent
	// (its events server has stopped), so stop ends the reader then.
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			var ev events.EngineEvent
			var ok bool
			select {
			case ev, ok = <-ch:
			case <-stop:
				return
			}
			if !ok {
				return
			}
			if ev.ResourcePreEvent == nil {
				continue
			}
			md := ev.ResourcePreEvent.Metadata
			if md.Op == apitype.OpSame || md.Op == apitype.OpRead {
				continue
			}
			st := Step{Op: md.Op, URN: md.URN, Type: md.Type, Diffs: sorted(md.Diffs)}
			res.Steps = append(res.Steps, st)
			if onStep != nil {
				onStep(st)
			}
		}
	}()
	var progress bytes.Buffer
	err := op(&progress, ch)
	close(stop)
	<-done
	res.Log = progress.String()
	s.e.mu.Lock()
	s.e.ops++
	n := s.e.ops
	s.e.mu.Unlock()
	logs := filepath.Join(s.e.Dir, "logs")
	if mkErr := os.MkdirAll(logs, 0o755); mkErr == nil {
		_ = os.WriteFile(filepath.Join(logs, fmt.Sprintf("%02d-%s.log", n, what)), progress.Bytes(), 0o644)
	}
	if err != nil {
		return res, fmt.Errorf("pulumi %s: %w", what, err)
	}
	return res, nil
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
