package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// planted are the errors TestHubFailsOnPlantedErrors plants in the tree,
// each in a place the others do not depend on, with what the suite's
// checks must say about it.
var planted = []struct {
	name string
	// want are the strings the failing check's message must hold.
	want []string
	// claim: the error shows on the example claim (claimComposed), else on
	// the hub's Kustomizations (hubSynced).
	claim bool
}{
	{"a composed kind no installed provider serves (provider-aws-cloudwatchlogs removed)",
		[]string{"Group", "cloudwatchlogs.aws.upbound.io"}, true},
	{"a dependsOn cycle", []string{"flux-system/planted-cycle-a", "dependency 'flux-system/planted-cycle-b' is not ready",
		"flux-system/planted-cycle-b", "dependency 'flux-system/planted-cycle-a' is not ready"}, false},
	{"a wrong substitution variable", []string{"flux-system/planted-variable", "AWS_REGON"}, false},
	// kustomize-controller stalls it before applying anything; fleet
	// validate builds the same status reader.
	{"two health checks for one GroupKind", []string{"flux-system/planted-health-checks", "InvalidCELExpression",
		"duplicate custom health check for GroupKind Provider.pkg.crossplane.io"}, false},
}

// duplicateHealthChecks are two healthCheckExprs for one GroupKind.
const duplicateHealthChecks = "  healthCheckExprs:\n" +
	"    - apiVersion: pkg.crossplane.io/v1\n      kind: Provider\n      current: status.conditions.exists(c, c.type == 'Healthy')\n" +
	"    - apiVersion: pkg.crossplane.io/v1\n      kind: Provider\n      current: status.conditions.exists(c, c.type == 'Installed')\n"

// neverHealthy is a planted Kustomization whose health check can only
// run out, after 30 minutes (the -sync step's timeout): it applies nothing
// and checks a ConfigMap nothing makes.
const neverHealthy = "planted-never-healthy"

var neverHealthyKustomization = plantedEmptyKustomization(neverHealthy) +
	"  wait: false\n  timeout: 30m\n" +
	"  healthChecks:\n    - apiVersion: v1\n      kind: ConfigMap\n      name: planted-never-there\n      namespace: flux-system\n"

// plantErrors edits the work tree: the cloudwatchlogs provider removed
// from the hub's packages, two Kustomizations that depend on each other,
// one whose file names a variable cluster-info does not have, and one with
// two health checks for one GroupKind.
func plantErrors(work string) error {
	providers := filepath.Join(work, "manifests/gitops-system/infrastructure/crossplane-packages/providers.yaml")
	b, err := os.ReadFile(providers)
	if err != nil {
		return err
	}
	var kept []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if !strings.Contains(doc, "name: provider-aws-cloudwatchlogs\n") {
			kept = append(kept, doc)
		}
	}
	if len(kept) == len(strings.Split(string(b), "\n---\n")) {
		return fmt.Errorf("%s has no provider-aws-cloudwatchlogs", providers)
	}
	if err := os.WriteFile(providers, []byte(strings.Join(kept, "\n---\n")), 0o644); err != nil {
		return err
	}
	for _, dir := range []string{"manifests/planted", "manifests/planted-empty"} {
		if err := os.MkdirAll(filepath.Join(work, dir), 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"manifests/planted/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - configmap.yaml\n",
		"manifests/planted/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: planted\n  namespace: flux-system\n" +
			"data:\n  region: ${AWS_REGON}\n",
		"manifests/gitops-system/clusters/mgmt/planted.yaml": plantedKustomization("planted-cycle-a", "planted-cycle-b") +
			"---\n" + plantedKustomization("planted-cycle-b", "planted-cycle-a") + "---\n" + plantedKustomization("planted-variable", "") +
			"---\n" + plantedEmptyKustomization("planted-health-checks") +
			duplicateHealthChecks + "---\n" + neverHealthyKustomization,
		"manifests/planted-empty/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
	}
	for rel, content := range files {
		if err := os.WriteFile(filepath.Join(work, rel), []byte(content), 0o644); err != nil {
			return err
		}
	}
	root := filepath.Join(work, "manifests/gitops-system/clusters/mgmt/kustomization.yaml")
	k, err := os.ReadFile(root)
	if err != nil {
		return err
	}
	return os.WriteFile(root, []byte(strings.Replace(string(k), "  - workload-clusters.yaml\n", "  - workload-clusters.yaml\n  - planted.yaml\n", 1)), 0o644)
}

