package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
)

// The sandbox's place in this suite: its own bridge and addresses, beside
// the other hubs.
const (
	sandboxNetwork = "e2esandbox"
	sandboxPrefix  = "10.207.0.0/16"
	sandboxSpoke   = "team-b-dev"
)

// fleetCLI runs the fleet binary in a checkout as a user does.
type fleetCLI struct {
	bin, checkout, dir string
}

// run runs fleet with args (the sandbox's flags added to sandbox
// commands) and returns its exit code and combined output.
func (f fleetCLI) run(t *testing.T, ctx context.Context, args ...string) (int, string) {
	t.Helper()
	if args[0] == "sandbox" && len(args) > 1 {
		args = append(args, "--dir", f.dir, "--network", sandboxNetwork, "--prefix", sandboxPrefix)
	}
	ctx, cancel := context.WithTimeout(ctx, sandboxCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.bin, args...)
	cmd.Dir = f.checkout
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("fleet %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return code, out.String()
}

// must runs fleet and fails the test unless it exits 0.
func (f fleetCLI) must(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	code, out := f.run(t, ctx, args...)
	if code != 0 {
		t.Fatalf("fleet %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// TestSandbox runs `fleet sandbox` as a newcomer does, with the fleet binary
// built from this repository, in a checkout of it: bad flags and a tree
// that fails validation are refused before anything is made; `up`, run as
// the README runs it (`go run ./scripts/fleet sandbox up`), brings
// the hub up and returns once it is synced, the payments team's account
// prepared from the checkout's spoke-account stack; a second `up` is
// refused; `cluster add --account` + `sandbox push` bring a spoke in that
// account to its own Flux Ready, everything of it made there;
// `fleet status` shows it Ready from the hub's conditions; `cluster
// remove` + `push` tear it down to nothing in the stand-in account; `down`
// leaves no process, network namespace, bridge or directory behind.
func TestSandbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	work := t.TempDir()
	f := fleetCLI{bin: filepath.Join(work, "fleet"), checkout: filepath.Join(work, "checkout"), dir: filepath.Join(work, "sandbox")}
	build := exec.Command("go", "build", "-o", f.bin, "./scripts/fleet")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./scripts/fleet: %v\n%s", err, out)
	}
	// A checkout of this repository: every file Git tracks, as it is in
	// the work tree.
	files, err := exec.Command("git", "-C", "../..", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, p := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if err := copyFile(filepath.Join("../..", p), filepath.Join(f.checkout, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		// Whatever happened, nothing of the sandbox stays on the machine.
		if _, err := os.Stat(f.dir); err == nil {
			code, out := f.run(t, ctx, "sandbox", "down")
			t.Logf("fleet sandbox down (cleanup): exit %d\n%s", code, out)
		}
	})
	// The example claim's deploy key is sealed for another hub: the
	// checkout starts without it, as a team's new fleet does.
	f.must(t, ctx, "cluster", "remove", claimName)

	t.Run("bad input is refused before anything is made", func(t *testing.T) {
		for name, tc := range map[string]struct {
			reason string
			args   []string
			want   string
		}{
			"prefix":  {reason: "the hub and spokes take /20s of a /16", args: []string{"sandbox", "up", "--dir", f.dir, "--network", sandboxNetwork, "--prefix", "10.207.0.0/24"}, want: "--prefix \"10.207.0.0/24\": want a private IPv4 /16"},
			"public":  {reason: "the sandbox's addresses stay private", args: []string{"sandbox", "up", "--dir", f.dir, "--network", sandboxNetwork, "--prefix", "8.8.0.0/16"}, want: "--prefix \"8.8.0.0/16\""},
			"network": {reason: "a bridge name is a Linux interface name", args: []string{"sandbox", "up", "--dir", f.dir, "--network", "Not A Bridge", "--prefix", sandboxPrefix}, want: "--network \"Not A Bridge\": want a Linux interface name"},
		} {
			cmd := exec.Command(f.bin, tc.args...)
			cmd.Dir = f.checkout
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("%s: %s\nfleet %s: %v\n%s\nwant an error containing %q", name, tc.reason, strings.Join(tc.args, " "), err, out, tc.want)
			}
		}
		// A tree that fails validation: its findings are shown, nothing
		// starts.
		broken := filepath.Join(work, "broken")
		if err := os.CopyFS(broken, os.DirFS(f.checkout)); err != nil {
			t.Fatal(err)
		}
		claims := filepath.Join(broken, "manifests", "gitops-system", "workload-clusters", "kustomization.yaml")
		b, err := os.ReadFile(claims)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(claims, append(b, []byte("  - missing-claim.yaml\n")...), 0o644); err != nil {
			t.Fatal(err)
		}
		g := f
		g.checkout = broken
		code, out := g.run(t, ctx, "sandbox", "up")
		if code != 1 || !strings.Contains(out, "missing-claim.yaml") || !strings.Contains(out, "nothing was started or pushed") {
			t.Errorf("up on a tree that fails validation: exit %d, want 1 with the finding and nothing started:\n%s", code, out)
		}
		if _, err := os.Stat(f.dir); err == nil {
			t.Errorf("up on a tree that fails validation made %s", f.dir)
		}
	})

	t.Run("Ctrl-C during up stops the sandbox and leaves nothing", func(t *testing.T) {
		up := exec.Command(f.bin, "sandbox", "up", "--dir", f.dir, "--network", sandboxNetwork, "--prefix", sandboxPrefix)
		up.Dir = f.checkout
		var out bytes.Buffer
		up.Stdout, up.Stderr = &out, &out
		if err := up.Start(); err != nil {
			t.Fatal(err)
		}
		// Interrupted while the hub's processes start: the bridge, etcd
		// and the API server exist by then.
		err := kube.Poll(ctx, sandboxInterruptWithin, func() (bool, error) {
			left, err := kube.NetworkLeftovers(sandboxNetwork)
			return len(left) > 0 && len(processesUnder(f.dir)) > 2, err
		})
		if err != nil {
			_ = up.Process.Kill()
			t.Fatalf("the sandbox made no bridge and started no process within %s (%v):\n%s", sandboxInterruptWithin, err, out.String())
		}
		if err := up.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err = up.Wait()
		if err == nil || !strings.Contains(out.String(), "interrupted: the sandbox stopped, and nothing it made is left") {
			t.Errorf("up after Ctrl-C: %v, want a failure saying the sandbox stopped and nothing is left:\n%s", err, out.String())
		}
		left, err := kube.NetworkLeftovers(sandboxNetwork)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			t.Errorf("left after Ctrl-C: %v", left)
		}
		if procs := processesUnder(f.dir); len(procs) > 0 {
			t.Errorf("processes of the sandbox still run after Ctrl-C:\n%s", strings.Join(procs, "\n"))
		}
		if _, err := os.Stat(f.dir); err == nil {
			t.Errorf("Ctrl-C left %s", f.dir)
		}
	})
	if t.Failed() {
		return
	}

	start := time.Now()
	upCtx, cancel := context.WithTimeout(ctx, sandboxUpTimeout)
	defer cancel()
	// The README's form, `go run ./scripts/fleet sandbox up`: go run
	// removes its binary once up returns, and the sandbox's process, started
	// from that binary, must keep running (the checkout's tree named, as go
	// run runs in this repository; the build is the one above, cached).
	up := exec.CommandContext(upCtx, "go", "run", "./scripts/fleet", "--tree", filepath.Join(f.checkout, "manifests"),
		"sandbox", "up", "--dir", f.dir, "--network", sandboxNetwork, "--prefix", sandboxPrefix)
	up.Dir = "../.."
	out, err := up.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./scripts/fleet sandbox up: %v\n%s", err, out)
	}
	t.Logf("fleet sandbox up: hub synced in %s\n%s", time.Since(start).Round(time.Second), out)
	kustomizations, err := site.HubKustomizations(manifests)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append(kustomizations, "flux-system") {
		if !strings.Contains(string(out), "Ready  flux-system/"+k+"\n") {
			t.Errorf("up did not report flux-system/%s Ready", k)
		}
	}
	for _, p := range []string{filepath.Join(f.dir, "hub.kubeconfig"), filepath.Join(f.dir, "sealing.crt"), filepath.Join(f.dir, "known_hosts")} {
		if !strings.Contains(string(out), p) {
			t.Errorf("up's next steps do not name %s", p)
		}
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		return
	}
	if code, out := f.run(t, ctx, "sandbox", "up"); code == 0 || !strings.Contains(out, "a sandbox is already running in "+f.dir) {
		t.Errorf("a second up: exit %d, want it refused as already running:\n%s", code, out)
	}

	// The spoke goes to the payments team's own account, which up
	// prepared from the checkout's Pulumi.acct-payments.yaml.
	if !strings.Contains(string(out), "spoke account "+clusterinfo.ExampleSpokeAccount+": prepared as Pulumi.acct-payments.yaml makes it") {
		t.Errorf("up did not say it prepared the payments account:\n%s", out)
	}
	f.must(t, ctx, "cluster", "add", sandboxSpoke, "--team", "payments", "--region", "eu-west-1", "--account", clusterinfo.ExampleSpokeAccount,
		"--cert", filepath.Join(f.dir, "sealing.crt"), "--known-hosts", filepath.Join(f.dir, "known_hosts"))
	pushed := time.Now()
	t.Log(f.must(t, ctx, "sandbox", "push"))
	want, err := spokeOwnKustomizations()
	if err != nil {
		t.Fatal(err)
	}
	status := f.waitStatus(t, ctx, sandboxSpokeTimeout, func(st string) bool {
		for _, k := range want {
			if !strings.Contains(st, "flux-system/"+k+": Ready\n") {
				return false
			}
		}
		return strings.Contains(st, sandboxSpoke+": its own Flux: ") && !strings.Contains(st, "not Ready")
	})
	t.Logf("push to the spoke's own Flux Ready: %s\n%s", time.Since(pushed).Round(time.Second), status)
	// Everything of the spoke is in its account, nothing in the hub's.
	inAccount := regexp.MustCompile(`\(account ` + clusterinfo.ExampleSpokeAccount + `\)$`)
	n := 0
	for _, l := range strings.Split(status, "\n") {
		if strings.HasPrefix(l, "  ") && strings.Contains(l, ".aws.upbound.io/") {
			n++
			if !inAccount.MatchString(strings.TrimSpace(l)) {
				t.Errorf("sandbox status lists a resource outside the spoke's account %s: %s", clusterinfo.ExampleSpokeAccount, strings.TrimSpace(l))
			}
		}
	}
	if n == 0 {
		t.Errorf("sandbox status lists no resource of the spoke:\n%s", status)
	}
	// The hub sees it too: `fleet status` from the claim's and the
	// bootstrap's conditions, all Ready (exit 0).
	var hub string
	err = kube.Poll(ctx, sandboxSpokeTimeout, func() (bool, error) {
		var code int
		code, hub = f.run(t, ctx, "status", "--kubeconfig", filepath.Join(f.dir, "hub.kubeconfig"))
		return code == 0, nil
	})
	if err != nil || !regexp.MustCompile(`(?m)^`+sandboxSpoke+`\s+True\s+True\s`).MatchString(hub) {
		t.Fatalf("fleet status does not show %s Ready and Synced (%v):\n%s", sandboxSpoke, err, hub)
	}
	t.Logf("push to fleet status all Ready: %s\n%s", time.Since(pushed).Round(time.Second), hub)
	// It read the hub's kustomize-controller workers from the Deployment
	// the FluxInstance made (the hub stack's fluxConcurrency), enough for
	// one spoke and the hub's own Kustomizations.
	if strings.Contains(hub, "workers not read") || strings.Contains(hub, "warning:") {
		t.Errorf("fleet status on the sandbox's hub warns about kustomize-controller's workers:\n%s", hub)
	}

	f.must(t, ctx, "cluster", "remove", sandboxSpoke)
	removed := time.Now()
	f.must(t, ctx, "sandbox", "push")
	status = f.waitStatus(t, ctx, sandboxTeardownTimeout, func(st string) bool {
		return regexp.MustCompile(`(?m)^spokes' clusters\s+none$`).MatchString(st) && regexp.MustCompile(`(?m)^stand-in AWS account\s+0 resources$`).MatchString(st)
	})
	t.Logf("push of the removal to nothing left in the stand-in account: %s\n%s", time.Since(removed).Round(time.Second), status)

	down := f.must(t, ctx, "sandbox", "down")
	t.Log(down)
	left, err := kube.NetworkLeftovers(sandboxNetwork)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
	if _, err := os.Stat(f.dir); err == nil {
		t.Errorf("down left %s", f.dir)
	}
	if procs := processesUnder(f.dir); len(procs) > 0 {
		t.Errorf("processes of the sandbox still run after down:\n%s", strings.Join(procs, "\n"))
	}
}

