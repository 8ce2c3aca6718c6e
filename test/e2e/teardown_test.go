package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/lbsubnets"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/e2e"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/e2e/aws"
)

// The example app and its team's namespace on the spoke: the app's name
// is its Kustomization's, its Deployment's and its AppInfrastructure's, and
// starts the names of the managed resources the spoke's own Crossplane
// composes for it.
const (
	exampleApp   = "payment-app"
	exampleAppNS = "payments"
)

// ledgerLine names an account resource in the suite's messages: its kind,
// its ID and the managed resource that made it.
func ledgerLine(r aws.Resource) string { return r.Kind + " " + r.ID + " (" + r.Owner + ")" }

// spokeInfraKinds are what the spoke's pods need to reach AWS (compute,
// the EKS add-ons that give pods their network, DNS and services, and the
// network): none may go before the app's resources are deleted, or the
// spoke's Crossplane could no longer delete them (N3).
var spokeInfraKinds = []string{"NodeGroup", "Addon", "Cluster", "NATGateway", "EIP", "RouteTable", "Route", "RouteTableAssociation", "Subnet", "VPC", "InternetGateway"}

// teardown deletes the example claim as a pull request does (its file
// removed from the claims folder) with the app running on the spoke, and
// follows it until the account holds nothing of the spoke: the app's table,
// queues and role are deleted by the spoke's own Crossplane while the
// spoke's nodes and network still exist, then the rest (what the account
// holds of another claim, if any, is not counted); the node group and its
// add-ons, which the first bootstrap step holds (namespaced Usages of
// cluster-scoped objects), go only after that step.
func teardown(t *testing.T, h *e2e.Hub) {
	ctx := context.Background()
	exposeApp(t, h)
	other := map[string]bool{}
	var app []string
	for _, r := range h.Account.All() {
		switch {
		case strings.HasPrefix(r.Owner, exampleApp), r.Kind == aws.LoadBalancerKind:
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
			_, err := h.Cluster.Dynamic.Resource(kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, compose.BootstrapName(claimName, st.Part), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				stepGone[st.Part] = time.Since(start).Truncate(time.Second)
			}
		}
		left = nil
		for _, r := range h.Account.All() {
			if !other[r.Kind+"/"+r.ID] {
				left = append(left, ledgerLine(r))
			}
		}
		_, err := h.Cluster.Dynamic.Resource(claims).Namespace(claimNS).Get(ctx, claimName, metav1.GetOptions{})
		return len(left) == 0 && apierrors.IsNotFound(err), nil
	})
	if err != nil {
		_, s, _ := stepsReady(ctx, h, claimName, "")
		t.Fatalf("the claim's teardown did not end: %v\nleft in the account: %s\nhub steps:\n%s\nthe spoke:\n%s\nits load balancer controller: %v",
			err, strings.Join(left, "\n"), s, fluxState(ctx, h.EKS[claimName].Cluster), h.EKS[claimName].LoadBalancers.Errors())
	}
	t.Logf("claim removed from Git to nothing of it left in the account: %s", time.Since(start))
	var timeline []string
	for _, st := range compose.BootstrapSteps() {
		timeline = append(timeline, fmt.Sprintf("%s-%s gone after %s", claimName, st.Part, stepGone[st.Part]))
	}
	for _, d := range h.Account.Deletions() {
		if other[d.Kind+"/"+d.ID] {
			continue
		}
		after := d.At.Sub(start)
		timeline = append(timeline, fmt.Sprintf("%s %s deleted after %s", d.Kind, d.ID, after.Truncate(time.Second)))
		// What the first bootstrap step holds (namespaced Usages of
		// cluster-scoped objects): the node group and its add-ons.
		// The suite sees a step gone at its next look (every
		// quarter second, plus its reads): 2 s of slack.
		if (strings.HasSuffix(d.Kind, "/NodeGroup") || strings.HasSuffix(d.Kind, "/Addon")) && after+2*time.Second < stepGone[compose.BootstrapSteps()[0].Part] {
			t.Errorf("%s %s deleted %s after the claim, before %s was gone (%s)", d.Kind, d.ID, after,
				compose.BootstrapName(claimName, compose.BootstrapSteps()[0].Part), stepGone[compose.BootstrapSteps()[0].Part])
		}
	}
	t.Logf("teardown timeline:\n%s", strings.Join(timeline, "\n"))

	if err := appBeforeInfra(h.Account.Deletions(), app, other); err != nil {
		t.Errorf("%v:\n%s", err, strings.Join(h.Account.Log(), "\n"))
	}
	sort.Strings(app)
	t.Logf("the app's resources, deleted first: %s", fmt.Sprint(app))
}

