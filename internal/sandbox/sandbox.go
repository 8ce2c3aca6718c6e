package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// Defaults of Config.
const (
	DefaultNetwork = "fleet-sandbox"
	defaultPrefix  = "10.240.0.0/16"
)

// DefaultPrefix is the sandbox's addresses unless --prefix says otherwise.
var DefaultPrefix = netip.MustParsePrefix(defaultPrefix)

// Config places a sandbox on this machine.
type Config struct {
	// Dir holds the sandbox's state, log and every process's files.
	Dir string
	// Network names the pod network's bridge; its namespaces are named
	// after it.
	Network string
	// Prefix is the pod network's addresses: the hub takes its first two
	// /20s, each spoke one of the next.
	Prefix netip.Prefix
}

// DefaultDir is $XDG_STATE_HOME/eks-fleet/sandbox, else
// ~/.local/state/eks-fleet/sandbox.
func DefaultDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "eks-fleet", "sandbox")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "eks-fleet-sandbox")
	}
	return filepath.Join(home, ".local", "state", "eks-fleet", "sandbox")
}

// bridgeName is what Linux accepts as an interface name that the sandbox
// also uses as its namespaces' prefix.
var bridgeName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,14}$`)

// Validate checks each field, naming it and what it accepts.
func (c Config) Validate() error {
	var errs []error
	if !filepath.IsAbs(c.Dir) {
		errs = append(errs, fmt.Errorf("--dir %q: want an absolute path", c.Dir))
	}
	if !bridgeName.MatchString(c.Network) {
		errs = append(errs, fmt.Errorf("--network %q: want a Linux interface name: a lowercase letter, then up to 14 lowercase letters, digits or '-'", c.Network))
	}
	private := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16")}
	inPrivate := false
	for _, p := range private {
		inPrivate = inPrivate || (p.Contains(c.Prefix.Addr()) && c.Prefix.Bits() >= p.Bits())
	}
	if !c.Prefix.IsValid() || !c.Prefix.Addr().Is4() || c.Prefix.Bits() != 16 || c.Prefix.Masked() != c.Prefix || !inPrivate {
		errs = append(errs, fmt.Errorf("--prefix %q: want a private IPv4 /16 (10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16), e.g. %s", c.Prefix, defaultPrefix))
	}
	return errors.Join(errs...)
}

// The sandbox's files in Dir.
func (c Config) statePath() string  { return filepath.Join(c.Dir, "state.json") }
func (c Config) socketPath() string { return filepath.Join(c.Dir, "control.sock") }
func (c Config) runDir() string     { return filepath.Join(c.Dir, "run") }

// LogPath is the background process's log: every step of Up, each spoke
// started and stopped.
func (c Config) LogPath() string { return filepath.Join(c.Dir, "sandbox.log") }

// KubeconfigPath is the hub's admin kubeconfig once the hub runs.
func (c Config) KubeconfigPath() string { return filepath.Join(c.Dir, "hub.kubeconfig") }

// CertPath is the hub's sealing certificate (`fleet cluster add --cert`).
func (c Config) CertPath() string { return filepath.Join(c.Dir, "sealing.crt") }

// KnownHostsPath is the sandbox Git server's known_hosts line (`fleet
// cluster add --known-hosts`).
func (c Config) KnownHostsPath() string { return filepath.Join(c.Dir, "known_hosts") }

// Phase is where the sandbox is.
type Phase string

// Phases.
const (
	Starting Phase = "Starting"
	Ready    Phase = "Ready"
	Failed   Phase = "Failed"
	Stopping Phase = "Stopping"
)

