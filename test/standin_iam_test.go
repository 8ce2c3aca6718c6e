package test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
)

// TestStandInAuthorizesEveryCall runs what the function composes for the
// committed claim through the stand-in AWS with every provider call
// authorized by the real IAM evaluator as the hub's Crossplane role (its
// policy as the program writes it): every resource is created, observed
// and deleted with no call denied. Then, with one permission the
// composition needs taken out of that policy, the resource that needs it
// fails with AWS's refusal naming the action and the resource, and nothing
// is created (or deleted) in its place.
func TestStandInAuthorizesEveryCall(t *testing.T) {
	info := clusterinfo.Example()
	in, err := compose.InputFrom(info)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../manifests/gitops-system/workload-clusters/apps-staging.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var claim workloadcluster.Claim
	if err := yaml.Unmarshal(raw, &claim); err != nil {
		t.Fatal(err)
	}
	env := in.Hub()
	issuer := "oidc.eks." + claim.Spec.Region + ".amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"
	got := convergeWithIssuer(t, compose.Params{Input: in, Spoke: claim.Metadata.Name, Spec: claim.Spec}, issuer)
	module, err := upstream.Dir(context.Background(), upstream.ProviderAWSModule, "v"+versions.ProviderAWS)
	if err != nil {
		t.Fatal(err)
	}
	toolDir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	addons, err := clusterinfo.ParseAddonVersions(info.SpokeAddonVersions)
	if err != nil {
		t.Fatal(err)
	}
	roleARN := "arn:" + env.Partition + ":iam::" + env.AccountID + ":role/" + hubiam.CrossplaneRoleName(env.HubName)

	cases := map[string]struct {
		reason string
		// without is the action taken out of the Crossplane policy.
		without string
		// kind and name are the managed resource that fails, with want in
		// its Synced message; at teardown when teardown is set.
		kind, name string
		teardown   bool
		want       []string
	}{
		"Complete": {reason: "The policy the program writes allows every call the provider makes for what the function composes."},
		"NoRouteTableCreate": {
			reason:  "CreateRouteTable is the provider's create of a route table (ec2/vpc_route_table.go:175).",
			without: "ec2:CreateRouteTable", kind: "RouteTable", name: claim.Metadata.Name + "-public",
			want: []string{"create failed: api error UnauthorizedOperation", "is not authorized to perform: ec2:CreateRouteTable on resource: arn:aws:ec2:" + claim.Spec.Region + ":" + env.AccountID + ":route-table/rtb-"},
		},
		"NoPassRole": {
			reason:  "EKS takes the cluster role only from a caller that may pass it.",
			without: "iam:PassRole", kind: "Cluster", name: claim.Metadata.Name + "-eks",
			want: []string{"create failed: api error AccessDenied", "iam:PassRole on resource: " + "arn:aws:iam::" + env.AccountID + ":role/" + env.SpokeRolePrefix() + claim.Metadata.Name + "-cluster"},
		},
		"NoEKSReads": {
			reason:  "The provider observes a cluster with DescribeCluster on every poll (eks/cluster.go:374).",
			without: "eks:Describe*", kind: "Cluster", name: claim.Metadata.Name + "-eks",
			want: []string{"observe failed: api error AccessDeniedException", "eks:DescribeCluster on resource: arn:aws:eks:" + claim.Spec.Region + ":" + env.AccountID + ":cluster/" + env.HubName + "-" + claim.Metadata.Name},
		},
		"NoLogGroupDelete": {
			reason:  "The control-plane log group goes with the spoke (logs/group.go resourceGroupDelete).",
			without: "logs:DeleteLogGroup", kind: "Group", name: claim.Metadata.Name + "-logs", teardown: true,
			want: []string{"delete failed: api error AccessDeniedException", "logs:DeleteLogGroup on resource: arn:aws:logs:" + claim.Spec.Region + ":" + env.AccountID + ":log-group:/aws/eks/" + env.HubName + "-" + claim.Metadata.Name + "/cluster"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			policy := hubiam.Crossplane(env)
			if tc.without != "" {
				policy = withoutAction(t, policy, tc.without)
			}
			authz, err := aws.NewAuthorizer(toolDir, map[string]policydoc.Document{env.BoundaryARN(): hubiam.SpokeBoundary(env)},
				map[string]aws.Role{roleARN: {Inline: []policydoc.Document{policy}}})
			if err != nil {
				t.Fatal(err)
			}
			defer authz.Close()
			c, mrs := standInCluster(t, got.Objects, roleARN)
			p := &aws.Provider{Client: c, Module: module, Account: env.AccountID, Partition: env.Partition, Ledger: aws.NewLedger(), IAM: authz,
				AddonVersions: addons}
			ctx := context.Background()
			converge := func(done func() bool) {
				t.Helper()
				for range 30 {
					if err := p.RunOnce(ctx); err != nil {
						t.Fatal(err)
					}
					if done() {
						return
					}
				}
			}
			ready := func() bool {
				for _, m := range mrs {
					if st, _ := condition(t, c, m, "Ready"); st != "True" {
						return false
					}
				}
				return true
			}
			converge(ready)
			if tc.without != "" && !tc.teardown {
				checkRefused(t, c, mrs, tc.kind, tc.name, tc.want)
				if strings.Contains(tc.want[0], "create failed") && slices.ContainsFunc(p.Ledger.All(), func(r aws.Resource) bool { return r.Owner == tc.name }) {
					t.Errorf("%s: %s/%s exists in the account although its create was denied", tc.reason, tc.kind, tc.name)
				}
				return
			}
			if !ready() {
				var not []string
				for _, m := range mrs {
					if st, _ := condition(t, c, m, "Ready"); st != "True" {
						_, msg := condition(t, c, m, "Synced")
						not = append(not, m.GetKind()+"/"+m.GetName()+": "+msg)
					}
				}
				t.Fatalf("%s: not Ready: %s; denied: %v; stand-in errors: %v", tc.reason, strings.Join(not, "; "), authz.Denied(), p.Errors())
			}
			// A tag edit of the claim (as its owning team may make it)
			// reaches every tagged resource: EC2's CreateTags, EKS's,
			// IAM's and CloudWatch Logs' TagResource calls.
			spec := claim.Spec
			spec.Tags = maps.Clone(spec.Tags)
			spec.Tags["cost-center"] = "42"
			edited := convergeWithIssuer(t, compose.Params{Input: in, Spoke: claim.Metadata.Name, Spec: spec}, issuer)
			for key, m := range mrs {
				o, ok := edited.Objects[key]
				if !ok {
					continue
				}
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(m.GroupVersionKind())
				if err := c.Get(ctx, client.ObjectKey{Name: m.GetName()}, u); err != nil {
					t.Fatal(err)
				}
				fp := o["spec"].(compose.Object)["forProvider"].(compose.Object)
				for _, f := range []string{"tags", "tagSpecifications"} {
					if v, ok := fp[f]; ok {
						b, _ := json.Marshal(v)
						var plain any
						_ = json.Unmarshal(b, &plain)
						_ = unstructured.SetNestedField(u.Object, plain, "spec", "forProvider", f)
					}
				}
				if err := c.Update(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			converge(func() bool {
				n := 0
				for _, r := range p.Ledger.All() {
					if r.Tags["cost-center"] == "42" {
						n++
					}
				}
				return n >= 20
			})
			var untagged []string
			for _, r := range p.Ledger.All() {
				if len(r.Tags) > 0 && r.Tags["cost-center"] != "42" {
					untagged = append(untagged, r.Kind+"/"+r.ID)
				}
			}
			if len(untagged) > 0 {
				t.Errorf("the tag edit did not reach %v; denied: %v; stand-in errors: %v", untagged, authz.Denied(), p.Errors())
			}
			// Crossplane's Usage webhook refuses deleting what a
			// composed hold keeps while its user exists: a resource is
			// deleted once everything holding it is gone.
			gone := func() bool { return len(p.Ledger.All()) == 0 }
			deleted := map[string]bool{}
			for range 30 {
				for key, m := range mrs {
					if deleted[key] || slices.ContainsFunc(compose.Holds(), func(h compose.Hold) bool {
						by, ok := mrs[h.By]
						return h.Of == key && ok && exists(t, c, by)
					}) {
						continue
					}
					if err := c.Delete(ctx, m); err != nil {
						t.Fatal(err)
					}
					deleted[key] = true
				}
				if err := p.RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
				if gone() {
					break
				}
			}
			if tc.teardown {
				checkRefused(t, c, mrs, tc.kind, tc.name, tc.want)
				left := p.Ledger.All()
				if len(left) != 1 || left[0].Owner != tc.name {
					t.Errorf("%s: the account holds %v, want only %s", tc.reason, left, tc.name)
				}
				return
			}
			if !gone() {
				t.Errorf("%s: the account still holds %v; denied: %v", tc.reason, p.Ledger.All(), authz.Denied())
			}
			if d := authz.Denied(); len(d) > 0 {
				t.Errorf("%s: calls denied: %v", tc.reason, d)
			}
			if errs := p.Errors(); len(errs) > 0 {
				t.Errorf("stand-in errors: %v", errs)
			}
		})
	}
}

// withoutAction is d with action taken out of every statement that names
// it (a statement left without actions goes); it fails when no statement
// names it.
func withoutAction(t *testing.T, d policydoc.Document, action string) policydoc.Document {
	t.Helper()
	out := policydoc.Document{Version: d.Version}
	found := false
	for _, st := range d.Statement {
		if st.Effect == policydoc.Allow && slices.Contains(st.Action, action) {
			found = true
			st.Action = slices.DeleteFunc(slices.Clone(st.Action), func(a string) bool { return a == action })
			if len(st.Action) == 0 {
				continue
			}
		}
		out.Statement = append(out.Statement, st)
	}
	if !found {
		t.Fatalf("no Allow statement of the Crossplane policy names %s", action)
	}
	return out
}

// standInCluster is a fake API server holding the composed managed
// resources, a CRD for each of their kinds, the hub's default
// ProviderConfig as the tree has it, and the ServiceAccount Crossplane
// makes for a provider revision, annotated with the role the
// DeploymentRuntimeConfig gives the providers.
func standInCluster(t *testing.T, objs map[string]compose.Object, roleARN string) (client.Client, map[string]*unstructured.Unstructured) {
	t.Helper()
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	mrs := map[string]*unstructured.Unstructured{}
	crds := map[string]client.Object{}
	for key, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(b, &u.Object); err != nil {
			t.Fatal(err)
		}
		gvk := u.GroupVersionKind()
		if !strings.HasSuffix(gvk.Group, ".aws.upbound.io") {
			continue
		}
		mrs[key] = u
		plural := strings.ToLower(gvk.Kind) + "s"
		crds[plural+"."+gvk.Group] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + "." + gvk.Group},
			"spec": map[string]any{"group": gvk.Group, "names": map[string]any{"kind": gvk.Kind, "plural": plural},
				"versions": []any{map[string]any{"name": gvk.Version, "served": true, "storage": true}}},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}},
		}}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: "upbound-provider-aws-ec2-0123456789ab", Namespace: "crossplane-system",
		Annotations:     map[string]string{fluxbootstrap.RoleARNAnnotation: roleARN},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "pkg.crossplane.io/v1", Kind: "ProviderRevision", Name: "upbound-provider-aws-ec2-0123456789ab", UID: "1"}},
	}}
	var all []client.Object
	for _, c := range crds {
		all = append(all, c)
	}
	var status []client.Object
	for _, m := range mrs {
		all, status = append(all, m), append(status, m)
	}
	b, err := os.ReadFile("../manifests/gitops-system/infrastructure/crossplane-config/provider-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pc := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &pc.Object); err != nil {
		t.Fatal(err)
	}
	all = append(all, sa, pc)
	return fake.NewClientBuilder().WithScheme(s).WithObjects(all...).WithStatusSubresource(status...).Build(), mrs
}