// appBeforeInfra checks the teardown's order: every app resource ("Kind
// ID") was deleted, and before any of the spoke's compute and network
// (spokeInfraKinds; other holds "Kind/ID" of what is not the spoke's).
func appBeforeInfra(deletions []aws.Deletion, app []string, other map[string]bool) error {
	lastApp, firstInfra := -1, -1
	var infraLine string
	deleted := map[string]bool{}
	for i, d := range deletions {
		if slices.Contains(app, d.Kind+" "+d.ID) {
			lastApp, deleted[d.Kind+" "+d.ID] = i, true
		}
		for _, k := range spokeInfraKinds {
			if strings.HasSuffix(d.Kind, "/"+k) && firstInfra < 0 && !other[d.Kind+"/"+d.ID] {
				firstInfra, infraLine = i, d.Kind+" "+d.ID
			}
		}
	}
	var kept []string
	for _, a := range app {
		if !deleted[a] {
			kept = append(kept, a)
		}
	}
	switch {
	case len(app) == 0:
		return fmt.Errorf("no app resource to check the teardown's order by")
	case len(kept) > 0:
		return fmt.Errorf("the app's resources %v were never deleted", kept)
	case firstInfra < 0:
		return fmt.Errorf("none of the spoke's compute and network was deleted")
	case lastApp > firstInfra:
		return fmt.Errorf("the app's resources (%v) were not all deleted before the spoke's compute and network (first: %s; last app deletion %d, first infrastructure deletion %d)",
			app, infraLine, lastApp, firstInfra)
	}
	return nil
}

// The teardown's order check fails when an app resource (the load
// balancer) goes after the spoke's network or not at all.
func TestTeardownOrderCheck(t *testing.T) {
	const (
		lb     = aws.LoadBalancerKind + " arn:lb"
		table  = "dynamodb.aws.upbound.io/Table t"
		subnet = "ec2.aws.upbound.io/Subnet subnet-1"
	)
	del := func(lines ...string) []aws.Deletion {
		var out []aws.Deletion
		for _, l := range lines {
			kind, id, _ := strings.Cut(l, " ")
			out = append(out, aws.Deletion{Kind: kind, ID: id})
		}
		return out
	}
	cases := map[string]struct {
		reason    string
		deletions []aws.Deletion
		other     map[string]bool
		want      string // a substring of the error; empty: none
	}{
		"AppFirst":         {reason: "the order the product promises", deletions: del(table, lb, subnet)},
		"LoadBalancerLate": {reason: "a load balancer deleted after a subnet of the spoke", deletions: del(table, subnet, lb), want: "not all deleted before the spoke's compute and network (first: " + subnet},
		"LoadBalancerLeft": {reason: "a load balancer orphaned", deletions: del(table, subnet), want: "[" + lb + "] were never deleted"},
		"OtherSpokesSubnet": {reason: "another spoke's subnet is not this spoke's network", deletions: del("ec2.aws.upbound.io/Subnet subnet-0", table, lb, subnet),
			other: map[string]bool{"ec2.aws.upbound.io/Subnet/subnet-0": true}},
		"NoInfra": {reason: "a teardown that deleted none of the spoke's network", deletions: del(table, lb), want: "none of the spoke's compute and network"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := appBeforeInfra(tc.deletions, []string{lb, table}, tc.other)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: %v", tc.reason, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: error %v, want one with %q", tc.reason, err, tc.want)
			}
		})
	}
}

// appNLB is a Service of the example app that asks the load balancer
// controller for a network load balancer (the annotations its docs give),
// which teardown adds to the app's staging overlay.
const appNLB = `apiVersion: v1
kind: Service
metadata:
  name: payment-app-nlb
  annotations:
    service.beta.kubernetes.io/aws-load-balancer-type: external
    service.beta.kubernetes.io/aws-load-balancer-nlb-target-type: ip
spec:
  type: LoadBalancer
  selector:
    app.kubernetes.io/name: payment-app
  ports:
    - name: http
      port: 80
      targetPort: http
      protocol: TCP
`

