package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/engine"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// breakGlass runs what `fleet cluster break-glass <spoke>` prints, as its
// help says (`| sh`), with kubectl against the hub.
func breakGlass(t *testing.T, h *site.Hub, spoke string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := fleetcmd.Run(context.Background(), []string{"cluster", "break-glass", spoke}, &out, &errOut); code != 0 {
		t.Fatalf("fleet cluster break-glass %s: exit %d: %s", spoke, code, errOut.String())
	}
	// As `| sh` runs them: a command that fails does not stop the rest
	// (a release the spoke's bootstrap never reached does not exist).
	sh := exec.Command("sh")
	sh.Stdin = bytes.NewReader(out.Bytes())
	sh.Env = append(os.Environ(), "PATH="+kubectlOnPath(t)+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+h.Cluster.Kubeconfig)
	b, err := sh.CombinedOutput()
	t.Logf("break glass for %s:\n%s%s", spoke, out.String(), b)
	if err != nil {
		t.Fatalf("break glass for %s: %v", spoke, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Error") && !strings.Contains(l, "NotFound") && !strings.Contains(l, "not found") {
			t.Errorf("break glass for %s: %s", spoke, l)
		}
	}
	// What exists of the spoke's hub-side releases is suspended.
	for _, rel := range compose.BreakGlassReleases() {
		o, err := h.Cluster.Dynamic.Resource(check.HelmReleases).Namespace(compose.BootstrapNamespace).Get(context.Background(), compose.BootstrapName(spoke, rel), metav1.GetOptions{})
		if err != nil {
			continue
		}
		if s, _, _ := unstructured.NestedBool(o.Object, "spec", "suspend"); !s {
			t.Errorf("after break glass, HelmRelease %s is not suspended", o.GetName())
		}
	}
}

// rootKustomization is the root Kustomization the program creates (the
// one Kustomization among its objects).
func rootKustomization(t *testing.T, h *site.Hub) *unstructured.Unstructured {
	t.Helper()
	var out *unstructured.Unstructured
	for _, o := range h.Bootstrap.Objects {
		if o.GetKind() == "Kustomization" {
			if out != nil {
				t.Fatalf("the program creates two Kustomizations: %s and %s", out.GetName(), o.GetName())
			}
			out = o
		}
	}
	if out == nil {
		t.Fatal("the program creates no root Kustomization")
	}
	return out
}

