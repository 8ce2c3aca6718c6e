package fleetcmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
)

// preparingProver is a fakeProver whose first proof needs programs built:
// it records when it was prepared and proved.
type preparingProver struct {
	fakeProver
	err  error
	seen *[]string
}

func (p *preparingProver) Prepare(_ context.Context, logf func(format string, args ...any)) error {
	*p.seen = append(*p.seen, "prepare")
	logf("  build %s", "crossplane-render-server")
	return p.err
}

func (p *preparingProver) Prove(ctx context.Context, req fleetvalidate.ProofRequest) (*fleetvalidate.ProofReport, error) {
	*p.seen = append(*p.seen, "prove")
	return p.fakeProver.Prove(ctx, req)
}

// TestSandboxCheckoutPreparesTheProof: the sandbox's check of the tree
// first builds what the proof runs, showing it, so that a cold first check
// is not minutes of silence; a failed build stops it before the proof.
func TestSandboxCheckoutPreparesTheProof(t *testing.T) {
	cases := map[string]struct {
		reason   string
		err      error
		wantSeen []string
		wantErr  string
	}{
		"prepared, then proved": {
			reason:   "the programs are built, with their progress on stdout, before the proof runs",
			wantSeen: []string{"prepare", "prove"},
		},
		"a build fails": {
			reason:   "nothing is proved, and the build's error is returned",
			err:      errors.New("build crossplane-render-server: exit status 1"),
			wantSeen: []string{"prepare"},
			wantErr:  "build crossplane-render-server",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			mgmt, err := os.ReadFile(filepath.Join("..", "..", "..", "Pulumi.mgmt.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(filepath.Dir(f.root), "Pulumi.mgmt.yaml"), mgmt, 0o644); err != nil {
				t.Fatal(err)
			}
			var seen []string
			var out bytes.Buffer
			d := testDeps()
			d.Prover = &preparingProver{err: tc.err, seen: &seen}
			a := &app{stdout: &out, stderr: &out, deps: d}
			a.g.tree = f.root
			_, err = a.sandboxCheckout(context.Background())
			if tc.wantErr == "" && err != nil {
				t.Fatalf("%s: %v\n%s", tc.reason, err, out.String())
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("%s: error %v, want one naming %q", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantSeen, seen); diff != "" {
				t.Errorf("%s: calls (-want +got):\n%s", tc.reason, diff)
			}
			if !strings.Contains(out.String(), "checking ") || !strings.Contains(out.String(), "  build crossplane-render-server\n") {
				t.Errorf("%s: stdout does not show the check and the build:\n%s", tc.reason, out.String())
			}
		})
	}
}