// State is what the background process reports (state.json, and the
// socket's /state).
type State struct {
	PID      int       `json:"pid"`
	Phase    Phase     `json:"phase"`
	Message  string    `json:"message,omitempty"`
	Network  string    `json:"network"`
	Prefix   string    `json:"prefix"`
	RepoRoot string    `json:"repoRoot"`
	Started  time.Time `json:"started"`
	// Commit is the served tree's commit.
	Commit string `json:"commit,omitempty"`
	// Spokes are the spokes whose EKS cluster runs, by name.
	Spokes []string `json:"spokes"`
	// SpokeFlux is, by spoke, each Kustomization of its own Flux:
	// "<namespace>/<name>: Ready", or ": not Ready (<message>)".
	SpokeFlux map[string][]string `json:"spokeFlux,omitempty"`
	// Account is what exists in the stand-in AWS accounts, one
	// "<kind> <name>" per resource of the hub's account, "<kind> <name>
	// (account <id>)" of a spoke account.
	Account []string `json:"account"`
}

// Preflight refuses, before anything is made, a machine or a Config the
// sandbox cannot run on: not Linux, not root, no ip or git, a sandbox
// already running in Dir, the bridge name or an address of Prefix in use.
func Preflight(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("fleet sandbox runs only on Linux (it makes a bridge and network namespaces); this is %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("fleet sandbox needs root: it makes a Linux bridge and network namespaces (run it with sudo)")
	}
	for _, tool := range []string{"ip", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("fleet sandbox needs %s on PATH (Debian: apt-get install iproute2 git): %w", tool, err)
		}
	}
	if st, err := readState(c); err == nil && binaries.ProcessRuns(st.PID) {
		return fmt.Errorf("a sandbox is already running in %s (pid %d, %s): run `fleet sandbox down` first, or pick another --dir", c.Dir, st.PID, st.Phase)
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifaces {
		if i.Name == c.Network {
			return fmt.Errorf("--network %s: a network interface of that name exists (a sandbox's left by a killed run: `fleet sandbox down --network %s` removes it; or pick another --network)", c.Network, c.Network)
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, _ := netip.AddrFromSlice(n.IP)
			ones, _ := n.Mask.Size()
			p := netip.PrefixFrom(ip.Unmap(), ones)
			if p.Overlaps(c.Prefix) {
				return fmt.Errorf("--prefix %s: the address %s on %s is inside it: pick another --prefix", c.Prefix, p, i.Name)
			}
		}
	}
	return nil
}

