package kube

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one local process of the environment, logging to a file.
type Proc struct {
	Name    string
	Bin     string
	Args    []string
	Env     []string // added to the environment of the test process
	Dir     string
	LogPath string
	// Wrap, when set, is prepended to the command line (for example
	// unshare, to give the process its own mount namespace).
	Wrap []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	stopped bool
}

// Start starts the process; the process is stopped when the test process
// dies (Pdeathsig).
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.exited() {
		return fmt.Errorf("%s: already running", p.Name)
	}
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "=== %s start %s: %s %s\n", time.Now().Format(time.RFC3339), p.Name, p.Bin, strings.Join(p.Args, " "))
	argv := append(append([]string{}, p.Wrap...), p.Bin)
	argv = append(argv, p.Args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	p.cmd, p.done, p.stopped = cmd, make(chan struct{}), false
	done := p.done
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(log, "=== %s exit %s: %v\n", time.Now().Format(time.RFC3339), p.Name, err)
		log.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func (p *Proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Running reports whether the process is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.exited()
}

// PID is the running process's ID, 0 when it does not run; a restarted
// process has a new one.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill kills the process group with SIGKILL, as the OOM killer or a
// node's crash ends a container: the process exits on its own (Exited
// reports it), so a PodRunner restarts it under the pod's restartPolicy.
func (p *Proc) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil || p.exited() {
		return fmt.Errorf("%s: not running", p.Name)
	}
	return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// Exited returns the process's exit error once it has exited on its own
// (not through Stop), and false while it runs.
func (p *Proc) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || !p.exited() || p.stopped {
		return false, nil
	}
	return true, p.err
}

// Stop terminates the process group (SIGTERM, then SIGKILL after grace)
// and waits for it.
func (p *Proc) Stop(grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.stopped = true
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Tail returns the last n lines of the process's log.
func (p *Proc) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// NewProc makes a Proc logging to dir/<name>.log.
func NewProc(dir, name, bin string, args ...string) *Proc {
	return &Proc{Name: name, Bin: bin, Args: args, Dir: dir, LogPath: filepath.Join(dir, name+".log")}
}
