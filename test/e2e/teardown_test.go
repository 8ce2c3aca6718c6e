package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/lbsubnets"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// The example app and its team's namespace on the spoke: the app's name
// is its Kustomization's, its Deployment's and its AppInfrastructure's, and
// starts the names of the managed resources the spoke's own Crossplane
// composes for it.
const (
	exampleApp   = "payment-app"
	exampleAppNS = "payments"
)

// keptClaim is a second AppInfrastructure of the example app, with
// deletion protection on as the production overlay has it, which
// extendApp adds to the staging overlay: its table is kept in AWS when the
// claim goes, and the teardown does not wait for it (N13).
const (
	keptClaim = "payment-archive"
	tableKind = "dynamodb.aws.upbound.io/Table"
)

// keptClaimFile is keptClaim as its team commits it: the app's staging
// claim (stagingClaim, the overlay's file) renamed, without its queue
// settings (the API's defaults apply: its queues are still composed), with
// deletion protection on.
func keptClaimFile(stagingClaim []byte) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(stagingClaim, &u.Object); err != nil {
		return nil, fmt.Errorf("the app's staging claim: %w", err)
	}
	if _, ok, _ := unstructured.NestedMap(u.Object, "spec", "table"); !ok || u.GetName() != exampleApp {
		return nil, fmt.Errorf("the app's staging claim is not %s's with a table: %v", exampleApp, u.Object)
	}
	u.SetName(keptClaim)
	unstructured.RemoveNestedField(u.Object, "spec", "queue")
	if err := unstructured.SetNestedField(u.Object, true, "spec", "table", "deletionProtection"); err != nil {
		return nil, err
	}
	return yaml.Marshal(u.Object)
}

// spokeInfraKinds are what the spoke's pods need to reach AWS (compute,
// the EKS add-ons that give pods their network, DNS and services, and the
// network): none may go before the app's resources are deleted, or the
// spoke's Crossplane could no longer delete them (N3).
var spokeInfraKinds = []string{"NodeGroup", "Addon", "Cluster", "NATGateway", "EIP", "RouteTable", "Route", "RouteTableAssociation", "Subnet", "VPC", "InternetGateway"}