// hubReleases are the HelmReleases on the hub that are not a spoke's
// (a spoke's bootstrap releases start with the claim's name).
func hubReleases(ctx context.Context, t *testing.T, h *site.Hub, spokes []string) []string {
	t.Helper()
	l, err := h.Cluster.Dynamic.Resource(check.HelmReleases).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
next:
	for _, o := range l.Items {
		for _, s := range spokes {
			if strings.HasPrefix(o.GetName(), s+"-") {
				continue next
			}
		}
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

// destroy runs `pulumi destroy` of the hub's Kubernetes half through the
// real engine, with spokes still composed (every claim on the hub), and
// follows it. The engine deletes the root Kustomization first and waits for
// it to be gone (pulumi-kubernetes provider/pkg/await/await.go, Deletion);
// the root goes only after every claim is gone and the account holds
// nothing any claim composed. Otherwise the AWS half would go on to delete
// the hub's roles and nodes under a spoke still being torn down, and its
// resources would be left in the account. Then the engine deletes the rest,
// and nothing the program made is left; Crossplane and its packages still
// run for the AWS half to remove with the nodes, since the infrastructure
// Kustomizations orphan what they applied.
//
// glass, if not empty, is a claim whose spoke's API server the suite has
// stopped after its bootstrap installed the hub-side releases onto it and
// its workloads ran (spokeWorkloadsRun): the account may then keep exactly
// what that spoke's apps made, which break glass abandons. Once its
// deletion begins, what `fleet cluster break-glass` prints is run (as
// `| sh`, with kubectl), its pruning steps must go without the spoke, and
// none of its hub-side steps may then wait out its timeout for an
// uninstall that cannot happen.
func destroy(t *testing.T, h *site.Hub, glass string) {
	ctx := context.Background()
	l, err := h.Cluster.Dynamic.Resource(check.Claims).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var spokes []string
	for _, c := range l.Items {
		spokes = append(spokes, c.GetName())
	}
	if len(spokes) == 0 || len(allResources(h)) == 0 {
		t.Fatalf("nothing to tear down: claims %v, %d resources in the accounts", spokes, len(allResources(h)))
	}
	if len(hubReleases(ctx, t, h, spokes)) == 0 {
		t.Fatal("the hub has no HelmRelease before the teardown")
	}
	packages, err := check.InstalledPackages(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	root := rootKustomization(t, h)
	if glass != "" && !slices.Contains(spokes, glass) {
		t.Fatalf("no claim %s to break glass for: %v", glass, spokes)
	}
	// The glass claim's steps followed from their delete being admitted
	// to gone: its hub-side steps (those that install a release onto the
	// spoke; a wait on the spoke would last the step's timeout), and its
	// remote steps that prune on the spoke at deletion, with what they
	// applied there (without break glass their finalizers would retry
	// against the stopped API server for good). And the apps' AWS
	// resources its own Crossplane made, which break glass abandons (as
	// its help says): nothing can delete them once the spoke is gone.
	steps := map[string]*stepDeletion{}
	var waited []string
	abandoned := map[string]bool{}
	if glass != "" {
		for _, st := range compose.BootstrapSteps() {
			if st.Release != "" {
				steps[compose.BootstrapName(glass, st.Part)] = &stepDeletion{}
			}
		}
		for _, part := range compose.BreakGlassParts() {
			name := compose.BootstrapName(glass, part)
			o, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			steps[name] = &stepDeletion{objects: check.InventorySize(o)}
			if steps[name].objects == 0 {
				t.Fatalf("%s applied nothing on the spoke: its finalizer would not need the spoke, and break glass would skip nothing", name)
			}
		}
		env, err := h.HubEnv()
		if err != nil {
			t.Fatal(err)
		}
		data, roles := spokeiam.AppDataPrefix(env, glass), spokeiam.AppRolePrefix(env, glass)
		for _, r := range allResources(h) {
			if !strings.HasPrefix(r.Owner, exampleApp) {
				continue
			}
			abandoned[check.LedgerLine(r)] = true
			// The spoke's own Crossplane made them in its account.
			if e := h.Spokes()[glass]; e != nil && r.Account != e.Account {
				t.Errorf("%s of %s's apps is in account %s, not the spoke's %s", check.LedgerLine(r), glass, r.Account, e.Account)
			}
			// The README tells the operator to look for them by name
			// (an inline role policy is found in its role).
			role, _ := r.Attrs["role"].(string)
			if names := r.ARN + " " + r.ID + " " + role; !strings.Contains(names, data) && !strings.Contains(names, roles) {
				t.Errorf("%s %s (%s) of %s's apps is named under neither %s* nor %s*, the names the README's break glass says to look for",
					r.Kind, r.ID, r.ARN, glass, data, roles)
			}
		}
		if len(abandoned) == 0 {
			t.Fatalf("the account holds nothing of %s's apps before the teardown", glass)
		}
	}
	var brokeAt time.Time
	start := time.Now()
	// `pulumi destroy` through the real engine: it deletes the root
	// Kustomization first (nothing the program makes depends on it, and it
	// depends on everything) and waits for it to be gone before the rest.
	type destroyed struct {
		res engine.Result
		err error
		at  time.Time
	}
	done := make(chan destroyed, 1)
	go func() {
		res, err := h.Destroy(ctx)
		done <- destroyed{res, err, time.Now()}
	}()
	var events []string
	seen := map[string]bool{}
	mark := func(what string) {
		if !seen[what] {
			seen[what] = true
			events = append(events, fmt.Sprintf("%s after %s", what, time.Since(start).Truncate(time.Second)))
		}
	}
	var left, spokeLeft []string
	var rootGone time.Time
	var claimsLeft []string
	broken := false
	err = kube.Poll(ctx, destroyBound, func() (bool, error) {
		// pulumi destroy may not end while the root is there: its first
		// step waits for it to be gone.
		select {
		case d := <-done:
			done <- d
			if _, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(root.GetNamespace()).Get(ctx, root.GetName(), metav1.GetOptions{}); err == nil {
				return false, fmt.Errorf("pulumi destroy ended with the root Kustomization still there (error: %v), its steps: %v", d.err, d.res.Steps)
			}
		default:
		}
		// Nothing restarts an exited Flux controller: no teardown without it.
		if err := h.Exited(); err != nil {
			return false, err
		}
		l, err := h.Cluster.Dynamic.Resource(check.Claims).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		claimsLeft = nil
		for _, c := range l.Items {
			claimsLeft = append(claimsLeft, c.GetName())
			if c.GetDeletionTimestamp() != nil {
				mark("claim " + c.GetName() + "'s delete admitted")
			}
			// An operator sees this spoke's teardown wait on a cluster
			// that cannot be reached, and breaks glass.
			if glass != "" && c.GetName() == glass && c.GetDeletionTimestamp() != nil && !broken {
				mark("claim " + glass + " deleted; break glass for it")
				breakGlass(t, h, glass)
				broken, brokeAt = true, time.Now()
				mark("break glass for " + glass + " run")
			}
		}
		for _, s := range spokes {
			if !strings.Contains(" "+strings.Join(claimsLeft, " ")+" ", " "+s+" ") {
				mark("claim " + s + " gone")
			}
		}
		// The glass claim's steps: from the delete admitted to gone.
		for name, st := range steps {
			if st.gone {
				continue
			}
			o, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				st.gone = true
				took := time.Since(st.admitted).Truncate(time.Second)
				in := ""
				if !st.admitted.IsZero() {
					in = " in " + took.String()
				}
				switch {
				case st.objects > 0:
					mark(fmt.Sprintf("%s (%d objects applied on the unreachable spoke) deleted%s, %s after break glass", name, st.objects,
						in, time.Since(brokeAt).Truncate(time.Second)))
				case !st.admitted.IsZero():
					mark(fmt.Sprintf("%s deleted%s", name, in))
					if took >= st.timeout-10*time.Second {
						waited = append(waited, fmt.Sprintf("%s took %s to delete (timeout %s)", name, took, st.timeout))
					}
				}
			case err == nil && o.GetDeletionTimestamp() != nil && st.admitted.IsZero():
				st.admitted = time.Now()
				d, _, _ := unstructured.NestedString(o.Object, "spec", "timeout")
				st.timeout, _ = time.ParseDuration(d)
			}
			if !st.gone && st.objects > 0 && broken && time.Since(brokeAt) > pruneAfterBreakGlass {
				return false, fmt.Errorf("%s (%d objects applied on the unreachable spoke) is still there %s after break glass: its finalizer prunes through the spoke unless break glass suspends it",
					name, st.objects, pruneAfterBreakGlass)
			}
		}
		left = nil
		for _, r := range allResources(h) {
			if l := check.LedgerLine(r); !abandoned[l] {
				left = append(left, l)
			}
		}
		if len(left) == 0 {
			mark("the account empty but for the abandoned apps' resources")
		}
		o, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(root.GetNamespace()).Get(ctx, root.GetName(), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			if err == nil && o.GetDeletionTimestamp() != nil {
				mark("the root Kustomization's delete admitted")
			}
			return false, nil
		}
		mark("the root Kustomization gone")
		if rootGone.IsZero() {
			rootGone = time.Now()
		}
		// Nothing of a spoke is left on the hub at that moment, before
		// pulumi destroy goes on to Flux's CRDs: no HelmRelease that
		// installed onto it and no HelmChart of one (a suspended release
		// leaves its chart; break glass deletes it).
		spokeLeft = spokeObjectsLeft(ctx, h, spokes)
		if len(claimsLeft) > 0 || len(left) > 0 {
			return false, fmt.Errorf("the root Kustomization is gone, Pulumi would now delete the hub, while claims %v and %d resources remain in the account:\n%s",
				claimsLeft, len(left), strings.Join(left, "\n"))
		}
		return true, nil
	})
	if err != nil {
		// What says where the teardown stopped comes first (a CI log keeps
		// a failure's first lines), the account's whole list last.
		t.Fatalf("pulumi destroy's first step: %v\nso far:\n%s\nclaims left: %v\n%s\n%s\nhub Kustomizations:\n%s\nkustomize-controller's log ends:\n%s\nleft in the account (%d):\n%s",
			err, strings.Join(events, "\n"), claimsLeft, check.ClaimStates(ctx, h), check.HubHealth(h), check.KustomizationList(ctx, h),
			h.Flux["kustomize-controller"].Tail(30), len(left), strings.Join(left, "\n"))
	}
	t.Logf("root Kustomization deleted to gone: %s\n%s", time.Since(start).Truncate(time.Second), strings.Join(events, "\n"))
	// After break glass no hub-side step of the unreachable spoke waits
	// for it: their releases go without an uninstall.
	for _, w := range waited {
		t.Errorf("after break glass for %s: %s", glass, w)
	}
	seenDeleting := false
	for _, st := range steps {
		seenDeleting = seenDeleting || st.objects == 0 && !st.admitted.IsZero()
	}
	if glass != "" && !seenDeleting {
		t.Errorf("no hub-side step of %s was seen being deleted", glass)
	}
	// What break glass leaves in the account is exactly the unreachable
	// spoke's apps' resources, none of the spoke's own.
	var kept []string
	for _, r := range allResources(h) {
		kept = append(kept, check.LedgerLine(r))
	}
	sort.Strings(kept)
	want := slices.Sorted(maps.Keys(abandoned))
	if !slices.Equal(kept, want) {
		t.Errorf("the account after the teardown holds:\n%s\nwant only what %s's apps made (break glass abandons them):\n%s",
			strings.Join(kept, "\n"), glass, strings.Join(want, "\n"))
	} else if glass != "" {
		t.Logf("break glass for %s abandoned its apps' AWS resources, as its help says:\n%s", glass, strings.Join(kept, "\n"))
	}

	for _, l := range spokeLeft {
		t.Error(l)
	}

	// pulumi destroy ends, and nothing of the program's Kubernetes objects
	// is left: the root first, then the rest, the Flux Operator's uninstall
	// taking Flux's CRDs and every Flux object with them.
	var d destroyed
	select {
	case d = <-done:
	case <-time.After(destroyRest):
		t.Fatalf("pulumi destroy still runs %s after the root Kustomization went; its log: %s", destroyRest, h.Engine.Dir)
	}
	if d.err != nil {
		t.Fatalf("pulumi destroy: %v\nthe Flux Operator stand-in: %v", d.err, h.Operator.Err())
	}
	t.Logf("pulumi destroy ended %s after the root Kustomization went: %v", d.at.Sub(rootGone).Truncate(time.Second), d.res.Steps)
	if len(d.res.Steps) == 0 || d.res.Steps[0].Type != "kubernetes:"+fluxbootstrap.KustomizationAPIVersion+":Kustomization" {
		t.Errorf("pulumi destroy's first step is not the root Kustomization's delete: %v", d.res.Steps)
	}
	for _, st := range d.res.Steps {
		if st.Op != apitype.OpDelete {
			t.Errorf("pulumi destroy: %s, want deletes only", st)
		}
	}
	leftOnHub, err := site.Left(ctx, h.Cluster, slices.Concat(h.Bootstrap.Objects, fluxCRDs(h)))
	if err != nil {
		t.Fatal(err)
	}
	if len(leftOnHub) > 0 {
		t.Errorf("after pulumi destroy the hub still holds: %v", leftOnHub)
	}
	// Flux's HelmReleases went with its CRDs, their finalizers removed
	// first: nothing they installed was uninstalled, and what the AWS half
	// deletes after the Kubernetes half (the node group, then the cluster)
	// still runs.
	now, err := check.InstalledPackages(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	for p := range packages {
		if !now[p] {
			t.Errorf("%s is no longer installed and healthy after pulumi destroy's Kubernetes half", p)
		}
	}
	// Every Crossplane pod (core, RBAC manager) still runs its main
	// container (its init container has exited, by design).
	pods := h.Pods.Pods("crossplane-system", "crossplane")
	if len(pods) == 0 {
		t.Error("no Crossplane pods run after the root went")
	}
	for pod, procs := range pods {
		running := false
		for _, p := range procs {
			running = running || !strings.HasSuffix(p.Name, "-init") && p.PID() != 0
		}
		if !running {
			t.Errorf("%s no longer runs after the root went", pod)
		}
	}
}

// spokeObjectsLeft lists the HelmReleases and HelmCharts of spokes left on
// the hub.
func spokeObjectsLeft(ctx context.Context, h *site.Hub, spokes []string) []string {
	var out []string
	for _, gvr := range []schema.GroupVersionResource{check.HelmReleases, check.HelmCharts} {
		l, err := h.Cluster.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return append(out, fmt.Sprintf("list %s when the root Kustomization went: %v", gvr.Resource, err))
		}
		for _, o := range l.Items {
			for _, s := range spokes {
				if strings.HasPrefix(o.GetName(), s+"-") || strings.HasPrefix(o.GetName(), o.GetNamespace()+"-"+s+"-") {
					out = append(out, fmt.Sprintf("%s %s/%s of spoke %s is left on the hub", gvr.Resource, o.GetNamespace(), o.GetName(), s))
				}
			}
		}
	}
	return out
}

// destroyRest bounds pulumi destroy after the root Kustomization is gone:
// the GitRepository, Secret and ConfigMap go at once; the FluxInstance
// waits for the operator's uninstall (its CRDs gone); the Helm release is
// uninstalled; the namespace waits for what is left in it.
const destroyRest = 5 * time.Minute

// fluxCRDs are Flux's CRDs the operator stand-in installed.
func fluxCRDs(h *site.Hub) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range h.FluxObjects() {
		if o.GetKind() == "CustomResourceDefinition" {
			out = append(out, o)
		}
	}
	return out
}

// pruneAfterBreakGlass bounds how long a step that prunes on the spoke
// (compose.BreakGlassParts) may stay after break glass: suspended, its
// finalizer goes without the spoke (measured: 55 s to 1 m 3 s, 27 Nov);
// not suspended, it would retry against the stopped API server for good.
const pruneAfterBreakGlass = 5 * time.Minute

// stepDeletion follows one of a claim's bootstrap steps on the hub from its
// delete being admitted to gone.
type stepDeletion struct {
	objects  int           // what it applied on the spoke, if it prunes there at deletion
	admitted time.Time     // when its deletion was first seen; zero before
	timeout  time.Duration // its spec.timeout
	gone     bool
}

// spokeWorkloadsRun waits for the example spoke of h (merged with its
// deploy key sealed for h's environment: leadTime) to run its workloads:
// the hub's remote steps that prune on the spoke at deletion
// (compose.BreakGlassParts) Ready with what they applied there, and
// payment-app Ready on the spoke with its AWS resources made by the
// spoke's own Crossplane.
func spokeWorkloadsRun(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	eks := playedSpoke(t, h)
	start := time.Now()
	for _, part := range compose.BreakGlassParts() {
		name := compose.BootstrapName(claimName, part)
		var state string
		err := kube.Poll(ctx, spokeBound, func() (bool, error) {
			o, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				state = err.Error()
				return false, nil
			}
			st, reason, msg := check.Condition(o, "Ready")
			state = fmt.Sprintf("Ready=%s %s: %s; %d objects applied", st, reason, msg, check.InventorySize(o))
			return st == "True" && check.InventorySize(o) > 0, nil
		})
		if err != nil {
			_, s, _ := stepsReady(ctx, h, claimName, "")
			t.Fatalf("%s: %v (last: %s)\nhub steps:\n%s\nthe spoke:\n%s", name, err, state, s, fluxState(ctx, eks.Cluster))
		}
		t.Logf("%s %s (waited %s)", name, state, time.Since(start).Truncate(time.Second))
	}
	last, err := check.WaitCondition(ctx, eks.Cluster, check.Kustomizations, "flux-system", exampleApp, "Ready", composeBound, check.IsTrue)
	if err != nil {
		t.Fatalf("the spoke's payment-app is not Ready: %v (last: %s)\nthe spoke:\n%s", err, last, fluxState(ctx, eks.Cluster))
	}
	t.Logf("payment-app Ready on the spoke (waited %s)", time.Since(start).Truncate(time.Second))
}
