package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
)

// manifests is the repository's tree the hubs sync, from this package.
const manifests = "../../manifests"

// TestMain runs kubectl when the test binary is started under that name:
// the commands `fleet cluster break-glass` prints are run by a shell with
// a kubectl on its PATH that is this binary (kubectlOnPath), so they run
// through kubectl's own code at the release go.mod pins, as an operator
// runs them (the module proxy serves no kubectl binary).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "kubectl" {
		if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The suite makes a bridge and network namespaces: without root it
	// cannot run. A developer's `go test ./...` says so in one line and
	// runs nothing here; CI (.ci/run) sets RequiredEnv, so there it fails.
	if os.Geteuid() != 0 {
		if os.Getenv(RequiredEnv) != "" {
			fmt.Fprintf(os.Stderr, "test/e2e: the real-controller suite needs root (a bridge and network namespaces), and %s is set: it may not be skipped\n", RequiredEnv)
			os.Exit(1)
		}
		fmt.Printf("test/e2e: skipped: the real-controller suite needs root (a bridge and network namespaces); run `go test ./test/e2e` as root (.ci/run requires it: %s)\n", RequiredEnv)
		os.Exit(0)
	}
	// Every upstream program the suite runs, built side by side before the
	// first test (a no-op when cached): one at a time, a cold run left a
	// third of CI's two cores idle for over 20 minutes.
	if err := site.BuildTools(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "build the upstream programs the suite runs:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// RequiredEnv, set to anything, makes the suite fail instead of skipping
// when it cannot run (not root).
const RequiredEnv = "EKS_FLEET_E2E_REQUIRED"

// kubectlOnPath returns a directory holding kubectl, a link to this test
// binary (TestMain).
func kubectlOnPath(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	return dir
}
