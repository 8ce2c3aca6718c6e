package e2e

import (
	"context"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/e2e"
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
	root, err := filepath.Abs("../../manifests")
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
	ctx := context.Background()
	built := spokeBuilt(t, "apps-staging")
	bootstrap := pathEnding(t, built, "spoke-bootstrap/workloads")
	folder := pathEnding(t, built, "gitops-workloads/clusters/apps-staging")
	instance := pathEnding(t, built, "spoke-bootstrap/flux")

	n, err := e2e.NewNetwork("e2ework", netip.MustParsePrefix("10.204.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c, err := e2e.StartCluster(ctx, t.TempDir(), "spoke", e2e.ClusterOptions{Network: n, PodCIDR: "10.204.16.1/20"})
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
		objs, err := e2e.FluxInstallation(ctx, o)
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

	// The policy takes effect once the API server has loaded it.
	probe := mustYAML(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe, namespace: default}\n")
	if err := e2e.Poll(ctx, time.Minute, func() (bool, error) {
		err := apply(probe)
		if err == nil {
			return false, wl.Delete(ctx, probe)
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
			obj: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: pwn, namespace: flux-system}
spec: {interval: 10m, path: ./x, prune: true, targetNamespace: payments, sourceRef: {kind: GitRepository, name: flux-system}}`,
			want: "Kustomization flux-system/pwn: an app Kustomization lives in flux-system and sets targetNamespace and serviceAccountName team-<targetNamespace>",
		},
		"app Kustomization as another account": {
			reason: "the account must be the target namespace's team",
			obj: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: pwn, namespace: flux-system}
spec: {interval: 10m, path: ./x, prune: true, targetNamespace: kube-system, serviceAccountName: team-payments, sourceRef: {kind: GitRepository, name: flux-system}}`,
			want: "Kustomization flux-system/pwn: an app Kustomization lives in flux-system",
		},
		"app Kustomization reading the deploy key": {
			reason: "substitutions from flux-system's Secrets would hand the team the deploy key",
			obj: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: pwn, namespace: flux-system}
spec:
  interval: 10m
  path: ./x
  prune: true
  targetNamespace: payments
  serviceAccountName: team-payments
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild: {substituteFrom: [{kind: Secret, name: flux-system}]}`,
			want: "Kustomization flux-system/pwn: no kubeConfig, no decryption, sources from flux-system only, substituteFrom ConfigMaps only",
		},
		"app Kustomization on another cluster": {
			reason: "a kubeConfig would reach wherever its Secret points",
			obj: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: pwn, namespace: flux-system}
spec:
  interval: 10m
  path: ./x
  prune: true
  targetNamespace: payments
  serviceAccountName: team-payments
  sourceRef: {kind: GitRepository, name: flux-system}
  kubeConfig: {secretRef: {name: hub}}`,
			want: "Kustomization flux-system/pwn: no kubeConfig",
		},
		"delete the spoke's own tools": {
			reason: "a platform Kustomization is not an app's",
			op:     "delete",
			obj:    "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: spoke-tools, namespace: flux-system}",
			want:   "Kustomization flux-system/spoke-tools: an app Kustomization lives in flux-system and sets targetNamespace",
		},
		"team bound to a platform ClusterRole": {
			reason: "a RoleBinding binds only a Role of the team's namespace: a platform ClusterRole may grow",
			obj: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pwn, namespace: payments}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: platform-reader}
subjects: [{kind: ServiceAccount, name: team-payments, namespace: flux-system}]`,
			want: "RoleBinding payments/pwn: binds only a Role, only to the ServiceAccount flux-system/team-payments",
		},
		"team bound to admin": {
			reason: "the escalation check: admin holds more than the workloads identity",
			obj: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pwn, namespace: payments}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: ServiceAccount, name: team-payments, namespace: flux-system}]`,
			want: "is attempting to grant RBAC permissions not currently held",
		},
		"team Role bound to the namespace's pods": {
			reason: "only the namespace's own team account",
			obj: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pwn, namespace: payments}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: flux-team}
subjects: [{kind: ServiceAccount, name: default, namespace: payments}]`,
			want: "RoleBinding payments/pwn: binds only a Role, only to the ServiceAccount flux-system/team-payments",
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
	if err := e2e.Poll(ctx, time.Minute, func() (bool, error) { return apply(planted) == nil, nil }); err != nil {
		t.Errorf("with the policy unbound a ConfigMap in kube-system is still refused: the test cannot tell the policy works")
	}
}

func mustYAML(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	objs, err := e2e.DecodeYAML([]byte(s))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode %q: %v (%d objects)", s, err, len(objs))
	}
	return objs[0]
}