// Up starts the sandbox's background process with the command line argv
// (which runs Serve), shows its log on out as it goes and returns once the
// hub is synced, printing what to run next. Cancelling ctx (Ctrl-C) stops
// the process, which removes everything it made.
func Up(ctx context.Context, c Config, argv []string, out io.Writer) error {
	if err := Preflight(c); err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{c.statePath(), c.socketPath(), c.LogPath()} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	log, err := os.OpenFile(c.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own session: the sandbox outlives this command and the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	log.Close()
	if err != nil {
		return fmt.Errorf("start the sandbox: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	follow, err := os.Open(c.LogPath())
	if err != nil {
		return err
	}
	defer follow.Close()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	interrupted := false
	for {
		select {
		case err := <-exited:
			_, _ = io.Copy(out, follow)
			if interrupted {
				// As Down: nothing of the sandbox stays.
				left, rerr := kube.RemoveNetwork(c.Network)
				if rerr == nil {
					rerr = os.RemoveAll(c.Dir)
				}
				if rerr != nil || len(left) > 0 {
					return fmt.Errorf("interrupted: the sandbox stopped; removing what it left (%v): %v", left, rerr)
				}
				return fmt.Errorf("interrupted: the sandbox stopped, and nothing it made is left (%s removed)", c.Dir)
			}
			st, _ := readState(c)
			if st.Message != "" {
				return fmt.Errorf("the sandbox stopped (%v): %s (log: %s)", err, st.Message, c.LogPath())
			}
			return fmt.Errorf("the sandbox stopped (%v): see %s", err, c.LogPath())
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				fmt.Fprintln(out, "interrupted: stopping the sandbox")
				_ = cmd.Process.Signal(syscall.SIGTERM)
			}
		case <-tick.C:
		}
		if _, err := io.Copy(out, follow); err != nil {
			return err
		}
		if interrupted {
			continue
		}
		st, err := readState(c)
		if err != nil {
			continue
		}
		switch st.Phase {
		case Ready:
			_ = cmd.Process.Release()
			printNext(out, c)
			return nil
		case Failed:
			// The process removes what it made and exits.
			continue
		}
	}
}

// printNext prints the hub's kubeconfig and what a user runs next.
func printNext(out io.Writer, c Config) {
	fmt.Fprintf(out, `
The hub is synced. Its kubeconfig: %[1]s

Next:
  export KUBECONFIG=%[1]s
  fleet cluster add NAME --team TEAM --cert %[2]s --known-hosts %[3]s
  fleet sandbox push           # the checkout's manifests/ becomes the hub's next commit
  fleet status                 # each spoke from the hub's conditions
  fleet sandbox status         # the spokes' clusters and the stand-in AWS account
  fleet sandbox down           # stops everything and removes %[4]s
`, c.KubeconfigPath(), c.CertPath(), c.KnownHostsPath(), c.Dir)
}

// Push makes the checkout repoRoot's manifests/ the hub's next commit and
// returns the commit.
func Push(ctx context.Context, c Config, repoRoot string) (string, error) {
	var resp struct {
		Commit string `json:"commit"`
	}
	if err := call(ctx, c, http.MethodPost, "/push", map[string]string{"repoRoot": repoRoot}, &resp); err != nil {
		return "", err
	}
	return resp.Commit, nil
}

// Status is the running sandbox's state.
func Status(ctx context.Context, c Config) (State, error) {
	var st State
	err := call(ctx, c, http.MethodGet, "/state", nil, &st)
	return st, err
}

// Down stops the sandbox running in c.Dir (its process removes every
// process, namespace and bridge it made), removes c.Dir, and then checks
// that nothing of c.Network is left, removing what a killed sandbox left.
func Down(ctx context.Context, c Config, out io.Writer) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if st, err := readState(c); err == nil && binaries.ProcessRuns(st.PID) {
		fmt.Fprintf(out, "stopping the sandbox (pid %d)\n", st.PID)
		if err := call(ctx, c, http.MethodPost, "/stop", nil, nil); err != nil {
			// No answer: a sandbox still starting, or stuck.
			_ = syscall.Kill(st.PID, syscall.SIGTERM)
		}
		deadline := time.Now().Add(3 * time.Minute)
		for binaries.ProcessRuns(st.PID) {
			if time.Now().After(deadline) {
				fmt.Fprintf(out, "pid %d did not stop in 3 minutes: killing it\n", st.PID)
				_ = syscall.Kill(st.PID, syscall.SIGKILL)
				time.Sleep(time.Second)
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	left, err := kube.RemoveNetwork(c.Network)
	for _, l := range left {
		fmt.Fprintf(out, "removed %s (left by a killed sandbox)\n", l)
	}
	if err != nil {
		return err
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "the sandbox is down: no process, namespace or bridge of %s is left, %s is removed\n", c.Network, c.Dir)
	return nil
}

// readState reads state.json.
func readState(c Config) (State, error) {
	var st State
	b, err := os.ReadFile(c.statePath())
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// call sends a request to the sandbox's socket and decodes the answer.
func call(ctx context.Context, c Config, method, path string, body, into any) error {
	if _, err := os.Stat(c.socketPath()); err != nil {
		return fmt.Errorf("no sandbox runs in %s (start one with `fleet sandbox up`)", c.Dir)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", c.socketPath())
	}}}
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://sandbox"+path, r)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("the sandbox in %s does not answer: %w", c.Dir, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s", strings.TrimSpace(string(b)))
	}
	if into == nil {
		return nil
	}
	return json.Unmarshal(b, into)
}