func plantedKustomization(name, dependsOn string) string {
	s := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: " + name + "\n  namespace: flux-system\n" +
		"spec:\n  interval: 10m\n  retryInterval: 20s\n  path: ./manifests/planted\n  prune: true\n" +
		"  sourceRef:\n    kind: GitRepository\n    name: flux-system\n" +
		"  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-info\n"
	if dependsOn != "" {
		s += "  dependsOn:\n    - name: " + dependsOn + "\n"
	}
	return s
}

// plantedEmptyKustomization is plantedKustomization(name, "") on
// manifests/planted-empty, a path that applies nothing.
func plantedEmptyKustomization(name string) string {
	return strings.Replace(plantedKustomization(name, ""), "./manifests/planted\n", "./manifests/planted-empty\n", 1)
}

// TestHubFailsOnPlantedErrors plants one error of each class the suite
// must catch and checks that the suite's own checks (hubSynced,
// claimComposed) fail with messages naming each.
func TestHubFailsOnPlantedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := startHub(t, "e2eplant", "10.203.0.0/16", plantErrors)
	// Wait until every planted error has had its effect: the claim exists
	// (workload-clusters applied it) and the planted Kustomizations have
	// been reconciled.
	var hubErr, claimErr error
	err := kube.Poll(ctx, hubSyncBound, func() (bool, error) {
		if err := h.Exited(); err != nil {
			return false, err
		}
		hubErr = check.HubSynced(ctx, h, manifests, time.Second)
		claimErr = claimComposed(ctx, h, time.Second)
		for _, p := range planted {
			e := hubErr
			if p.claim {
				e = claimErr
			}
			for _, w := range p.want {
				if e == nil || !strings.Contains(e.Error(), w) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		for _, p := range planted {
			e := hubErr
			if p.claim {
				e = claimErr
			}
			if e == nil {
				t.Errorf("%s: the suite's check passed", p.name)
				continue
			}
			for _, w := range p.want {
				if !strings.Contains(e.Error(), w) {
					t.Errorf("%s: the suite's failure does not name %q", p.name, w)
				}
			}
		}
		t.Fatalf("planted errors not all caught (%v)\nhub: %v\nclaim: %v", err, hubErr, claimErr)
	}
	t.Logf("hub check:\n%v\nclaim check:\n%v", hubErr, claimErr)
	t.Run("a Kustomization deleted during its health check goes at once", func(t *testing.T) { deletionEndsHealthCheck(t, h) })
}

// deletionEndsHealthCheckBound is how long a Kustomization deleted during
// its health check may take to go: kustomize-controller ends the check
// when the deletion queues the object again, then finalizes it (seconds;
// without the feature gate it waited out its 30-minute timeout).
const deletionEndsHealthCheckBound = time.Minute

// deletionEndsHealthCheck deletes neverHealthy while its health check
// runs and checks that it goes within deletionEndsHealthCheckBound: the
// hub's kustomize-controller runs with
// fluxbootstrap.CancelHealthCheckFeatureGate, as the program sets it, so a
// deleted bootstrap step caught checking a spoke that went away no longer
// holds its claim's deletion for the step's timeout. The root
// Kustomization may apply it again: a new object (another UID) counts as
// gone.
func deletionEndsHealthCheck(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	ks := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace("flux-system")
	var uid types.UID
	var last string
	err := kube.Poll(ctx, hubSyncBound, func() (bool, error) {
		o, err := ks.Get(ctx, neverHealthy, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		status, _, message := check.Condition(o, "Healthy")
		last = status + ": " + message
		if status == string(metav1.ConditionUnknown) && strings.HasPrefix(message, "Running health checks") {
			uid = o.GetUID()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s never ran its health check: %v (last: %s)", neverHealthy, err, last)
	}
	start := time.Now()
	if err := ks.Delete(ctx, neverHealthy, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatalf("delete %s: %v", neverHealthy, err)
	}
	err = kube.Poll(ctx, deletionEndsHealthCheckBound, func() (bool, error) {
		o, err := ks.Get(ctx, neverHealthy, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		_, _, last = check.Condition(o, "Ready")
		return o.GetUID() != uid, nil
	})
	if err != nil {
		t.Fatalf("%s, deleted during its 30-minute health check, is still there after %s (%v; Ready: %s): kustomize-controller did not end the health check (--feature-gates=%s)",
			neverHealthy, deletionEndsHealthCheckBound, err, last, fluxbootstrap.CancelHealthCheckFeatureGate)
	}
	t.Logf("%s gone %s after its deletion, in its health check", neverHealthy, time.Since(start).Round(time.Second))
}
