package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/lbsubnets"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

const (
	claimFile = "manifests/gitops-system/workload-clusters/apps-staging.yaml"
	claimNS   = "workload-clusters"
	claimName = "apps-staging"
)

// composedKinds are the kinds a claim's spoke is made of once AWS has
// reported what the later stages need.
var composedKinds = []string{"VPC", "InternetGateway", "Subnet", "EIP", "NATGateway", "RouteTable", "Route", "RouteTableAssociation",
	"Group", "Role", "RolePolicy", "RolePolicyAttachment", "Cluster", "LaunchTemplate", "NodeGroup", "AccessEntry", "AccessPolicyAssociation", "Addon",
	"OpenIDConnectProvider", "Kustomization"}

// composed is one composed resource with its conditions.
type composed struct {
	ref             schema.GroupVersionKind
	name            string
	synced, ready   string
	syncedMsg       string
	externalName    string
	resourceVersion string
	// written is what is written to the object outside its status: its
	// generation (spec), labels, annotations and each manager's last
	// write.
	written         string
	managedByAWSFam bool
	// exists: the object was read; deleting: it has a deletion timestamp.
	exists, deleting bool
}

// composedResources reads the claim's composite and every resource it
// composed.
func composedResources(ctx context.Context, h *site.Hub) (claim *unstructured.Unstructured, out []composed, err error) {
	return composedResourcesOf(ctx, h, claimName)
}

// composedResourcesOf reads the composite of the claim name and every
// resource it composed.
func composedResourcesOf(ctx context.Context, h *site.Hub, name string) (claim *unstructured.Unstructured, out []composed, err error) {
	claim, err = h.Cluster.Dynamic.Resource(check.Claims).Namespace(claimNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	xr, _, err := compositeOf(ctx, h, claim)
	if err != nil {
		return claim, nil, err
	}
	refs, _, _ := unstructured.NestedSlice(xr.Object, "spec", "crossplane", "resourceRefs")
	if refs == nil {
		refs, _, _ = unstructured.NestedSlice(xr.Object, "spec", "resourceRefs")
	}
	for _, r := range refs {
		m, _ := r.(map[string]any)
		gv, _ := schema.ParseGroupVersion(m["apiVersion"].(string))
		gvk := gv.WithKind(m["kind"].(string))
		c := composed{ref: gvk, name: m["name"].(string), managedByAWSFam: strings.HasSuffix(gv.Group, ".aws.upbound.io")}
		gvr, err := resourceFor(h, gvk)
		if err != nil {
			// A kind no installed provider serves: the API server has no
			// such resource.
			c.syncedMsg = err.Error()
			out = append(out, c)
			continue
		}
		ns, _ := m["namespace"].(string)
		o, err := h.Cluster.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, c.name, metav1.GetOptions{})
		if err == nil {
			c.exists, c.deleting = true, o.GetDeletionTimestamp() != nil
			c.synced, _, c.syncedMsg = check.Condition(o, "Synced")
			c.ready, _, _ = check.Condition(o, "Ready")
			c.externalName = o.GetAnnotations()["crossplane.io/external-name"]
			c.resourceVersion = o.GetResourceVersion()
			// Every write but the status subresource's leaves its
			// manager's managedFields time.
			var writes []string
			for _, m := range o.GetManagedFields() {
				if m.Subresource == "" && m.Time != nil {
					writes = append(writes, m.Manager+" "+m.Time.UTC().Format(time.RFC3339))
				}
			}
			c.written = fmt.Sprintf("generation %d, labels %v, annotations %v, writes %v", o.GetGeneration(), o.GetLabels(), o.GetAnnotations(), writes)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ref.Kind+out[i].name < out[j].ref.Kind+out[j].name })
	return claim, out, nil
}

