package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
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
		// Every call the providers made, AWS would have allowed.
		asked, evaluated := h.AWS.IAM.Stats()
		t.Logf("IAM: %d provider calls authorized, %d distinct requests evaluated", asked, evaluated)
		if d := h.AWS.IAM.Denied(); len(d) > 0 {
			t.Errorf("AWS would have denied %d provider calls; the first: %s", len(d), d[0])
		}
		if t.Failed() {
			t.Logf("--- objects\n%s", check.Describe(context.Background(), h))
			t.Logf("--- hosts no stand-in serves: %v", h.Internet.Unexpected())
			t.Logf("--- AWS: what happened in the account\n%s\nendpoint calls: %v\nstand-in errors: %v",
				strings.Join(h.Account.Log(), "\n"), h.Endpoints.Calls(), h.AWS.Errors())
			t.Logf("--- pods\n%s", h.Logs(dir))
			for name, p := range h.Flux {
				t.Logf("--- %s\n%s", name, p.Tail(30))
			}
		}
		h.Stop()
	})
	return h
}

// hubPackages are the packages the tree installs on the hub: a Provider
// per service the hub's Provider objects name (the family package comes
// as a dependency, named by Crossplane) and the three Functions.
func hubPackages() ([]string, error) {
	out := []string{"Function/function-patch-and-transform", "Function/function-auto-ready", "Function/function-workload-cluster"}
	services, err := site.ProviderServices("../../manifests/gitops-system/infrastructure")
	if err != nil {
		return nil, err
	}
	for _, svc := range services {
		if svc == "config" {
			out = append(out, "Provider/crossplane-contrib-provider-family-aws")
			continue
		}
		out = append(out, "Provider/provider-aws-"+svc)
	}
	return out, nil
}

// hubSynced waits for every Kustomization of the hub (the root and what
// it applies: those in hubKustomizations and any other the tree adds; not
// the spokes' bootstrap steps) to become Ready and every
// package the tree names to be Installed and Healthy, then checks that
// none became Ready before what its dependsOn names. The error names each
// Kustomization that is not Ready with its reason and message.
func hubSynced(ctx context.Context, h *site.Hub, timeout time.Duration) error {
	names, err := site.HubKustomizations("../../manifests")
	if err != nil {
		return err
	}
	packages, err := hubPackages()
	if err != nil {
		return err
	}
	readyAt := map[string]time.Time{}
	var ks map[string]*unstructured.Unstructured
	var missing []string
	err = kube.Poll(ctx, timeout, func() (bool, error) {
		if err := h.Exited(); err != nil {
			return false, err
		}
		var err error
		if ks, _, err = check.KustomizationStates(ctx, h); err != nil {
			return false, nil
		}
		// The hub's own: the root and what it applies (clusters/mgmt), not
		// the spokes' bootstrap steps the composition makes.
		for key, o := range ks {
			if o.GetName() != "flux-system" && o.GetLabels()["kustomize.toolkit.fluxcd.io/name"] != "flux-system" {
				delete(ks, key)
			}
		}
		missing = nil
		for _, name := range names {
			if ks["flux-system/"+name] == nil {
				missing = append(missing, "flux-system/"+name+" does not exist")
			}
		}
		// One time for the whole poll: Kustomizations first seen Ready in
		// the same poll are Ready at the same time, whatever the map order.
		polled := time.Now()
		for key, o := range ks {
			st, reason, msg := check.Condition(o, "Ready")
			if st == "True" {
				if readyAt[key].IsZero() {
					readyAt[key] = polled
				}
				continue
			}
			missing = append(missing, fmt.Sprintf("%s Ready=%s %s: %s", key, st, reason, msg))
		}
		installed, err := installedPackages(ctx, h)
		if err != nil {
			return false, nil
		}
		for _, p := range packages {
			if !installed[p] {
				missing = append(missing, p+" not Installed and Healthy")
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("hub not synced (%v):\n%s", err, strings.Join(missing, "\n"))
	}
	var order []string
	for key, o := range ks {
		deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn")
		for _, d := range deps {
			m, _ := d.(map[string]any)
			ns, _ := m["namespace"].(string)
			if ns == "" {
				ns = o.GetNamespace()
			}
			dep := ns + "/" + m["name"].(string)
			if readyAt[key].Before(readyAt[dep]) {
				order = append(order, fmt.Sprintf("%s Ready at %s, before its dependency %s (%s)", key,
					readyAt[key].Format(time.StampMilli), dep, readyAt[dep].Format(time.StampMilli)))
			}
		}
	}
	if len(order) > 0 {
		sort.Strings(order)
		return fmt.Errorf("dependsOn order not kept:\n%s", strings.Join(order, "\n"))
	}
	if u := h.Internet.Unexpected(); len(u) > 0 {
		return fmt.Errorf("requests to hosts no stand-in serves: %v", u)
	}
	return nil
}

// TestHubSyncsTheTree brings the hub up as the program does (the objects
// hub.Run creates, with its generated deploy key) and checks, on the real
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
	if err := hubSynced(ctx, h, hubSyncBound); err != nil {
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

// installedPackages are the Crossplane packages (Kind/name) whose
// Installed and Healthy conditions are True.
func installedPackages(ctx context.Context, h *site.Hub) (map[string]bool, error) {
	out := map[string]bool{}
	for _, r := range []string{"providers", "functions"} {
		l, err := h.Cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: r}).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			inst, _, _ := check.Condition(&l.Items[i], "Installed")
			healthy, _, _ := check.Condition(&l.Items[i], "Healthy")
			if inst == "True" && healthy == "True" {
				out[l.Items[i].GetKind()+"/"+l.Items[i].GetName()] = true
			}
		}
	}
	return out, nil
}