// exposeApp commits a type LoadBalancer Service to the example app, as its
// team would, and waits until the spoke's load balancer controller has
// made its load balancer in the spoke's subnets.
func exposeApp(t *testing.T, h *e2e.Hub) {
	t.Helper()
	ctx := context.Background()
	eks := h.EKS[claimName]
	dir := filepath.Dir(appOverlay)
	if err := os.WriteFile(filepath.Join(h.Repo.Work, filepath.FromSlash(dir), "service-nlb.yaml"), []byte(appNLB), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Edit(appOverlay, "  - appinfrastructure.yaml\n", "  - appinfrastructure.yaml\n  - service-nlb.yaml\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Commit(exampleApp + ": a network load balancer"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	requestFluxReconcile(t, eks.Cluster, fluxObject{gitRepositories, "flux-system"})
	var lbs []aws.Resource
	err := e2e.Poll(ctx, 4*time.Minute, func() (bool, error) {
		lbs = h.Account.Find(aws.LoadBalancerKind, func(r aws.Resource) bool { return r.Owner == "service payments/payment-app-nlb" })
		return len(lbs) == 1, nil
	})
	if err != nil {
		t.Fatalf("no load balancer for payments/payment-app-nlb: %v\nthe controller: %v\nthe spoke:\n%s", err, eks.LoadBalancers.Errors(), fluxState(ctx, eks.Cluster))
	}
	// in the spoke's own VPC, in its private subnets
	vpcs := h.Account.Find("VPC", func(r aws.Resource) bool { return strings.HasPrefix(r.Owner, claimName+"-") })
	if len(vpcs) != 1 || lbs[0].Attrs["vpcId"] != vpcs[0].ID {
		t.Fatalf("load balancer %s in VPC %v, want the spoke's (%v)", lbs[0].Name, lbs[0].Attrs["vpcId"], vpcs)
	}
	subnets, _ := lbs[0].Attrs["subnets"].([]any)
	for _, id := range subnets {
		s := h.Account.Find("Subnet", func(r aws.Resource) bool { return r.ID == id })
		if len(s) != 1 || !strings.HasPrefix(s[0].Owner, claimName+"-") || s[0].Tags[lbsubnets.Internal] != "1" {
			t.Fatalf("load balancer %s in subnet %v, want the spoke's private subnets: %v", lbs[0].Name, id, s)
		}
	}
	if len(subnets) == 0 {
		t.Fatalf("load balancer %s in no subnet", lbs[0].Name)
	}
	t.Logf("load balancer %s in %v, %s after the commit", lbs[0].Name, subnets, time.Since(start).Truncate(time.Second))
	checkLoadBalancerFence(t, h, lbs[0], subnets)
}

// checkLoadBalancerFence evaluates, with the real IAM evaluator, the
// controller's request for the load balancer it made against what the hub
// composed for its role (its policies and tags as the stand-in account
// holds them, with the subnet IDs the account assigned) under the hub's
// boundary: allowed; the same request naming a subnet that is not the
// spoke's, or none: denied (spokeiam.SubnetFence).
func checkLoadBalancerFence(t *testing.T, h *e2e.Hub, lb aws.Resource, subnets []any) {
	t.Helper()
	env, err := h.HubEnv()
	if err != nil {
		t.Fatal(err)
	}
	info, err := h.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	roleName := spokeiam.RoleName(env, claimName, spokeiam.RoleLBC)
	roles := h.Account.Find("Role", func(r aws.Resource) bool { return r.Name == roleName })
	if len(roles) != 1 {
		t.Fatalf("role %s: %d in the account", roleName, len(roles))
	}
	ctx := map[string]any{"aws:PrincipalArn": roles[0].ARN}
	for k, v := range roles[0].Tags {
		ctx["aws:PrincipalTag/"+k] = v
	}
	var identity []iamsim.Policy
	for _, rp := range h.Account.Find("RolePolicy", func(r aws.Resource) bool { return r.Attrs["role"] == roleName }) {
		var d policydoc.Document
		if err := json.Unmarshal([]byte(fmt.Sprint(rp.Attrs["policy"])), &d); err != nil {
			t.Fatalf("role policy %s: %v", rp.Name, err)
		}
		identity = append(identity, iamsim.Policy{Name: rp.Name, Policy: d})
	}
	if len(identity) == 0 {
		t.Fatalf("role %s has no policy in the account", roleName)
	}
	boundary := hubiam.SpokeBoundary(env, info[clusterinfo.SealingSecretARN], info[clusterinfo.SealingKMSKeyARN])
	var own []string
	for _, s := range subnets {
		own = append(own, fmt.Sprint(s))
	}
	request := func(id string, subnets []string) iamsim.Request {
		c := maps.Clone(ctx)
		for k, v := range lb.Tags {
			c["aws:RequestTag/"+k] = v
		}
		c["aws:TagKeys"] = slices.Sorted(maps.Keys(lb.Tags))
		if subnets != nil {
			c[spokeiam.SubnetConditionKey] = subnets
		}
		return iamsim.Request{ID: id, Principal: roles[0].ARN, Action: "elasticloadbalancing:CreateLoadBalancer", Resource: lb.ARN,
			AccountID: env.AccountID, Context: c, IdentityPolicies: identity, Boundary: &boundary}
	}
	dir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := iamsim.Run(dir, []iamsim.Request{
		request("own subnets", own),
		request("one subnet not the spoke's", append(slices.Clone(own), "subnet-0123456789abcdef0")),
		request("no subnet", nil),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"own subnets": iamsim.Allowed, "one subnet not the spoke's": iamsim.ExplicitlyDenied, "no subnet": iamsim.ExplicitlyDenied}
	for _, r := range res {
		if r.Decision != want[r.ID] {
			t.Errorf("the controller's CreateLoadBalancer %s (%s): %s %v, want %s", lb.Name, r.ID, r.Decision, r.Errors, want[r.ID])
		}
	}
}
