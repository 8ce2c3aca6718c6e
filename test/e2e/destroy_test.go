package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-fleet/eks-fleet/internal/testsupport/e2e"
)

var helmReleases = schema.GroupVersionResource{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"}

// rootKustomization is the root Kustomization the program creates (the
// one Kustomization among its objects).
func rootKustomization(t *testing.T, h *e2e.Hub) *unstructured.Unstructured {
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
func hubReleases(ctx context.Context, t *testing.T, h *e2e.Hub, spokes []string) []string {
	t.Helper()
	l, err := h.Cluster.Dynamic.Resource(helmReleases).List(ctx, metav1.ListOptions{})
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

// destroy deletes the hub's root Kustomization as `pulumi destroy` deletes
// it first (the program's object; the Kubernetes provider deletes with
// foreground propagation and waits for it to be gone: pulumi-kubernetes
// provider/pkg/await/await.go, Deletion), with spokes still composed
// (every claim on the hub), and follows it. The root goes only after every claim
// is gone and the account holds nothing any claim composed; what Pulumi
// removes after the root (Crossplane and its packages, External Secrets,
// Sealed Secrets, the hub's Flux) still runs when it is gone, since the
// infrastructure Kustomizations orphan what they applied. Otherwise Pulumi
// would delete the hub's roles and nodes under a spoke still being torn
// down, and its resources would be left in the account.
func destroy(t *testing.T, h *e2e.Hub) {
	ctx := context.Background()
	l, err := h.Cluster.Dynamic.Resource(claims).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var spokes []string
	for _, c := range l.Items {
		spokes = append(spokes, c.GetName())
	}
	if len(spokes) == 0 || len(h.Account.All()) == 0 {
		t.Fatalf("nothing to tear down: claims %v, %d resources in the account", spokes, len(h.Account.All()))
	}
	releases := hubReleases(ctx, t, h, spokes)
	packages, err := installedPackages(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	root := rootKustomization(t, h)
	fg := metav1.DeletePropagationForeground
	start := time.Now()
	if err := h.Cluster.Dynamic.Resource(kustomizations).Namespace(root.GetNamespace()).Delete(ctx, root.GetName(), metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	var events []string
	seen := map[string]bool{}
	mark := func(what string) {
		if !seen[what] {
			seen[what] = true
			events = append(events, fmt.Sprintf("%s after %s", what, time.Since(start).Truncate(time.Second)))
		}
	}
	var left []string
	var claimsLeft []string
	err = e2e.Poll(ctx, 20*time.Minute, func() (bool, error) {
		l, err := h.Cluster.Dynamic.Resource(claims).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		claimsLeft = nil
		for _, c := range l.Items {
			claimsLeft = append(claimsLeft, c.GetName())
		}
		for _, s := range spokes {
			if !strings.Contains(" "+strings.Join(claimsLeft, " ")+" ", " "+s+" ") {
				mark("claim " + s + " gone")
			}
		}
		left = nil
		for _, r := range h.Account.All() {
			left = append(left, r.Kind+" "+r.ID+" ("+r.Owner+")")
		}
		if len(left) == 0 {
			mark("the account empty")
		}
		_, err = h.Cluster.Dynamic.Resource(kustomizations).Namespace(root.GetNamespace()).Get(ctx, root.GetName(), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		mark("the root Kustomization gone")
		if len(claimsLeft) > 0 || len(left) > 0 {
			return false, fmt.Errorf("the root Kustomization is gone, Pulumi would now delete the hub, while claims %v and %d resources remain in the account:\n%s",
				claimsLeft, len(left), strings.Join(left, "\n"))
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pulumi destroy's first step: %v\nclaims left: %v\nleft in the account:\n%s\nso far:\n%s\nhub Kustomizations:\n%s",
			err, claimsLeft, strings.Join(left, "\n"), strings.Join(events, "\n"), kustomizationList(ctx, h))
	}
	t.Logf("root Kustomization deleted to gone: %s\n%s", time.Since(start).Truncate(time.Second), strings.Join(events, "\n"))

	// What Pulumi deletes after the root still runs.
	if now := hubReleases(ctx, t, h, spokes); strings.Join(now, " ") != strings.Join(releases, " ") {
		t.Errorf("the hub's HelmReleases after the root went: %v, want them all kept (%v) for Pulumi to remove with the hub", now, releases)
	}
	now, err := installedPackages(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	for p := range packages {
		if !now[p] {
			t.Errorf("%s is no longer installed and healthy after the root went", p)
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

// kustomizationList is every Kustomization on the hub with its Ready
// condition and whether it is being deleted.
func kustomizationList(ctx context.Context, h *e2e.Hub) string {
	l, err := h.Cluster.Dynamic.Resource(kustomizations).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for i := range l.Items {
		o := &l.Items[i]
		st, reason, msg := condition(o, "Ready")
		del := ""
		if o.GetDeletionTimestamp() != nil {
			del = " (deleting)"
		}
		out = append(out, fmt.Sprintf("%s/%s%s Ready=%s %s: %s", o.GetNamespace(), o.GetName(), del, st, reason, msg))
	}
	return strings.Join(out, "\n")
}