// waitStatus polls `fleet sandbox status` until done accepts its output,
// and returns that output; the test fails with the last one at timeout.
func (f fleetCLI) waitStatus(t *testing.T, ctx context.Context, timeout time.Duration, done func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		_, last = f.run(t, ctx, "sandbox", "status")
		if done(last) {
			return last
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(f.dir, "sandbox.log"))
			t.Fatalf("not there after %s; last status:\n%s\nthe sandbox's log:\n%s", timeout, last, log)
		}
		time.Sleep(sandboxStatusPollPeriod)
	}
}

// spokeOwnKustomizations are the Kustomizations a spoke's own Flux runs
// from the tree: its root (spoke-bootstrap/sync) and what spoke-tools
// holds.
func spokeOwnKustomizations() ([]string, error) {
	var out []string
	for _, dir := range []string{filepath.Join(manifests, "gitops-system", "spoke-bootstrap", "sync"), filepath.Join(manifests, "gitops-system", "spoke-tools")} {
		names, err := site.FluxKustomizations(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	if !slices.Contains(out, "spoke-tools") {
		return nil, fmt.Errorf("spoke-bootstrap/sync builds no spoke-tools Kustomization: %v", out)
	}
	return out, nil
}

// processesUnder are the command lines of running processes that name dir.
func processesUnder(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, dir) {
			out = append(out, e.Name()+": "+cmd)
		}
	}
	return out
}

// copyFile copies a regular file with its mode, making dst's directory.
func copyFile(src, dst string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, info.Mode().Perm())
}
