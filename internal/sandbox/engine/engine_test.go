package engine

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKillCLIKillsOnlyItsEngine: engines in one test process run the same
// CLI binary; killing one engine's CLI (UpKilled) must leave another's
// running (two hubs' `pulumi up` run side by side in the suite).
func TestKillCLIKillsOnlyItsEngine(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	start := func(dir string) (*Engine, *exec.Cmd) {
		t.Helper()
		e := &Engine{Dir: dir, env: map[string]string{"PULUMI_BACKEND_URL": "file://" + filepath.Join(dir, "state")}}
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		// The engine's CLI is the sleep binary here.
		if err := os.Symlink(sleep, filepath.Join(dir, "bin", "pulumi")); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sleep, "60")
		cmd.Env = append(os.Environ(), "PULUMI_BACKEND_URL="+e.env["PULUMI_BACKEND_URL"])
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// cmd.Start returns once the kernel has begun the exec, which sets
		// the new environment a little later (fs/binfmt_elf.c,
		// create_elf_tables): until then /proc/<pid>/environ is empty. A
		// CLI the suite kills has long been running; wait until this one
		// is as well.
		environ := fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(environ); err == nil && bytes.Contains(b, []byte(e.env["PULUMI_BACKEND_URL"])) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never held the engine's backend", environ)
			}
		}
		return e, cmd
	}
	one, oneCmd := start(filepath.Join(t.TempDir(), "one"))
	_, twoCmd := start(filepath.Join(t.TempDir(), "two"))
	if err := one.killCLI(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- oneCmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the engine's own CLI still runs after killCLI")
	}
	time.Sleep(200 * time.Millisecond)
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", twoCmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state: Z once killed (not yet waited for).
	if state := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[0]; state == "Z" {
		t.Error("the other engine's CLI was killed too")
	}
}
