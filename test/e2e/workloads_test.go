package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// workloadsAccount is the identity the spoke's workloads Kustomization
// applies gitops-workloads/clusters/<spoke>/ with
// (spoke-bootstrap/workloads/identity.yaml).
const workloadsAccount = "system:serviceaccount:flux-system:flux-workloads"

// spokeBuilt is what the tree builds for the example spoke: the hub
// Kustomization's spoke-bootstrap/<part> output and the spoke
// Kustomizations' outputs, by the Kustomization's spec.path.
func spokeBuilt(t *testing.T, spoke string) map[string][]*unstructured.Unstructured {
	t.Helper()
	root, err := filepath.Abs(manifests)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := proof.Run(context.Background(), proof.Options{Tree: root, KeepBuilt: true, SkipSealing: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the tree does not prove: %v", rep.Findings)
	}
	out := map[string][]*unstructured.Unstructured{}
	for _, b := range rep.Built {
		if b.Cluster == kbuild.Hub || !strings.Contains(b.Cluster, spoke) {
			continue
		}
		out[strings.TrimPrefix(filepath.ToSlash(b.Path), "./")] = append(out[strings.TrimPrefix(filepath.ToSlash(b.Path), "./")], b.Object)
	}
	return out
}

// pathEnding returns the objects built from the path that ends with
// suffix; exactly one such path must exist.
func pathEnding(t *testing.T, built map[string][]*unstructured.Unstructured, suffix string) []*unstructured.Unstructured {
	t.Helper()
	var found []string
	for p := range built {
		if strings.HasSuffix(p, suffix) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		paths := make([]string, 0, len(built))
		for p := range built {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		t.Fatalf("built paths ending %q: %v (have %v)", suffix, found, paths)
	}
	return built[found[0]]
}

// TestWorkloadsIdentityIsConfined proves on a real API server (RBAC, the
// escalation check, ValidatingAdmissionPolicy) that the spoke's workloads
// Kustomization can apply and prune what governance puts in a cluster
// folder and nothing beyond a team's reach. The identity and its policy are
// applied as the tree builds them for the example spoke; requests are made
// as kustomize-controller makes them for a Kustomization with
// serviceAccountName: impersonating the account by user name
// (fluxcd/pkg runtime/client impersonator.go setImpersonationConfig), with
// server-side apply as field manager kustomize-controller.
func TestWorkloadsIdentityIsConfined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	built := spokeBuilt(t, "apps-staging")
	bootstrap := pathEnding(t, built, "spoke-bootstrap/workloads")
	folder := pathEnding(t, built, "gitops-workloads/clusters/apps-staging")
	instance := pathEnding(t, built, "spoke-bootstrap/flux")

	n, err := kube.NewNetwork("e2ework", netip.MustParsePrefix("10.204.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c, err := kube.StartCluster(ctx, t.TempDir(), "spoke", kube.ClusterOptions{Network: n, PodCIDR: "10.204.16.1/20"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	// Flux's CRDs as the spoke's FluxInstance installs them, flux-system,
	// and a platform Kustomization of the spoke's own (no
	// serviceAccountName: it applies as kustomize-controller).
	var crds []*unstructured.Unstructured
	for _, o := range instance {
		if o.GetKind() != "FluxInstance" {
			continue
		}
		objs, err := site.FluxInstallation(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range objs {
			if x.GetKind() == "CustomResourceDefinition" || x.GetKind() == "Namespace" {
				crds = append(crds, x)
			}
		}
	}
	if len(crds) == 0 {
		t.Fatal("no FluxInstance built for the spoke")
	}
	crds = append(crds, mustYAML(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: flux-system}"))
	if err := c.Apply(ctx, "test", crds...); err != nil {
		t.Fatal(err)
	}
	platform := []*unstructured.Unstructured{
		mustYAML(t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: spoke-tools, namespace: flux-system}
spec: {interval: 10m, path: ./tools, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`),
		mustYAML(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: crossplane-system}"),
		// A platform ClusterRole within the workloads identity's own rules,
		// so the escalation check alone would let it be bound.
		mustYAML(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: platform-reader}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
`),
	}
	if err := c.Apply(ctx, "hub", append(bootstrap, platform...)...); err != nil {
		t.Fatal(err)
	}

	as := *rest.CopyConfig(c.Config)
	as.Impersonate = rest.ImpersonationConfig{UserName: workloadsAccount}
	wl, err := client.New(&as, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(o *unstructured.Unstructured) error {
		o = o.DeepCopy()
		return wl.Patch(ctx, o, client.Apply, client.FieldOwner("kustomize-controller"), client.ForceOwnership)
	}

	// The policy takes effect once the API server has loaded it. A probe
	// that got through is removed as admin: the policy may refuse the
	// workloads identity's delete, having loaded in between.
	probe := mustYAML(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe, namespace: default}\n")
	if err := kube.Poll(ctx, time.Minute, func() (bool, error) {
		err := apply(probe)
		if err == nil {
			return false, c.Client.Delete(ctx, probe.DeepCopy())
		}
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	}); err != nil {
		t.Fatalf("the workloads policy never refused a ConfigMap in default: %v", err)
	}

	// The cluster folder applies, namespaces first, as kustomize-controller
	// orders it (fluxcd/pkg ssa sorts by kind).
	sort.SliceStable(folder, func(i, j int) bool {
		return folder[i].GetKind() == "Namespace" && folder[j].GetKind() != "Namespace"
	})
	for _, o := range folder {
		if err := apply(o); err != nil {
			t.Fatalf("the workloads identity cannot apply the cluster folder: %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}

	// A team's RoleBinding applies (dry run first, as kustomize-controller
	// does) before its Role exists.
	early := mustYAML(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: flux-team-2, namespace: payments}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: not-yet}
subjects: [{kind: ServiceAccount, name: team-payments, namespace: flux-system}]`)
	if err := wl.Patch(ctx, early.DeepCopy(), client.Apply, client.FieldOwner("kustomize-controller"), client.ForceOwnership, client.DryRunAll); err != nil {
		t.Errorf("a team RoleBinding does not dry-run before its Role exists: %v", err)
	}

	tests := map[string]struct {
		reason string
		op     string // apply (default) or delete
		obj    string
		want   string
	}{
		"cluster-admin binding": {
			reason: "RBAC grants no cluster-wide binding",
			obj: `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pwn}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: team-payments, namespace: flux-system}]`,
			want: `clusterrolebindings.rbac.authorization.k8s.io "pwn" is forbidden: User "` + workloadsAccount + `" cannot patch resource "clusterrolebindings"`,
		},
		"object in kube-system": {
			reason: "RBAC grants ConfigMaps everywhere, the policy only in team namespaces",
			obj:    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: aws-auth-2, namespace: kube-system}",
			want:   "configmaps kube-system/aws-auth-2: outside flux-system the workloads folder may write only in team namespaces",
		},
		"deployment in default": {
			reason: "a platform namespace is no team's",
			obj: `apiVersion: apps/v1
kind: Deployment
metadata: {name: x, namespace: default}
spec:
  selector: {matchLabels: {a: x}}
  template: {metadata: {labels: {a: x}}, spec: {containers: [{name: x, image: x}]}}`,
			want: "deployments default/x: outside flux-system the workloads folder may write only in team namespaces",
		},
		"label default a team": {
			reason: "an existing namespace without the team label stays out of reach",
			obj:    "apiVersion: v1\nkind: Namespace\nmetadata: {name: default, labels: {eksfleet.io/team: default}}",
			want:   "Namespace default: the workloads folder may write only team namespaces",
		},
		"namespace without the team label": {
			reason: "a team namespace says so",
			obj:    "apiVersion: v1\nkind: Namespace\nmetadata: {name: loose}",
			want:   "Namespace loose: the workloads folder may write only team namespaces",
		},
		"delete a platform namespace": {
			reason: "RBAC grants namespace deletion (prune), the policy only of team namespaces",
			op:     "delete",
			obj:    "apiVersion: v1\nkind: Namespace\nmetadata: {name: crossplane-system}",
			want:   "Namespace crossplane-system: the workloads folder may write only team namespaces",
		},
		"spoke-info poisoned": {
			reason: "flux-system's ConfigMaps feed every Kustomization's substitutions",
			obj:    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: spoke-info, namespace: flux-system}\ndata: {AWS_REGION: x}",
			want:   "configmaps flux-system/spoke-info: in flux-system the workloads folder may write only team ServiceAccounts",
		},
		"take over kustomize-controller's account": {
			reason: "only team-* accounts",
			obj:    "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: kustomize-controller, namespace: flux-system}",
			want:   "serviceaccounts flux-system/kustomize-controller: in flux-system the workloads folder may write only team ServiceAccounts",
		},
		"app Kustomization as Flux itself": {
			reason: "without serviceAccountName kustomize-controller applies as cluster-admin",
			obj:    pwnKustomization("targetNamespace: payments"),
			want:   "Kustomization flux-system/pwn: an app Kustomization lives in flux-system and sets targetNamespace and serviceAccountName team-<targetNamespace>",
		},
		"app Kustomization as another account": {
			reason: "the account must be the target namespace's team",
			obj:    pwnKustomization("targetNamespace: kube-system, serviceAccountName: team-payments"),
			want:   "Kustomization flux-system/pwn: an app Kustomization lives in flux-system",
		},
		"app Kustomization reading the deploy key": {
			reason: "substitutions from flux-system's Secrets would hand the team the deploy key",
			obj:    pwnKustomization("targetNamespace: payments, serviceAccountName: team-payments, postBuild: {substituteFrom: [{kind: Secret, name: flux-system}]}"),
			want:   "Kustomization flux-system/pwn: no kubeConfig, no decryption, sources from flux-system only, substituteFrom ConfigMaps only",
		},
		"app Kustomization on another cluster": {
			reason: "a kubeConfig would reach wherever its Secret points",
			obj:    pwnKustomization("targetNamespace: payments, serviceAccountName: team-payments, kubeConfig: {secretRef: {name: hub}}"),
			want:   "Kustomization flux-system/pwn: no kubeConfig",
		},
		"delete the spoke's own tools": {
			reason: "a platform Kustomization is not an app's",
			op:     "delete",
			obj:    "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: spoke-tools, namespace: flux-system}",
			want:   "Kustomization flux-system/spoke-tools: an app Kustomization lives in flux-system and sets targetNamespace",
		},
		"team bound to a platform ClusterRole": {
			reason: "a RoleBinding binds only a Role of the team's namespace: a platform ClusterRole may grow",
			obj:    pwnBinding("ClusterRole", "platform-reader", "flux-system", "team-payments"),
			want:   "RoleBinding payments/pwn: binds only a Role, only to the ServiceAccount flux-system/team-payments",
		},
		"team bound to admin": {
			reason: "the escalation check: admin holds more than the workloads identity",
			obj:    pwnBinding("ClusterRole", "admin", "flux-system", "team-payments"),
			want:   "is attempting to grant RBAC permissions not currently held",
		},
		"team Role bound to the namespace's pods": {
			reason: "only the namespace's own team account",
			obj:    pwnBinding("Role", "flux-team", "payments", "default"),
			want:   "RoleBinding payments/pwn: binds only a Role, only to the ServiceAccount flux-system/team-payments",
		},
		"team Role with Secrets": {
			reason: "the escalation check: a team Role grants at most what the workloads identity holds",
			obj: `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pwn, namespace: payments}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get]}]`,
			want: "is attempting to grant RBAC permissions not currently held",
		},
		"Secret in a team namespace": {
			reason: "RBAC grants no Secrets",
			obj:    "apiVersion: v1\nkind: Secret\nmetadata: {name: x, namespace: payments}",
			want:   `User "` + workloadsAccount + `" cannot patch resource "secrets"`,
		},
	}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		tc := tests[name]
		t.Run(name, func(t *testing.T) {
			o := mustYAML(t, tc.obj)
			var err error
			if tc.op == "delete" {
				err = wl.Delete(ctx, o)
			} else {
				err = apply(o)
			}
			if err == nil {
				t.Fatalf("%s: allowed; want refused (%s)", name, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: refused with\n  %v\nwant it to say\n  %s", name, err, tc.want)
			}
		})
	}

	// Prune: the folder's objects delete as the workloads identity.
	for i := len(folder) - 1; i >= 0; i-- {
		o := folder[i]
		if o.GetAnnotations()["kustomize.toolkit.fluxcd.io/prune"] == "disabled" {
			continue
		}
		if err := wl.Delete(ctx, o); err != nil {
			t.Errorf("the workloads identity cannot prune %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}

	// Without the policy's binding the same request gets through: the
	// refusals above are the policy's, not an accident of the set-up.
	binding := mustYAML(t, "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: flux-workloads}")
	if err := c.Client.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	planted := mustYAML(t, tests["object in kube-system"].obj)
	if err := kube.Poll(ctx, time.Minute, func() (bool, error) { return apply(planted) == nil, nil }); err != nil {
		t.Errorf("with the policy unbound a ConfigMap in kube-system is still refused: the test cannot tell the policy works")
	}
}

// pwnKustomization is an app Kustomization flux-system/pwn of the tree's
// source with the further spec fields spec (flow-style YAML).
func pwnKustomization(spec string) string {
	return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: pwn, namespace: flux-system}\n" +
		"spec: {interval: 10m, path: ./x, prune: true, sourceRef: {kind: GitRepository, name: flux-system}, " + spec + "}"
}

// pwnBinding is the RoleBinding payments/pwn of the roleKind role to the
// ServiceAccount subjectNamespace/subject.
func pwnBinding(roleKind, role, subjectNamespace, subject string) string {
	return "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: pwn, namespace: payments}\n" +
		"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: " + roleKind + ", name: " + role + "}\n" +
		"subjects: [{kind: ServiceAccount, name: " + subject + ", namespace: " + subjectNamespace + "}]"
}

func mustYAML(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	objs, err := kube.DecodeYAML([]byte(s))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode %q: %v (%d objects)", s, err, len(objs))
	}
	return objs[0]
}

// teamOnSpoke is the cluster folder the lifecycle test serves for
// apps-staging: the payments team (the tree's own folder) and one app of
// theirs, a Deployment and a ConfigMap applied as the team (the example
// payment-app needs the spoke's Crossplane, which this suite does not run).
const teamOnSpoke = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../teams/payments
  - demo-app.yaml
`

var demoFiles = map[string]string{
	"gitops-workloads/clusters/apps-staging/demo-app.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: demo, namespace: flux-system}
spec:
  interval: 10m
  retryInterval: 20s
  timeout: 3m
  sourceRef: {kind: GitRepository, name: flux-system}
  path: ./manifests/apps/demo
  targetNamespace: payments
  serviceAccountName: team-payments
  prune: true
  wait: true
  deletionPolicy: WaitForTermination
`,
	"apps/demo/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [app.yaml]\n",
	"apps/demo/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: demo}
data: {greeting: hello}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: demo}
spec:
  replicas: 1
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: demo
          image: busybox
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`,
	"spoke-tools-stub/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
}

// TestSpokeTeamComesAndGoes runs the spoke's own Flux (the real source-
// and kustomize-controller, kube-controller-manager finishing namespaces)
// against the workloads identity and Kustomization as the tree builds them
// for apps-staging: a team and its app come up applied as flux-workloads
// and as the team; removing the team from the cluster folder leaves
// nothing of it on the spoke (N10); deleting the workloads Kustomization, as
// the hub does first when the spoke goes, waits until the team's namespace
// and app are gone. Stand-ins: spoke-tools is an empty Kustomization (the
// workloads wait for it), the GitRepository reads the suite's Git server.
func TestSpokeTeamComesAndGoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	built := spokeBuilt(t, "apps-staging")
	var instance *unstructured.Unstructured
	for _, o := range pathEnding(t, built, "spoke-bootstrap/flux") {
		if o.GetKind() == "FluxInstance" {
			instance = o
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	s, err := site.StartSpoke(ctx, site.SpokeOptions{
		Dir: t.TempDir(), RepoRoot: root, Network: "e2eteam", Prefix: netip.MustParsePrefix("10.205.0.0/16"), Instance: instance,
		Edit: func(work string) error {
			for rel, body := range demoFiles {
				if err := writeFile(filepath.Join(work, "manifests", rel), body); err != nil {
					return err
				}
			}
			return writeFile(filepath.Join(work, "manifests/gitops-workloads/clusters/apps-staging/kustomization.yaml"), teamOnSpoke)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	defer func() {
		if t.Failed() {
			for name, p := range s.Flux {
				t.Logf("--- %s\n%s", name, p.Tail(40))
			}
		}
	}()
	c := s.Cluster
	stub := mustYAML(t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: spoke-tools, namespace: flux-system}
spec: {interval: 10m, path: ./manifests/spoke-tools-stub, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`)
	info := mustYAML(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: spoke-info, namespace: flux-system}\ndata: {CLUSTER_NAME: apps-staging}")
	if err := c.Apply(ctx, "hub", append([]*unstructured.Unstructured{stub, info}, pathEnding(t, built, "spoke-bootstrap/workloads")...)...); err != nil {
		t.Fatal(err)
	}

	ready := func(name string) func() (bool, error) {
		return func() (bool, error) {
			k, err := c.Dynamic.Resource(check.Kustomizations).Namespace("flux-system").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			st, _, _ := check.Condition(k, "Ready")
			return st == "True" && k.GetGeneration() == check.ObservedGeneration(k), nil
		}
	}
	describe := func() string {
		l, _ := c.Dynamic.Resource(check.Kustomizations).Namespace("").List(ctx, metav1.ListOptions{})
		var b strings.Builder
		for i := range l.Items {
			st, r, m := check.Condition(&l.Items[i], "Ready")
			fmt.Fprintf(&b, "%s Ready=%s %s: %s\n", l.Items[i].GetName(), st, r, m)
		}
		return b.String()
	}
	start := time.Now()
	for _, k := range []string{"workloads", "demo"} {
		if err := kube.Poll(ctx, commitBound, ready(k)); err != nil {
			t.Fatalf("%s never Ready: %v\n%s", k, err, describe())
		}
	}
	t.Logf("team and app up in %s", time.Since(start).Round(time.Second))
	teamObjects := []struct {
		gvr       schema.GroupVersionResource
		namespace string
		name      string
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "payments"},
		{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, "flux-system", "team-payments"},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, "payments", "flux-team"},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, "payments", "flux-team"},
		{check.Kustomizations, "flux-system", "demo"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "payments", "demo"},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "payments", "demo"},
	}
	left := func() []string {
		var out []string
		for _, o := range teamObjects {
			if _, err := c.Dynamic.Resource(o.gvr).Namespace(o.namespace).Get(ctx, o.name, metav1.GetOptions{}); err == nil {
				out = append(out, o.gvr.Resource+" "+o.namespace+"/"+o.name)
			}
		}
		return out
	}
	if l := left(); len(l) != len(teamObjects) {
		t.Fatalf("after the team came up only %v exist", l)
	}
	reconcile := func() {
		check.RequestFluxReconcile(t, c, check.FluxObject{GVR: check.GitRepositories, Name: "flux-system"}, check.FluxObject{GVR: check.Kustomizations, Name: "workloads"})
	}

	// N10: the team leaves the cluster folder.
	if err := writeFile(filepath.Join(s.Repo.Work, "manifests/gitops-workloads/clusters/apps-staging/kustomization.yaml"),
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"); err != nil {
		t.Fatal(err)
	}
	if err := s.Repo.Commit("payments leaves apps-staging"); err != nil {
		t.Fatal(err)
	}
	reconcile()
	start = time.Now()
	if err := kube.Poll(ctx, commitBound, func() (bool, error) { return len(left()) == 0, nil }); err != nil {
		t.Fatalf("the team left the cluster folder but %v stay on the spoke\n%s", left(), describe())
	}
	t.Logf("team gone in %s", time.Since(start).Round(time.Second))

	// It comes back; then the spoke goes: the hub deletes the workloads
	// Kustomization first and waits for it.
	if err := writeFile(filepath.Join(s.Repo.Work, "manifests/gitops-workloads/clusters/apps-staging/kustomization.yaml"), teamOnSpoke); err != nil {
		t.Fatal(err)
	}
	if err := s.Repo.Commit("payments back on apps-staging"); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if err := kube.Poll(ctx, commitBound, ready("demo")); err != nil {
		t.Fatalf("the team never came back: %v\n%s", err, describe())
	}
	if err := c.Dynamic.Resource(check.Kustomizations).Namespace("flux-system").Delete(ctx, "workloads", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	err = kube.Poll(ctx, commitBound, func() (bool, error) {
		_, err := c.Dynamic.Resource(check.Kustomizations).Namespace("flux-system").Get(ctx, "workloads", metav1.GetOptions{})
		if err == nil {
			return false, nil
		}
		if l := left(); len(l) > 0 {
			return false, fmt.Errorf("the workloads Kustomization was gone while %v stayed", l)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("deleting the workloads: %v\n%s", err, describe())
	}
	t.Logf("workloads deleted, waiting for the team, in %s", time.Since(start).Round(time.Second))
}

func writeFile(path, body string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(body), 0o644)
}
