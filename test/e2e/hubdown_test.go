package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// appOverlay is the example app's staging overlay; its last line sets the
// message the app shows.
const appOverlay = "manifests/apps/payment-app/overlays/staging/kustomization.yaml"

// hubDown stops the hub's API server, commits a change to the example app,
// and requires it to reach the spoke: the spoke reads Git with its own
// Flux, hub or no hub (the README's promise). The spoke is asked to fetch
// at once, as a webhook Receiver on it would. The hub's API server is
// started again whatever happens, and must be ready again.
func hubDown(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	eks := h.EKS[claimName]
	api := h.Cluster.Proc("kube-apiserver")
	api.Stop(10 * time.Second)
	defer func() {
		if err := api.Start(); err != nil {
			t.Fatalf("restart the hub's API server: %v", err)
		}
		err := kube.Poll(ctx, restartBound, func() (bool, error) {
			body, err := h.Cluster.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil && string(body) == "ok", nil
		})
		if err != nil {
			t.Fatalf("the hub's API server is not ready again: %v\n%s", err, api.Tail(20))
		}
	}()
	if _, err := h.Cluster.Kube.Discovery().ServerVersion(); err == nil {
		t.Fatal("the hub's API server still answers")
	}
	const message = "staging, hub down"
	if err := h.Repo.Edit(appOverlay, "          value: staging\n", fmt.Sprintf("          value: %s\n", message)); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Commit(exampleApp + ": a new message while the hub is down"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	check.RequestFluxReconcile(t, eks.Cluster, check.FluxObject{GVR: check.GitRepositories, Name: "flux-system"})
	var last string
	err := kube.Poll(ctx, commitBound, func() (bool, error) {
		dep, err := eks.Cluster.Kube.AppsV1().Deployments(exampleAppNS).Get(ctx, exampleApp, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "PODINFO_UI_MESSAGE" {
				last = e.Value
			}
		}
		return last == message, nil
	})
	if err != nil {
		t.Fatalf("the commit did not reach the spoke while the hub was down: %v (PODINFO_UI_MESSAGE %q)\nthe spoke:\n%s", err, last, fluxState(ctx, eks.Cluster))
	}
	t.Logf("commit to the spoke's app updated, the hub's API server stopped: %s", time.Since(start))
}