func exists(t *testing.T, c client.Client, m *unstructured.Unstructured) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind())
	return c.Get(context.Background(), client.ObjectKey{Name: m.GetName()}, u) == nil
}

func condition(t *testing.T, c client.Client, m *unstructured.Unstructured, typ string) (string, string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.GroupVersionKind())
	if err := c.Get(context.Background(), client.ObjectKey{Name: m.GetName()}, u); err != nil {
		return "", err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		if cm, ok := x.(map[string]any); ok && cm["type"] == typ {
			msg, _ := cm["message"].(string)
			st, _ := cm["status"].(string)
			return st, msg
		}
	}
	return "", ""
}

// checkRefused fails unless the managed resource kind/name is Synced False
// with every want in its message.
func checkRefused(t *testing.T, c client.Client, mrs map[string]*unstructured.Unstructured, kind, name string, want []string) {
	t.Helper()
	for _, m := range mrs {
		if m.GetKind() != kind || m.GetName() != name {
			continue
		}
		st, msg := condition(t, c, m, "Synced")
		if st != "False" {
			t.Fatalf("%s/%s Synced %q (%s), want False", kind, name, st, msg)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s/%s Synced message\n%s\nlacks %q", kind, name, msg, w)
			}
		}
		return
	}
	t.Fatalf("no composed %s/%s", kind, name)
}