// compositeOf is the composite resource of claim, and its API resource.
func compositeOf(ctx context.Context, h *site.Hub, claim *unstructured.Unstructured) (*unstructured.Unstructured, schema.GroupVersionResource, error) {
	ref, _, _ := unstructured.NestedMap(claim.Object, "spec", "resourceRef")
	if ref == nil {
		ref, _, _ = unstructured.NestedMap(claim.Object, "spec", "crossplane", "resourceRef")
	}
	if ref == nil {
		return nil, schema.GroupVersionResource{}, fmt.Errorf("claim %s has no composite yet", claim.GetName())
	}
	gv, _ := schema.ParseGroupVersion(fmt.Sprint(ref["apiVersion"]))
	gvr, err := resourceFor(h, gv.WithKind(fmt.Sprint(ref["kind"])))
	if err != nil {
		return nil, gvr, err
	}
	xr, err := h.Cluster.Dynamic.Resource(gvr).Get(ctx, fmt.Sprint(ref["name"]), metav1.GetOptions{})
	return xr, gvr, err
}

func resourceFor(h *site.Hub, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	m, err := h.Cluster.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}

// describeComposed is one line per composed resource.
func describeComposed(out []composed) string {
	var b strings.Builder
	for _, c := range out {
		fmt.Fprintf(&b, "%s %s Synced=%s Ready=%s external-name=%q %s\n", c.ref.Kind, c.name, c.synced, c.ready, c.externalName, c.syncedMsg)
	}
	return b.String()
}

// claimComposed waits for the example claim to be Synced with every
// composed managed resource Synced and Ready; the error says what is not.
func claimComposed(ctx context.Context, h *site.Hub, timeout time.Duration) error {
	return claimComposedOf(ctx, h, claimName, timeout)
}

