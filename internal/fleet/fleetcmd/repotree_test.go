package fleetcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// TestRepoTree runs fleet on a copy of the repository's own manifests/
// (and its hub stack file, for known_hosts): the committed tree meets the
// fleet policy, and a cluster added to it with the defaults does too. The
// offline proof is a fake here; test/ runs the real one.
func TestRepoTree(t *testing.T) {
	repo := t.TempDir()
	root := filepath.Join(repo, "manifests")
	if err := treeedit.CopyTree(filepath.Join("..", "..", "..", "manifests"), root); err != nil {
		t.Fatal(err)
	}
	stack, err := os.ReadFile(filepath.Join("..", "..", "..", "Pulumi.mgmt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "Pulumi.mgmt.yaml"), stack, 0o644); err != nil {
		t.Fatal(err)
	}
	_, cert := testCert(t, root, time.Now().Add(time.Hour))
	f := &fixture{t: t, root: root}
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"validate"}, "PASS"},
		{[]string{"cluster", "add", "team-b-dev", "--cert", cert}, "wrote " + fleettree.DeployKeyRel("team-b-dev")},
		{[]string{"validate"}, "PASS"},
		{[]string{"cluster", "upgrade", "team-b-dev", "--version", "1.36"}, "1.35 -> 1.36"},
		{[]string{"app", "add", "payment-app", "--cluster", "team-b-dev", "--repo", "self", "--path", "./manifests/apps/payment-app/overlays/staging", "--team", "payments"}, "app payment-app on cluster team-b-dev"},
		{[]string{"render", "team-b-dev"}, "kind: VPC"},
		{[]string{"cluster", "remove", "team-b-dev"}, "removed"},
		{[]string{"validate"}, "PASS"},
	}
	for _, s := range steps {
		r := f.run(testDeps(), s.args...)
		if r.code != 0 || !strings.Contains(r.stdout, s.want) {
			t.Fatalf("fleet %v: exit %d, output lacks %q\n%s%s", s.args, r.code, s.want, r.stdout, r.stderr)
		}
	}
}