// teardown deletes the example claim as a pull request does (its file
// removed from the claims folder) with the app running on the spoke, and
// follows it until the account holds nothing of the spoke but the
// protected table of keptClaim: the app's table, queues and role are
// deleted by the spoke's own Crossplane while the spoke's nodes and network
// still exist, then the rest (what the account holds of another claim, if
// any, is not counted); the node group and its add-ons, which the first
// bootstrap step holds (namespaced Usages of cluster-scoped objects), go
// only after that step. The protected table is orphaned, never asked to be
// deleted: DynamoDB would refuse, and the teardown would wait on it.
func teardown(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	extendApp(t, h)
	other := map[string]bool{}
	kept := map[string]aws.Resource{}
	var app []string
	for _, r := range h.Account.All() {
		switch {
		case strings.HasPrefix(r.Owner, keptClaim+"-") && r.Kind == tableKind:
			kept[r.Kind+"/"+r.ID] = r
		case strings.HasPrefix(r.Owner, exampleApp+"-"), strings.HasPrefix(r.Owner, keptClaim+"-"), r.Kind == aws.LoadBalancerKind:
			app = append(app, r.Kind+" "+r.ID)
		case !strings.HasPrefix(r.Owner, claimName+"-"):
			other[r.Kind+"/"+r.ID] = true
		}
	}
	if len(app) == 0 || len(kept) != 1 {
		t.Fatalf("before the teardown the account holds of the app %v, and of %s's table %v (want one)", app, keptClaim, kept)
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
	check.RequestReconcile(t, h)
	var left []string
	// When each bootstrap step was gone from the hub.
	stepGone := map[string]time.Duration{}
	err := kube.Poll(ctx, teardownBound, func() (bool, error) {
		for _, st := range compose.BootstrapSteps() {
			if _, seen := stepGone[st.Part]; seen {
				continue
			}
			_, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, compose.BootstrapName(claimName, st.Part), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				stepGone[st.Part] = time.Since(start).Truncate(time.Second)
			}
		}
		left = nil
		for _, r := range h.Account.All() {
			if _, keep := kept[r.Kind+"/"+r.ID]; !keep && !other[r.Kind+"/"+r.ID] {
				left = append(left, check.LedgerLine(r))
			}
		}
		_, err := h.Cluster.Dynamic.Resource(check.Claims).Namespace(claimNS).Get(ctx, claimName, metav1.GetOptions{})
		return len(left) == 0 && apierrors.IsNotFound(err), nil
	})
	if err != nil {
		var steps []string
		for _, st := range compose.BootstrapSteps() {
			if gone, ok := stepGone[st.Part]; ok {
				steps = append(steps, fmt.Sprintf("%s gone after %s", compose.BootstrapName(claimName, st.Part), gone))
				continue
			}
			o, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, compose.BootstrapName(claimName, st.Part), metav1.GetOptions{})
			if err != nil {
				steps = append(steps, fmt.Sprintf("%s: %v", compose.BootstrapName(claimName, st.Part), err))
				continue
			}
			line := o.GetName()
			if d := o.GetDeletionTimestamp(); d != nil {
				line += " (deleting since " + d.Format(time.TimeOnly) + ")"
			}
			ready, reason, msg := check.Condition(o, "Ready")
			steps = append(steps, fmt.Sprintf("%s Ready=%s %s: %s", line, ready, reason, msg))
		}
		t.Fatalf("the claim's teardown did not end: %v\nleft in the account: %s\nAWS refused: %s\nhub steps:\n%s\nthe spoke:\n%s\nits load balancer controller: %v",
			err, strings.Join(left, "\n"), strings.Join(refusals(h.Account.Refused()), "\n"), strings.Join(steps, "\n"),
			fluxState(ctx, h.EKS[claimName].Cluster), h.EKS[claimName].LoadBalancers.Errors())
	}
	t.Logf("claim removed from Git to nothing of it left in the account but %s's protected table: %s", keptClaim, time.Since(start))
	if err := keptTable(h.Account.Refused(), h.Account.Orphaned(), h.Account.Find(tableKind, nil), slices.Collect(maps.Values(kept))); err != nil {
		t.Errorf("%v\n%s", err, strings.Join(h.Account.Log(), "\n"))
	}
	var timeline []string
	for _, st := range compose.BootstrapSteps() {
		timeline = append(timeline, fmt.Sprintf("%s-%s gone after %s", claimName, st.Part, stepGone[st.Part]))
	}
	// The teardown's deletions: what the scenarios before deleted (the node
	// group an instance types change replaced) is not the teardown's order.
	var deletions []aws.Deletion
	for _, d := range h.Account.Deletions() {
		if !d.At.Before(start) {
			deletions = append(deletions, d)
		}
	}
	for _, d := range deletions {
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

	if err := appBeforeInfra(deletions, app, other); err != nil {
		t.Errorf("%v:\n%s", err, strings.Join(h.Account.Log(), "\n"))
	}
	sort.Strings(app)
	t.Logf("the app's resources, deleted first: %s", fmt.Sprint(app))
}