// claimComposedOf is claimComposed for the claim name.
func claimComposedOf(ctx context.Context, h *site.Hub, name string, timeout time.Duration) error {
	var last string
	err := kube.Poll(ctx, timeout, func() (bool, error) {
		claim, out, err := composedResourcesOf(ctx, h, name)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		st, reason, msg := check.Condition(claim, "Synced")
		last = fmt.Sprintf("claim Synced=%s %s: %s\n%s", st, reason, msg, describeComposed(out))
		if st != "True" || len(out) == 0 {
			return false, nil
		}
		kinds := map[string]bool{}
		for _, c := range out {
			kinds[c.ref.Kind] = true
			if c.managedByAWSFam && (c.synced != "True" || c.ready != "True") {
				return false, nil
			}
		}
		// The function composes in stages (the cluster after its log
		// group, the OIDC provider and the bootstrap once AWS reports the
		// issuer): done when every kind of the last stage is there too.
		var missing []string
		for _, k := range composedKinds {
			if !kinds[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			last += fmt.Sprintf("not composed yet: %v\n", missing)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("claim %s/%s not composed (%v):\n%s\nstand-in errors: %v", claimNS, name, err, last, h.AWS.Errors())
	}
	return nil
}

// claimComposes checks the example claim on the hub: Synced, every
// composed managed resource Ready and Synced in the stand-in account, each
// external name a resource the account holds, nothing rewritten at rest;
// then natMode single -> per-az reroutes every private subnet through the
// NAT gateway of its own zone, Crossplane's webhook refuses to delete a
// resource a Usage holds, the observed cluster losing its issuer deletes
// nothing, AWS errors on a node group update are retried and, when they
// persist, shown on the claim, a Kubernetes upgrade runs in EKS's order, a
// change of the node group's instance types replaces the group
// blue/green, and a second spoke's lead time is measured; last, the hub's
// bootstrap reaches the example spoke's cluster (spokeBootstrap) and the
// spoke keeps syncing Git while the hub's API server is stopped (hubDown),
// and the claim's deletion leaves nothing of the spoke in the account
// (teardown).
func claimComposes(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	clockCtx, stopClock := context.WithCancel(ctx)
	defer stopClock()
	clock := startStepClock(clockCtx, h)
	start := time.Now()
	if err := claimComposed(ctx, h, composeBound); err != nil {
		t.Fatal(err)
	}
	t.Logf("claim composed in %s", time.Since(start))
	claim, out, _ := composedResources(ctx, h)
	ready, reason, msg := check.Condition(claim, "Ready")
	t.Logf("claim Ready=%s %s: %s (Ready once the bootstrap is done: spokeBootstrap)\n%s", ready, reason, msg, describeComposed(out))
	for _, c := range out {
		if !c.managedByAWSFam {
			continue
		}
		kind := c.ref.Group + "/" + c.ref.Kind
		found := h.Account.Find(kind, func(r aws.Resource) bool { return r.Name == c.externalName })
		if len(found) != 1 {
			t.Errorf("%s %s: external name %q is %d resources in the account", c.ref.Kind, c.name, c.externalName, len(found))
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	runChain(t, exampleClaimScenarios(h, clock))
}

// natPerAZ commits natMode per-az and waits for every private subnet to
// route through a NAT gateway in its own zone.
func natPerAZ(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	if want := 1; len(h.Account.Find("NATGateway", nil)) != want {
		t.Fatalf("natMode single: %d NAT gateways, want %d", len(h.Account.Find("NATGateway", nil)), want)
	}
	start := time.Now()
	commit(t, h, "natMode: single", "natMode: per-az", "apps-staging: a NAT gateway per zone")
	var state string
	err := kube.Poll(ctx, replaceBound, func() (bool, error) {
		var ok bool
		ok, state = privateRoutesPerZone(h.Account)
		return ok, nil
	})
	if err != nil {
		t.Fatalf("private subnets not rerouted: %v\n%s", err, state)
	}
	t.Logf("commit to every private subnet rerouted: %s", time.Since(start))
}

// instanceTypesReplaced commits another instance type, which EKS cannot
// change on a node group (ForceNew: upjet refuses the update, and with it
// every other change of the group): the function replaces the group
// blue/green. A second group (compose.NodeGroupSlots) is created with the
// new types, and the old one is deleted only once the new one is ACTIVE.
// The claim ends
// NodeGroupAsSpecified=True and ResourcesSynced=True, with the scaling
// and Kubernetes version the scenarios before left.
func instanceTypesReplaced(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	start := time.Now()
	before := h.Account.Find("NodeGroup", nil)
	if len(before) != 1 || fmt.Sprint(before[0].Attrs["instanceTypes"]) != "[m6i.large]" {
		t.Fatalf("want one m6i.large node group before the change, have %d: %v", len(before), before)
	}
	old := before[0]
	commit(t, h, "      - m6i.large\n    min:", "      - m7i.large\n    min:", "apps-staging: m7i nodes")
	var last, replacing string
	err := kube.Poll(ctx, replaceBound, func() (bool, error) {
		claim, err := h.Cluster.Dynamic.Resource(check.Claims).Namespace(claimNS).Get(ctx, claimName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st, reason, msg := check.Condition(claim, compose.NodeGroupCondition)
		if reason == "Replacing" && replacing == "" {
			replacing = msg
		}
		synced, _, syncedMsg := check.Condition(claim, compose.ResourcesSyncedCondition)
		groups := h.Account.Find("NodeGroup", nil)
		last = fmt.Sprintf("%s=%s %s: %s; %s=%s %s; node groups %d", compose.NodeGroupCondition, st, reason, msg,
			compose.ResourcesSyncedCondition, synced, syncedMsg, len(groups))
		return st == "True" && synced == "True" && len(groups) == 1 && groups[0].ID != old.ID, nil
	})
	if err != nil {
		t.Fatalf("the node group was not replaced: %v (last: %s)\n%s", err, last, strings.Join(h.Account.Log(), "\n"))
	}
	t.Logf("commit to the node group replaced: %s; while replacing the claim said: %q", time.Since(start).Round(time.Second), replacing)
	ng := h.Account.Find("NodeGroup", nil)[0]
	if want := compose.NodeGroupSlots[1].Name; ng.Name != want {
		t.Errorf("the new node group is %q, want %q (the second slot)", ng.Name, want)
	}
	for k, want := range map[string]string{"instanceTypes": "[m7i.large]", "version": fmt.Sprint(old.Attrs["version"]),
		"scalingConfig": fmt.Sprint(old.Attrs["scalingConfig"]), "launchTemplate": fmt.Sprint(old.Attrs["launchTemplate"])} {
		if got := fmt.Sprint(ng.Attrs[k]); got != want {
			t.Errorf("new node group %s = %s, want %s (as the old one had, or as the claim asks)", k, got, want)
		}
	}
	var deleted time.Time
	for _, d := range h.Account.Deletions() {
		if d.Kind == old.Kind && d.ID == old.ID {
			deleted = d.At
		}
	}
	switch {
	case deleted.IsZero():
		t.Errorf("the old node group %s left the ledger without a delete", old.ID)
	case ng.ReadyAt.IsZero() || deleted.Before(ng.ReadyAt):
		t.Errorf("the old node group was deleted at %s, before the new one was ACTIVE (%s)", deleted.Format("15:04:05.000"), ng.ReadyAt.Format("15:04:05.000"))
	}
}

// usageProtects tries to delete the claim's log group, which a
// ClusterUsage holds for the EKS cluster (AWS would delete it, and EKS
// would make it again while the cluster logs): Crossplane's webhook,
// reached by the API server as on a real cluster, must refuse the deletion
// and leave the log group in the account.
func usageProtects(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	groups := schema.GroupVersionResource{Group: "cloudwatchlogs.aws.upbound.io", Version: "v1beta1", Resource: "groups"}
	name := claimName + "-logs"
	err := h.Cluster.Dynamic.Resource(groups).Delete(ctx, name, metav1.DeleteOptions{})
	if err == nil {
		t.Fatalf("deleting log group %s, held by a ClusterUsage, was admitted", name)
	}
	if !strings.Contains(err.Error(), "in-use") && !strings.Contains(err.Error(), "in use") {
		t.Errorf("deleting log group %s refused for another reason: %v", name, err)
	}
	t.Logf("refused: %v", err)
	o, err := h.Cluster.Dynamic.Resource(groups).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("log group %s after the refused delete: %v", name, err)
	case o.GetDeletionTimestamp() != nil:
		t.Errorf("log group %s is being deleted (since %s)", name, o.GetDeletionTimestamp())
	}
	if n := len(h.Account.Find("cloudwatchlogs.aws.upbound.io/Group", nil)); n != 1 {
		t.Errorf("%d log groups in the account, want 1", n)
	}
}

// commit edits the claim in the Git work tree, commits, and asks Flux to
// fetch and apply at once (as a webhook receiver would).
func commit(t *testing.T, h *site.Hub, old, new, message string) {
	t.Helper()
	if err := h.Repo.Edit(claimFile, old, new); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Commit(message); err != nil {
		t.Fatal(err)
	}
	check.RequestReconcile(t, h)
}

// privateRoutesPerZone checks, in the account, that every private subnet's
// route table sends 0.0.0.0/0 to a NAT gateway in the subnet's own zone.
func privateRoutesPerZone(acct *aws.Ledger) (bool, string) {
	str := func(r aws.Resource, k string) string { s, _ := r.Attrs[k].(string); return s }
	zoneOfSubnet := map[string]string{}
	for _, s := range acct.Find("Subnet", nil) {
		// Subnets are placed by zone ID; one made before that, by name.
		zoneOfSubnet[s.ID] = str(s, "availabilityZoneId") + str(s, "availabilityZone")
	}
	natZone := map[string]string{}
	for _, n := range acct.Find("NATGateway", nil) {
		natZone[n.ID] = zoneOfSubnet[str(n, "subnetId")]
	}
	tableOf := map[string]string{}
	for _, a := range acct.Find("RouteTableAssociation", nil) {
		tableOf[str(a, "subnetId")] = str(a, "routeTableId")
	}
	natOfTable := map[string]string{}
	for _, r := range acct.Find("Route", nil) {
		if str(r, "destinationCidrBlock") == "0.0.0.0/0" && str(r, "natGatewayId") != "" {
			natOfTable[str(r, "routeTableId")] = str(r, "natGatewayId")
		}
	}
	var b strings.Builder
	ok, private := true, 0
	for _, s := range acct.Find("Subnet", nil) {
		if s.Tags[lbsubnets.Internal] != "1" {
			continue
		}
		private++
		nat := natOfTable[tableOf[s.ID]]
		fmt.Fprintf(&b, "private subnet %s (%s) -> table %s -> NAT %s (%s)\n", s.ID, zoneOfSubnet[s.ID], tableOf[s.ID], nat, natZone[nat])
		if nat == "" || natZone[nat] != zoneOfSubnet[s.ID] {
			ok = false
		}
	}
	return ok && private > 1, b.String()
}

// statusLoss (N9): the EKS cluster's provider is down and the cluster's
// observed status loses its OIDC issuer; the composite reconciles (the
// status change wakes it) with the issuer missing. Nothing composed is
// deleted, in Kubernetes or in the account, and once the provider is back
// the issuer returns.
func statusLoss(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	const kind = "eks.aws.upbound.io/Cluster"
	_, before, err := composedResources(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	roles, oidc := len(h.Account.Find("Role", nil)), len(h.Account.Find("OpenIDConnectProvider", nil))
	var cluster *composed
	for i := range before {
		if before[i].ref.Group+"/"+before[i].ref.Kind == kind {
			cluster = &before[i]
		}
	}
	if cluster == nil {
		t.Fatal("no composed EKS Cluster")
	}
	gvr, err := resourceFor(h, cluster.ref)
	if err != nil {
		t.Fatal(err)
	}
	h.AWS.Hold(kind, true)
	defer h.AWS.Hold(kind, false)
	u, err := h.Cluster.Dynamic.Resource(gvr).Get(ctx, cluster.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(u.Object, "status", "atProvider", "identity")
	if _, err := h.Cluster.Dynamic.Resource(gvr).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The composite reconciles on its composed resources' changes; give it
	// several passes with the issuer gone.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, now, err := composedResources(ctx, h)
		if err != nil {
			continue
		}
		if lost := lostResources(before, now); len(lost) > 0 {
			t.Fatalf("with the issuer missing from the cluster's status, composed resources went: %v", lost)
		}
		if r, o := len(h.Account.Find("Role", nil)), len(h.Account.Find("OpenIDConnectProvider", nil)); r != roles || o != oidc {
			t.Fatalf("with the issuer missing, the account went from %d roles and %d OIDC providers to %d and %d", roles, oidc, r, o)
		}
		time.Sleep(3 * time.Second)
	}
	h.AWS.Hold(kind, false)
	if err := kube.Poll(ctx, settleBound, func() (bool, error) {
		u, err := h.Cluster.Dynamic.Resource(gvr).Get(ctx, cluster.name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		_, ok, _ := unstructured.NestedSlice(u.Object, "status", "atProvider", "identity")
		return ok, nil
	}); err != nil {
		t.Fatalf("the cluster's issuer never came back: %v", err)
	}
}

// lostResources lists what before composed that now lacks or is deleting.
func lostResources(before, now []composed) []string {
	have := map[string]bool{}
	for _, c := range now {
		if c.exists && !c.deleting {
			have[c.ref.Kind+"/"+c.name] = true
		}
	}
	var out []string
	for _, c := range before {
		if !have[c.ref.Kind+"/"+c.name] {
			out = append(out, c.ref.Kind+"/"+c.name)
		}
	}
	return out
}

// awsFaults: AWS refuses a node group update twice (a transient error)
// and the change lands on a later reconcile; then it refuses every call
// and the claim says so, naming the node group and AWS's error, until the
// fault clears and the change lands.
func awsFaults(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	const kind = "eks.aws.upbound.io/NodeGroup"
	maxSize := func() string {
		for _, ng := range h.Account.Find("NodeGroup", nil) {
			if sc, ok := ng.Attrs["scalingConfig"].(map[string]any); ok {
				return fmt.Sprint(sc["maxSize"])
			}
		}
		return ""
	}
	synced := func() (string, string) {
		claim, err := h.Cluster.Dynamic.Resource(check.Claims).Namespace(claimNS).Get(ctx, claimName, metav1.GetOptions{})
		if err != nil {
			return "", err.Error()
		}
		st, _, msg := check.Condition(claim, compose.ResourcesSyncedCondition)
		return st, msg
	}

	start := time.Now()
	h.AWS.Fail(kind, 2, "operation error EKS: UpdateNodegroupConfig, https response error StatusCode: 503, api error ServiceUnavailableException: Service Unavailable")
	commit(t, h, "    max: 5\n", "    max: 6\n", "apps-staging: up to 6 nodes")
	if err := kube.Poll(ctx, commitBound, func() (bool, error) { return maxSize() == "6", nil }); err != nil {
		t.Fatalf("after a transient AWS error the node group's max is %s, want 6", maxSize())
	}
	if n := h.AWS.Pending(kind); n != 0 {
		t.Errorf("the change landed with %d injected failures left: the fault was never hit", n)
	}
	t.Logf("commit to the change landing through two AWS errors: %s", time.Since(start).Round(time.Second))
	start = time.Now()

	const denied = "api error AccessDeniedException: User is not authorized to perform: eks:UpdateNodegroupConfig"
	h.AWS.Fail(kind, -1, "operation error EKS: UpdateNodegroupConfig, https response error StatusCode: 403, "+denied)
	commit(t, h, "    max: 6\n", "    max: 7\n", "apps-staging: up to 7 nodes")
	var msg string
	err := kube.Poll(ctx, commitBound, func() (bool, error) {
		var st string
		st, msg = synced()
		return st == "False" && strings.Contains(msg, "node-group (NodeGroup apps-staging-nodes)") && strings.Contains(msg, denied), nil
	})
	h.AWS.Fail(kind, 0, "")
	if err != nil {
		t.Fatalf("AWS refusing every call is not on the claim (%s: %s)", compose.ResourcesSyncedCondition, msg)
	}
	if got := maxSize(); got != "6" {
		t.Errorf("refused by AWS, the node group's max is %s, want 6", got)
	}
	t.Logf("commit to AWS's refusal on the claim: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	// The change lands once AWS takes it again, and the claim says so.
	if err := kube.Poll(ctx, commitBound, func() (bool, error) {
		st, _ := synced()
		return maxSize() == "7" && st == "True", nil
	}); err != nil {
		st, msg := synced()
		t.Fatalf("after the fault cleared: max %s, %s=%s %s", maxSize(), compose.ResourcesSyncedCondition, st, msg)
	}
	t.Logf("fault cleared to the change landing and the claim %s again: %s", compose.ResourcesSyncedCondition, time.Since(start).Round(time.Second))
}

// atRest: once composed, neither the function, Crossplane nor the provider
// changes any composed resource while nothing changes in Git or AWS. A
// composition that flaps (a field written differently on each reconcile)
// would rewrite them at every composite reconcile, which is what
// Crossplane's XR circuit breaker protects a hub from; the suite runs with
// a larger burst (site.CircuitBreakerBurst), so it checks this itself. The
// bootstrap's Kustomizations and Usages are compared by what is written to
// them outside their status (Flux and Crossplane write their status as the
// bootstrap runs).
func atRest(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	versionsNow := func() map[string]string {
		_, out, err := composedResources(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, c := range out {
			m[c.ref.Kind+"/"+c.name] = c.resourceVersion
			if !c.managedByAWSFam && c.ref.Kind != "ConfigMap" {
				// Flux and Crossplane write the status of the bootstrap's
				// Kustomizations and Usages as the bootstrap runs; what
				// the composite writes is their spec and metadata (a
				// ConfigMap has no status: any write counts).
				m[c.ref.Kind+"/"+c.name] = c.written
			}
		}
		return m
	}
	// Let the last stage's own writes (Ready, the composite's status) land.
	time.Sleep(5 * time.Second)
	before := versionsNow()
	// Wake the composite a few times (a change to its metadata is an
	// event its controller reconciles on): each reconcile runs the
	// function and applies everything it composes.
	claim, err := h.Cluster.Dynamic.Resource(check.Claims).Namespace(claimNS).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	xr, xrGVR, err := compositeOf(ctx, h, claim)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.eksfleet.io/poke":"%d"}}}`, i)
		if _, err := h.Cluster.Dynamic.Resource(xrGVR).Patch(ctx, xr.GetName(), "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
	}
	after := versionsNow()
	var changed []string
	for k, v := range after {
		if before[k] != v {
			changed = append(changed, fmt.Sprintf("%s (%s -> %s)", k, before[k], v))
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		t.Errorf("composed resources rewritten at rest:\n%s", strings.Join(changed, "\n"))
	}
}

// upgrade: the claim's Kubernetes version moves up one minor version; the
// control plane, then the node group, then the EKS add-on whose version
// follows Kubernetes (kube-proxy) move, in that order in the account,
// and AWS refuses no step (a node group ahead of its control plane, or an
// add-on version not offered for the cluster's version, is refused as EKS
// refuses it).
func upgrade(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	// The example claim runs the default version; the next accepted one.
	from := versions.DefaultKubernetes
	to, _ := versions.NextKubernetes(from)
	if err := versions.CheckUpgrade(from, to); err != nil {
		t.Fatalf("the scenario's upgrade %s -> %s: %v", from, to, err)
	}
	str := func(r aws.Resource, k string) string { v, _ := r.Attrs[k].(string); return v }
	kubeProxy := clusterinfo.ExampleAddonVersion("kube-proxy", to)
	state := func() (cluster, nodes, proxy string) {
		for _, r := range h.Account.Find("eks.aws.upbound.io/Cluster", nil) {
			cluster = str(r, "version")
		}
		for _, r := range h.Account.Find("eks.aws.upbound.io/NodeGroup", nil) {
			nodes = str(r, "version")
		}
		for _, r := range h.Account.Find("eks.aws.upbound.io/Addon", func(r aws.Resource) bool { return str(r, "addonName") == "kube-proxy" }) {
			proxy = str(r, "addonVersion")
		}
		return cluster, nodes, proxy
	}
	if c, n, p := state(); c != from || n != from || p != clusterinfo.ExampleAddonVersion("kube-proxy", from) {
		t.Fatalf("before the upgrade: cluster %s, nodes %s, kube-proxy %s; want %s and its add-ons", c, n, p, from)
	}
	logStart := len(h.Account.Log())
	refusedBefore := len(h.AWS.Refusals())
	start := time.Now()
	commit(t, h, fmt.Sprintf("kubernetesVersion: %q", from), fmt.Sprintf("kubernetesVersion: %q", to), "apps-staging: Kubernetes "+to)
	var c, n, p string
	if err := kube.Poll(ctx, composeBound, func() (bool, error) {
		c, n, p = state()
		return c == to && n == to && p == kubeProxy, nil
	}); err != nil {
		t.Fatalf("upgrade not done: cluster %s, nodes %s, kube-proxy %s (want %s, %s, %s); AWS refused: %v",
			c, n, p, to, to, kubeProxy, h.AWS.Refusals()[refusedBefore:])
	}
	t.Logf("commit to control plane, nodes and add-ons on %s: %s", to, time.Since(start).Round(time.Second))
	if refused := h.AWS.Refusals()[refusedBefore:]; len(refused) > 0 {
		t.Errorf("AWS refused steps of the upgrade:\n%s", strings.Join(refused, "\n"))
	}
	// The order, from what happened in the account.
	at := map[string]int{}
	for i, line := range h.Account.Log()[logStart:] {
		for step, match := range map[string]string{
			"control plane": " update eks.aws.upbound.io/Cluster ",
			"nodes":         " update eks.aws.upbound.io/NodeGroup ",
			"kube-proxy":    " update eks.aws.upbound.io/Addon ",
		} {
			if _, seen := at[step]; !seen && strings.Contains(line, match) && strings.Contains(strings.ToLower(line), "version") &&
				(step != "kube-proxy" || strings.Contains(line, ":kube-proxy ")) {
				at[step] = i
			}
		}
	}
	if len(at) != 3 || !(at["control plane"] < at["nodes"] && at["nodes"] < at["kube-proxy"]) {
		t.Errorf("updates in the account at positions %v, want control plane < nodes < kube-proxy:\n%s", at,
			strings.Join(h.Account.Log()[logStart:], "\n"))
	}
}
