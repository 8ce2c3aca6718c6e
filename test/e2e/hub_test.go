package e2e

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

func init() {
	// The suite's clients (and crossplane-runtime's resolver in the AWS
	// stand-in) log through controller-runtime; its messages are not the
	// suite's output.
	ctrllog.SetLogger(logr.Discard())
}

func startHub(t testing.TB, network string, prefix string, edit func(work string) error, eks ...site.EKSOptions) *site.Hub {
	t.Helper()
	return startHubWith(t, site.HubOptions{Network: network, Prefix: netip.MustParsePrefix(prefix), Edit: edit, EKS: eks})
}

// startHubWith starts a hub with opts, its directory and repository set
// here.
func startHubWith(t testing.TB, opts site.HubOptions) *site.Hub {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts.Dir, opts.RepoRoot = dir, root
	h, err := site.StartHub(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Every call the providers made, AWS would have allowed, but
		// those the planted accounts are made to draw.
		asked, evaluated := h.AWS.IAM.Stats()
		var d []string
		planted := 0
		for _, m := range h.AWS.IAM.Denied() {
			if plantedDenial(m) {
				planted++
				continue
			}
			d = append(d, m)
		}
		t.Logf("IAM: %d provider calls authorized, %d distinct requests evaluated, %d refusals of planted accounts' roles", asked, evaluated, planted)
		if len(d) > 0 {
			t.Errorf("AWS would have denied %d provider calls; the first: %s", len(d), d[0])
		}
		if t.Failed() {
			t.Logf("--- objects\n%s", check.Describe(context.Background(), h))
			t.Logf("--- hosts no stand-in serves: %v", h.Internet.Unexpected())
			for id, l := range h.Accounts {
				t.Logf("--- AWS: what happened in account %s\n%s", id, strings.Join(l.Log(), "\n"))
			}
			t.Logf("--- AWS: endpoint calls: %v\nstand-in errors: %v", h.Endpoints.Calls(), h.AWS.Errors())
			t.Logf("--- pods\n%s", h.Logs(dir))
			for name, p := range h.Flux {
				t.Logf("--- %s\n%s", name, p.Tail(30))
			}
		}
		h.Stop()
	})
	return h
}

// TestHubSyncsTheTree brings the hub up as the program does (the objects
// hub.Program creates, with its generated deploy key) and checks, on the real
// Flux, Crossplane, External Secrets and Sealed Secrets at the pinned
// releases and the AWS stand-in, that the tree syncs over SSH, the chart
// sources and releases install, Crossplane installs every provider and
// function package the tree names and reports them Installed and Healthy
// (their pods running the real functions), the sealing key reaches the
// Sealed Secrets controller through Secrets Manager, every Kustomization
// becomes Ready only after what it depends on, and the example claim
// composes (claimComposes).
func TestHubSyncsTheTree(t *testing.T) {
	// Every test of the suite runs on its own network and API servers, so
	// they run in parallel, as many at once as go test's -parallel allows
	// (GOMAXPROCS: two on the CI machine's two cores).
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	// The example spoke's EKS cluster is played by a second local cluster
	// on the hub's network, its pods in the prefix's third /20.
	h := startHub(t, "e2ehub", "10.200.0.0/16", nil, site.EKSOptions{Spoke: claimName, PodCIDR: netip.MustParsePrefix("10.200.32.1/20")})
	t.Logf("hub and Flux up in %s", time.Since(start))
	if err := check.HubSynced(ctx, h, manifests, hubSyncBound); err != nil {
		t.Fatal(err)
	}
	t.Logf("hub synced after %s", time.Since(start))
	// Flux, the operator and the API server have written to every object
	// the program made (statuses, finalizers, defaults); the engine's
	// diff of the unchanged program must still be empty.
	t.Run("a second pulumi up changes nothing", func(t *testing.T) {
		res, err := h.Stack.Up(ctx, optup.ExpectNoChanges())
		if err != nil {
			t.Fatalf("%v\nsteps: %v\n%s", err, res.Steps, res.Log)
		}
	})
	t.Run("claim composes", func(t *testing.T) { claimComposes(t, h) })
}