// refusals are the deletes the account refused, each once, with AWS's
// reason.
func refusals(refused []aws.Refusal) []string {
	var out []string
	for _, r := range refused {
		if l := r.Kind + " " + r.ID + ": " + r.Reason; !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// keptTable checks what the teardown left of a protected table (kept
// as the account held it before): still in the account (tables), its
// deletion protection on, and orphaned by the spoke's Crossplane
// (orphaned) without a delete being asked of AWS (refused).
func keptTable(refused []aws.Refusal, orphaned []aws.Deletion, tables, kept []aws.Resource) error {
	var errs []error
	for _, k := range kept {
		kind, id := k.Kind, k.ID
		i := slices.IndexFunc(tables, func(r aws.Resource) bool { return r.Kind == kind && r.ID == id })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s %s, protected, was deleted: want it kept", kind, id))
			continue
		}
		if on, _ := tables[i].Attrs["deletionProtectionEnabled"].(bool); !on {
			errs = append(errs, fmt.Errorf("%s %s kept without its deletion protection", kind, id))
		}
		if j := slices.IndexFunc(refused, func(r aws.Refusal) bool { return r.Kind == kind && r.ID == id }); j >= 0 {
			errs = append(errs, fmt.Errorf("%s %s: a delete was asked of AWS (refused: %s); want deletionPolicy Orphan", kind, id, refused[j].Reason))
		}
		if !slices.ContainsFunc(orphaned, func(o aws.Deletion) bool { return o.Kind == kind && o.ID == id }) {
			errs = append(errs, fmt.Errorf("%s %s was never orphaned by its managed resource", kind, id))
		}
	}
	return errors.Join(errs...)
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

// The kept-table check fails when a protected table was deleted, lost its
// protection, or was asked of AWS to be deleted rather than orphaned.
func TestKeptTableCheck(t *testing.T) {
	table := aws.Resource{Kind: tableKind, ID: "t", Attrs: map[string]any{"deletionProtectionEnabled": true}}
	unprotected := aws.Resource{Kind: tableKind, ID: "t", Attrs: map[string]any{"deletionProtectionEnabled": false}}
	orphan := []aws.Deletion{{Kind: tableKind, ID: "t"}}
	refused := []aws.Refusal{{Kind: tableKind, ID: "t", Reason: "deletion protection"}}
	cases := map[string]struct {
		reason   string
		refused  []aws.Refusal
		orphaned []aws.Deletion
		tables   []aws.Resource
		want     string // a substring of the error; empty: none
	}{
		"Orphaned":    {reason: "the managed resource orphaned the table", orphaned: orphan, tables: []aws.Resource{table}},
		"Deleted":     {reason: "the table is gone", orphaned: orphan, want: "was deleted: want it kept"},
		"Unprotected": {reason: "the table's protection was turned off", orphaned: orphan, tables: []aws.Resource{unprotected}, want: "without its deletion protection"},
		"DeleteAsked": {reason: "a delete was asked first and refused (deletionPolicy Delete at first)", refused: refused, orphaned: orphan, tables: []aws.Resource{table},
			want: "a delete was asked of AWS (refused: deletion protection)"},
		"OtherOrphaned": {reason: "another table orphaned is not this one", orphaned: []aws.Deletion{{Kind: tableKind, ID: "u"}}, tables: []aws.Resource{table}, want: "never orphaned"},
		"NeverOrphaned": {reason: "the managed resource never went", tables: []aws.Resource{table}, want: "never orphaned"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := keptTable(tc.refused, tc.orphaned, tc.tables, []aws.Resource{table})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: %v", tc.reason, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: error %v, want one with %q", tc.reason, err, tc.want)
			}
		})
	}
}

