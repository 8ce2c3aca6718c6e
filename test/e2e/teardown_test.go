package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/e2e"
)

// appOwner starts the names of the managed resources the spoke's own
// Crossplane composes for the example app (its AppInfrastructure's).
const appOwner = "payment-app"

// spokeInfraKinds are what the spoke's pods need to reach AWS (compute,
// the EKS add-ons that give pods their network, DNS and services, and the
// network): none may go before the app's resources are deleted, or the
// spoke's Crossplane could no longer delete them (N3).
var spokeInfraKinds = []string{"NodeGroup", "Addon", "Cluster", "NATGateway", "EIP", "RouteTable", "Route", "RouteTableAssociation", "Subnet", "VPC", "InternetGateway"}

// teardown deletes the example claim as a pull request does (its file
// removed from the claims folder) with the app running on the spoke, and
// follows it until the account holds nothing of the spoke: the app's table,
// queues and role are deleted by the spoke's own Crossplane while the
// spoke's nodes and network still exist, then the rest, and nothing else
// in the account (the other claim's spoke) is touched; the node group and
// its add-ons, which the first bootstrap step holds (namespaced Usages of
// cluster-scoped objects), go only after that step.
func teardown(t *testing.T, h *e2e.Hub) {
	ctx := context.Background()
	other := map[string]bool{}
	var app []string
	for _, r := range h.Account.All() {
		switch {
		case strings.HasPrefix(r.Owner, appOwner):
			app = append(app, r.Kind+" "+r.ID)
		case !strings.HasPrefix(r.Owner, claimName+"-"):
			other[r.Kind+"/"+r.ID] = true
		}
	}
	if len(app) == 0 {
		t.Fatalf("the account holds nothing of the app before the teardown")
	}
	if err := os.Remove(filepath.Join(h.Repo.Work, filepath.FromSlash(claimFile))); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Edit(filepath.ToSlash(filepath.Join(filepath.Dir(claimFile), "kustomization.yaml")), "  - "+claimName+".yaml\n", ""); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Commit("remove " + claimName); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	requestReconcile(t, h)
	var left []string
	// When each bootstrap step was gone from the hub.
	stepGone := map[string]time.Duration{}
	err := e2e.Poll(ctx, 15*time.Minute, func() (bool, error) {
		for _, st := range compose.BootstrapSteps() {
			if _, seen := stepGone[st.Part]; seen {
				continue
			}
			_, err := h.Cluster.Dynamic.Resource(kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, claimName+"-"+st.Part, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				stepGone[st.Part] = time.Since(start).Truncate(time.Second)
			}
		}
		left = nil
		for _, r := range h.Account.All() {
			if !other[r.Kind+"/"+r.ID] {
				left = append(left, r.Kind+" "+r.ID+" ("+r.Owner+")")
			}
		}
		_, err := h.Cluster.Dynamic.Resource(claims).Namespace(claimNS).Get(ctx, claimName, metav1.GetOptions{})
		return len(left) == 0 && apierrors.IsNotFound(err), nil
	})
	if err != nil {
		_, s, _ := stepsReady(ctx, h, claimName, "")
		t.Fatalf("the claim's teardown did not end: %v\nleft in the account: %s\nhub steps:\n%s\nthe spoke:\n%s",
			err, strings.Join(left, "\n"), s, fluxState(ctx, h.EKS[claimName].Cluster))
	}
	t.Logf("claim removed from Git to nothing of it left in the account: %s", time.Since(start))
	var timeline []string
	for _, st := range compose.BootstrapSteps() {
		timeline = append(timeline, fmt.Sprintf("%s-%s gone after %s", claimName, st.Part, stepGone[st.Part]))
	}
	for _, l := range h.Account.Log() {
		if f := strings.Fields(l); len(f) >= 4 && f[1] == "delete" && !other[f[2]+"/"+f[3]] {
			at, err := time.Parse("15:04:05.000", f[0])
			if err != nil {
				t.Fatalf("ledger line %q: %v", l, err)
			}
			now := time.Now()
			after := time.Date(now.Year(), now.Month(), now.Day(), at.Hour(), at.Minute(), at.Second(), at.Nanosecond(), now.Location()).Sub(start)
			timeline = append(timeline, fmt.Sprintf("%s %s deleted after %s", f[2], f[3], after.Truncate(time.Second)))
			// What the first bootstrap step holds (namespaced Usages of
			// cluster-scoped objects): the node group and its add-ons.
			// The suite sees a step gone at its next look (every
			// quarter second, plus its reads): 2 s of slack.
			if (strings.HasSuffix(f[2], "/NodeGroup") || strings.HasSuffix(f[2], "/Addon")) && after+2*time.Second < stepGone[compose.BootstrapSteps()[0].Part] {
				t.Errorf("%s %s deleted %s after the claim, before %s-%s was gone (%s)", f[2], f[3], after, claimName, compose.BootstrapSteps()[0].Part, stepGone[compose.BootstrapSteps()[0].Part])
			}
		}
	}
	t.Logf("teardown timeline:\n%s", strings.Join(timeline, "\n"))

	// The order: every app resource went before any of the spoke's
	// compute and network.
	lastApp, firstInfra := -1, -1
	var infraLine string
	log := h.Account.Log()
	for i, l := range log {
		f := strings.Fields(l)
		if len(f) < 4 || f[1] != "delete" {
			continue
		}
		kind, id := f[2], f[3]
		for _, a := range app {
			if a == kind+" "+id {
				lastApp = i
			}
		}
		for _, k := range spokeInfraKinds {
			if strings.HasSuffix(kind, "/"+k) && firstInfra < 0 && !other[kind+"/"+id] {
				firstInfra, infraLine = i, l
			}
		}
	}
	if lastApp < 0 || firstInfra < 0 || lastApp > firstInfra {
		t.Errorf("the app's resources (%v) were not all deleted before the spoke's compute and network (first: %s; last app deletion at line %d, first infrastructure deletion at line %d):\n%s",
			app, infraLine, lastApp, firstInfra, strings.Join(log, "\n"))
	}
	sort.Strings(app)
	t.Logf("the app's resources, deleted first: %s", fmt.Sprint(app))
}
