package test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// checkRuntime reports the runtime properties that a tree must
// keep (each one a controller behaviour the object shapes alone hide).
func checkRuntime(t *testing.T, tree string) []string {
	t.Helper()
	var errs []string
	// A HelmRelease whose remediation retries are finite stalls for good
	// (RetriesExceeded) after that many failures.
	for _, d := range factReadDocs(t, tree, "gitops-system") {
		if !factIsKind(d, "helm.toolkit.fluxcd.io", "HelmRelease") {
			continue
		}
		for _, phase := range []string{"install", "upgrade"} {
			r := factField(d.obj, "spec", phase, "remediation", "retries")
			if fmt.Sprint(r) != "-1" {
				errs = append(errs, fmt.Sprintf("%s: spec.%s.remediation.retries is %v, want -1 (retry, never stall)", d.file, phase, r))
			}
		}
	}
	// Crossplane (which creates Services) installs after LBC, whose
	// Service webhook has failurePolicy: Fail.
	found := false
	for _, d := range factReadDocs(t, tree, "gitops-system/spoke-tools") {
		if !factIsKind(d, "kustomize.toolkit.fluxcd.io", "Kustomization") || factStr(d.obj, "metadata", "name") != "crossplane" {
			continue
		}
		deps, _ := factField(d.obj, "spec", "dependsOn").([]any)
		for _, dep := range deps {
			if factStr(dep, "name") == "aws-load-balancer-controller" {
				found = true
			}
		}
	}
	if !found {
		errs = append(errs, "spoke-tools Kustomization crossplane must dependsOn aws-load-balancer-controller")
	}
	// A waiting Kustomization that applies AppInfrastructure claims must
	// health-check them on Ready; kstatus counts them Current at once.
	for _, d := range factReadDocs(t, tree, "gitops-workloads/clusters") {
		if !factIsKind(d, "kustomize.toolkit.fluxcd.io", "Kustomization") || factField(d.obj, "spec", "wait") != true ||
			!strings.HasPrefix(factStr(d.obj, "spec", "path"), "./manifests/apps/") {
			continue
		}
		ok := false
		exprs, _ := factField(d.obj, "spec", "healthCheckExprs").([]any)
		for _, e := range exprs {
			if factStr(e, "kind") == "AppInfrastructure" && strings.Contains(factStr(e, "current"), "'Ready'") {
				ok = true
			}
		}
		if !ok {
			errs = append(errs, d.file+": wait: true needs a healthCheckExprs entry for AppInfrastructure on Ready")
		}
	}
	// A team leaves nothing on a spoke: its namespace (whose deletion takes
	// the apps' objects) and identity are pruned with it; marked
	// prune: disabled they stayed, with the apps' objects, because the
	// apps' Kustomizations lost the identity they prune with
	// (test/e2e TestSpokeTeamComesAndGoes).
	for _, d := range factReadDocs(t, tree, "gitops-workloads/teams") {
		if factStr(d.obj, "metadata", "annotations", "kustomize.toolkit.fluxcd.io/prune") == "disabled" {
			errs = append(errs, fmt.Sprintf("%s: %s must not be prune: disabled, or removing the team leaves it (and its apps' objects) on the spoke", d.file, factStr(d.obj, "kind")))
		}
	}
	// The workloads identity outlives the hub's prune of its folder: the
	// workloads Kustomization's finalizer impersonates it to delete (and
	// wait for) every team and app.
	for _, d := range factReadDocs(t, tree, "gitops-system/spoke-bootstrap/workloads") {
		kind := factStr(d.obj, "kind")
		if kind != "ServiceAccount" && kind != "ClusterRole" && kind != "ClusterRoleBinding" {
			continue
		}
		if factStr(d.obj, "metadata", "annotations", "kustomize.toolkit.fluxcd.io/prune") != "disabled" {
			errs = append(errs, fmt.Sprintf("%s: %s needs annotation kustomize.toolkit.fluxcd.io/prune: disabled, or the workloads finalizer loses the identity it prunes with", d.file, kind))
		}
	}
	// That the team role covers kstatus' reads is a proof boundary now:
	// internal/proof/rbacproof, run by fleet validate (test/impersonation_test.go).
	return errs
}

func TestRuntimeBehaviour(t *testing.T) {
	if errs := checkRuntime(t, "../manifests"); len(errs) > 0 {
		t.Fatalf("committed tree:\n%s", strings.Join(errs, "\n"))
	}
}

func TestRuntimeBehaviourPlanted(t *testing.T) {
	cases := []struct {
		name string
		edit plant.Edit
		want string
	}{
		{"finite retries", plant.Edit{File: "gitops-system/spoke-tools/crossplane/release.yaml", Old: "retries: -1", New: "retries: 3"}, "remediation.retries"},
		{"crossplane races lbc", plant.Edit{File: "gitops-system/spoke-tools/crossplane.yaml", Old: "- name: aws-load-balancer-controller", New: "- name: sources"}, "dependsOn aws-load-balancer-controller"},
		{"workloads identity pruned with its folder", plant.Edit{File: "gitops-system/spoke-bootstrap/workloads/identity.yaml", Old: "prune: disabled", New: "prune: enabled"}, "ServiceAccount needs annotation"},
		{"team namespace kept when the team goes", plant.Edit{File: "gitops-workloads/teams/payments/namespace.yaml", Old: "    pod-security.kubernetes.io/warn: restricted", New: "    pod-security.kubernetes.io/warn: restricted\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled"}, "Namespace must not be prune: disabled"},
		{"no claim health check", plant.Edit{File: "gitops-workloads/clusters/apps-staging/payment-app.yaml", Old: "kind: AppInfrastructure", New: "kind: Other"}, "healthCheckExprs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := checkRuntime(t, plant.Repo(t, c.edit))
			if !strings.Contains(strings.Join(errs, "\n"), c.want) {
				t.Fatalf("planted %q not caught; got %v", c.name, errs)
			}
		})
	}
}