// The teardown's failure names each refused delete once, with AWS's reason.
func TestRefusals(t *testing.T) {
	refused := []aws.Refusal{
		{Kind: tableKind, ID: "t", Reason: "deletion protection"},
		{Kind: tableKind, ID: "t", Reason: "deletion protection"},
		{Kind: "ec2.aws.upbound.io/VPC", ID: "vpc-1", Reason: "used by subnet-1"},
	}
	want := []string{tableKind + " t: deletion protection", "ec2.aws.upbound.io/VPC vpc-1: used by subnet-1"}
	if diff := cmp.Diff(want, refusals(refused)); diff != "" {
		t.Errorf("refusals: -want +got:\n%s", diff)
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

// extendApp commits a type LoadBalancer Service and keptClaim to the
// example app, as its team would, and waits until the spoke's load
// balancer controller has made its load balancer in the spoke's subnets
// and keptClaim reports its table protected, as AWS reports it.
func extendApp(t *testing.T, h *site.Hub) {
	t.Helper()
	ctx := context.Background()
	eks := h.EKS[claimName]
	dir := filepath.Join(h.Repo.Work, filepath.FromSlash(filepath.Dir(appOverlay)))
	staging, err := os.ReadFile(filepath.Join(dir, "appinfrastructure.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	archive, err := keptClaimFile(staging)
	if err != nil {
		t.Fatal(err)
	}
	for file, text := range map[string][]byte{"service-nlb.yaml": []byte(appNLB), "appinfrastructure-archive.yaml": archive} {
		if err := os.WriteFile(filepath.Join(dir, file), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Repo.Edit(appOverlay, "  - appinfrastructure.yaml\n", "  - appinfrastructure.yaml\n  - appinfrastructure-archive.yaml\n  - service-nlb.yaml\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Commit(exampleApp + ": a network load balancer, a protected archive table"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	check.RequestFluxReconcile(t, eks.Cluster, check.FluxObject{GVR: check.GitRepositories, Name: "flux-system"})
	var lbs []aws.Resource
	err = kube.Poll(ctx, commitBound, func() (bool, error) {
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

	// Ready too: every resource of the claim is in the account before the
	// teardown, so the teardown's order covers them all.
	var reported any
	var ready, reason, msg string
	var tables []aws.Resource
	err = kube.Poll(ctx, settleBound, func() (bool, error) {
		claim, err := eks.Cluster.Dynamic.Resource(check.AppInfrastructures).Namespace(exampleAppNS).Get(ctx, keptClaim, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		reported, _, _ = unstructured.NestedFieldNoCopy(claim.Object, "status", "tableDeletionProtection")
		ready, reason, msg = check.Condition(claim, "Ready")
		name, _, _ := unstructured.NestedString(claim.Object, "status", "tableName")
		tables = h.Account.Find(tableKind, func(r aws.Resource) bool { return name != "" && r.Name == name })
		return reported == true && ready == "True" && len(tables) == 1 && tables[0].Attrs["deletionProtectionEnabled"] == true, nil
	})
	if err != nil {
		t.Fatalf("%s/%s is not Ready with its table protected: Ready=%s %s: %s, status.tableDeletionProtection %v, its table %v: %v\nthe spoke:\n%s",
			exampleAppNS, keptClaim, ready, reason, msg, reported, tables, err, fluxState(ctx, eks.Cluster))
	}
	t.Logf("%s Ready, its table %s protected and reported so, %s after the commit", keptClaim, tables[0].ID, time.Since(start).Truncate(time.Second))
}

// checkLoadBalancerFence evaluates, with the real IAM evaluator, the
// controller's request for the load balancer it made against what the hub
// composed for its role (its policies and tags as the stand-in account
// holds them, with the subnet IDs the account assigned) under the hub's
// boundary: allowed; the same request naming a subnet that is not the
// spoke's, or none: denied (spokeiam.SubnetFence).
func checkLoadBalancerFence(t *testing.T, h *site.Hub, lb aws.Resource, subnets []any) {
	t.Helper()
	env, err := h.HubEnv()
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
	boundary := hubiam.SpokeBoundary(env)
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

// The protected claim is the app's staging claim renamed, without its
// queue settings, with deletion protection on; anything else is refused.
func TestKeptClaimFile(t *testing.T) {
	staging, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(filepath.Dir(appOverlay)), "appinfrastructure.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason  string
		staging []byte
		want    string
		wantErr bool
	}{
		"StagingOverlay": {
			reason:  "the overlay's claim, renamed, its queue settings dropped, its table protected",
			staging: staging,
			want: `apiVersion: platform.eksfleet.io/v1alpha1
kind: AppInfrastructure
metadata:
  name: payment-archive
spec:
  serviceAccountName: payment-app
  table:
    billingMode: PAY_PER_REQUEST
    deletionProtection: true
    hashKey: paymentId
    hashKeyType: S
    pointInTimeRecovery: false
`,
		},
		"NoTable":  {reason: "a claim without a table has nothing to keep", staging: []byte("kind: AppInfrastructure\nmetadata:\n  name: payment-app\nspec: {}\n"), wantErr: true},
		"OtherApp": {reason: "another app's claim is not the example app's", staging: []byte("kind: AppInfrastructure\nmetadata:\n  name: orders\nspec:\n  table: {hashKey: id}\n"), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := keptClaimFile(tc.staging)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("%s: error %v, want error %v", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, string(got)); !tc.wantErr && diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
