package compose

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

const testIssuer = "oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"

func testParams(t *testing.T) Params {
	t.Helper()
	in, err := InputFrom(clusterinfo.Example())
	if err != nil {
		t.Fatal(err)
	}
	return Params{Input: in, Spoke: "pay", Spec: workloadcluster.Spec{
		Region: "eu-west-1", KubernetesVersion: "1.35", VPCCIDR: "10.30.0.0/16", AvailabilityZones: 3, NATMode: "single",
		Nodes:             workloadcluster.Nodes{InstanceTypes: []string{"m7i.large"}, Min: 2, Desired: 2, Max: 4},
		PublicAccessCIDRs: []string{"203.0.113.0/24"}, AdminPrincipalARNs: []string{"arn:aws:iam::111122223333:role/ops"},
		Tags: map[string]string{"team": "payments"},
	}}
}

// observeAll marks every composed object Ready, as the providers would,
// and gives the cluster its OIDC issuer and the VPC its id.
func observeAll(c Composed) map[string]Object {
	obs := map[string]Object{}
	for k, o := range c.Objects {
		st := Object{"conditions": []any{Object{"type": "Ready", "status": "True"}}}
		if k == "cluster" {
			st["atProvider"] = Object{"arn": "arn:aws:eks:eu-west-1:111122223333:cluster/mgmt-pay",
				"identity": []any{Object{"oidc": []any{Object{"issuer": "https://" + testIssuer}}}}}
		}
		if k == "vpc" {
			st["atProvider"] = Object{"id": "vpc-0abc"}
		}
		if k == "launch-template" {
			st["atProvider"] = Object{"id": "lt-0abc", "latestVersion": float64(1)}
		}
		obs[k] = Object{"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": o["metadata"], "status": st}
	}
	return obs
}

// converge composes until nothing more appears (what Crossplane's
// reconciles do), returning each run.
func converge(t *testing.T, p Params) []Composed {
	t.Helper()
	var runs []Composed
	for i := 0; i < 6; i++ {
		c, err := Compose(p)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, c)
		if i > 0 && len(c.Objects) == len(runs[i-1].Objects) {
			return runs
		}
		p.Observed = observeAll(c)
	}
	t.Fatal("composition did not converge")
	return nil
}

// checkRoles compares the composed IAM objects with spokeiam's roles.
func checkRoles(c Composed, roles []spokeiam.Role, spoke string) []error {
	var errs []error
	for _, r := range roles {
		o := c.Objects["role-"+r.Key]
		if o == nil {
			errs = append(errs, fmt.Errorf("role %s not composed", r.Key))
			continue
		}
		fp := o["spec"].(Object)["forProvider"].(Object)
		if n := o["metadata"].(Object)["name"]; n != r.Name {
			errs = append(errs, fmt.Errorf("role %s named %v, spokeiam %s", r.Key, n, r.Name))
		}
		if fp["permissionsBoundary"] != r.BoundaryARN || r.BoundaryARN == "" {
			errs = append(errs, fmt.Errorf("role %s boundary %v, want %s", r.Key, fp["permissionsBoundary"], r.BoundaryARN))
		}
		tags, _ := fp["tags"].(map[string]any)
		for k, v := range r.Tags {
			if tags[k] != v {
				errs = append(errs, fmt.Errorf("role %s fence tag %s = %v, want %s", r.Key, k, tags[k], v))
			}
		}
		for _, k := range []string{fence.TagSpoke, fence.TagCluster} {
			if _, ok := tags[k]; !ok {
				errs = append(errs, fmt.Errorf("role %s lacks fence tag %s", r.Key, k))
			}
		}
		if r.IRSA && tags[fence.TagOIDC] == nil {
			errs = append(errs, fmt.Errorf("IRSA role %s lacks fence tag %s", r.Key, fence.TagOIDC))
		}
		if !sameDoc(fp["assumeRolePolicy"], r.Trust) {
			errs = append(errs, fmt.Errorf("role %s trust differs from spokeiam", r.Key))
		}
		if r.Inline != nil {
			pol := c.Objects["role-"+r.Key+"-policy"]
			if pol == nil || !sameDoc(pol["spec"].(Object)["forProvider"].(Object)["policy"], *r.Inline) {
				errs = append(errs, fmt.Errorf("role %s inline policy missing or differs from spokeiam", r.Key))
			}
		}
		for _, m := range r.ManagedPolicyARNs {
			a := c.Objects["role-"+r.Key+"-"+m.Suffix]
			if a == nil || a["spec"].(Object)["forProvider"].(Object)["policyArn"] != m.ARN ||
				a["metadata"].(Object)["name"] != spoke+"-"+r.Key+"-"+m.Suffix {
				errs = append(errs, fmt.Errorf("role %s attachment %s missing or differs", r.Key, m.Suffix))
			}
		}
	}
	return errs
}

func sameDoc(got any, want policydoc.Document) bool {
	s, _ := got.(string)
	d, err := policydoc.Parse(s)
	if err != nil {
		return false
	}
	w, _ := want.JSON()
	wd, _ := policydoc.Parse(w)
	return reflect.DeepEqual(d, wd)
}

func TestIAMIsSpokeiam(t *testing.T) {
	p := testParams(t)
	runs := converge(t, p)
	last := runs[len(runs)-1]
	p.Observed = observeAll(runs[len(runs)-2])
	s := p.spoke()
	if s.OIDCIssuer != testIssuer {
		t.Fatalf("issuer %q, want %q", s.OIDCIssuer, testIssuer)
	}
	roles, err := spokeiam.Roles(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(roles) != len(spokeiam.RoleKeys()) {
		t.Fatalf("%d roles, want all %d", len(roles), len(spokeiam.RoleKeys()))
	}
	if errs := checkRoles(last, roles, p.Spoke); len(errs) > 0 {
		t.Fatal(errs)
	}
	// Compose refuses a claim setting a fence tag (TestComposeRefusesReservedTags);
	// should one reach the IAM part all the same, spokeiam's value wins.
	forged := p
	forged.Spec.Tags = map[string]string{"team": "payments", fence.TagSpoke: "someone-else"}
	var iam Composed
	iam.Objects = map[string]Object{}
	if err := IAM(forged, &iam); err != nil {
		t.Fatal(err)
	}
	if got := iam.Objects["role-lbc"]["spec"].(Object)["forProvider"].(Object)["tags"].(map[string]any)[fence.TagSpoke]; got != "pay" {
		t.Errorf("claim tag overrode the fence: %s=%v", fence.TagSpoke, got)
	}
	// Planted: a role without a fence tag, with another boundary, with an
	// edited policy; each is caught.
	for name, plant := range map[string]func(Composed){
		"missing spoke tag": func(c Composed) {
			delete(c.Objects["role-lbc"]["spec"].(Object)["forProvider"].(Object)["tags"].(map[string]any), fence.TagSpoke)
		},
		"missing oidc tag": func(c Composed) {
			delete(c.Objects["role-crossplane"]["spec"].(Object)["forProvider"].(Object)["tags"].(map[string]any), fence.TagOIDC)
		},
		"other boundary": func(c Composed) {
			c.Objects["role-node"]["spec"].(Object)["forProvider"].(Object)["permissionsBoundary"] = "arn:aws:iam::111122223333:policy/other"
		},
		"edited policy": func(c Composed) {
			c.Objects["role-lbc-policy"]["spec"].(Object)["forProvider"].(Object)["policy"] = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["*"],"Resource":["*"]}]}`
		},
	} {
		c, err := Compose(Params{Input: p.Input, Spoke: p.Spoke, Spec: p.Spec, Observed: p.Observed})
		if err != nil {
			t.Fatal(err)
		}
		plant(c)
		if errs := checkRoles(c, roles, p.Spoke); len(errs) == 0 {
			t.Errorf("planted %s: not caught", name)
		}
	}
}

// notHeld are the IAM objects no hold keeps (Holds says why): the admin
// role and its policy, whose access ends at teardown's start.
var notHeld = []string{"role-admin", "role-admin-policy"}

// checkHeld: every IAM object but notHeld, and the log group, is the `of`
// of a composed usage.
func checkHeld(c Composed) []error {
	held := map[string]bool{}
	for _, o := range c.Objects {
		if k := o["kind"]; k == "ClusterUsage" || k == "Usage" {
			of := o["spec"].(Object)["of"].(Object)
			held[fmt.Sprint(of["kind"], "/", of["resourceRef"].(Object)["name"])] = true
		}
	}
	var errs []error
	for key, o := range c.Objects {
		api, _ := o["apiVersion"].(string)
		if !strings.HasPrefix(api, "iam.") && key != "log-group" || slices.Contains(notHeld, key) {
			continue
		}
		if !held[fmt.Sprint(o["kind"], "/", o["metadata"].(Object)["name"])] {
			errs = append(errs, fmt.Errorf("%s (%s) is held by no usage", key, o["kind"]))
		}
	}
	return errs
}

func TestUsagesHoldEveryRoleAndPolicy(t *testing.T) {
	runs := converge(t, testParams(t))
	last := runs[len(runs)-1]
	if errs := checkHeld(last); len(errs) > 0 {
		t.Fatal(errs)
	}
	n := 0
	for _, o := range last.Objects {
		if k := o["kind"]; k == "Usage" || k == "ClusterUsage" {
			n++
			if err := checkUsageScope(o, last.Objects); err != nil {
				t.Error(err)
			}
		}
	}
	t.Logf("%d objects, %d ClusterUsages", len(last.Objects), n)
	for _, key := range []string{"role-lbc-policy", "role-cluster", "log-group"} {
		c, _ := Compose(Params{Input: testParams(t).Input, Spoke: "pay", Spec: testParams(t).Spec, Observed: observeAll(runs[len(runs)-2])})
		for _, h := range HoldsOf(key) {
			delete(c.Objects, "usage-"+h)
		}
		if len(checkHeld(c)) == 0 {
			t.Errorf("planted: holds of %s removed, not caught", key)
		}
	}
}

func TestLogGroupPrecedesCluster(t *testing.T) {
	p := testParams(t)
	first, err := Compose(p)
	if err != nil {
		t.Fatal(err)
	}
	lg := first.Objects["log-group"]
	if lg == nil {
		t.Fatal("no log group on the first run")
	}
	for _, k := range []string{"cluster", "node-group", "access-entry-flux", "oidc-provider", "role-crossplane"} {
		if first.Objects[k] != nil {
			t.Errorf("%s composed before the log group is Ready", k)
		}
	}
	if len(first.Pending) == 0 {
		t.Error("nothing pending on the first run: the XR would be Ready without a cluster")
	}
	md := lg["metadata"].(Object)
	if got, want := md["annotations"].(Object)[externalName], workloadcluster.ControlPlaneLogGroup(spokeiam.ClusterName(p.Input.Hub(), p.Spoke)); got != want {
		t.Errorf("log group %v, want %s", got, want)
	}
	fp := lg["spec"].(Object)["forProvider"].(Object)
	if fp["retentionInDays"] != p.Input.LogRetentionDays || fp["skipDestroy"] != false || lg["spec"].(Object)["deletionPolicy"] != "Delete" {
		t.Errorf("log group retention/deletion: %v %v %v", fp["retentionInDays"], fp["skipDestroy"], lg["spec"].(Object)["deletionPolicy"])
	}
	// Log group observed but not Ready: still no cluster.
	p.Observed = observeAll(first)
	p.Observed["log-group"]["status"] = Object{}
	if c, _ := Compose(p); c.Objects["cluster"] != nil {
		t.Error("cluster composed while the log group is not Ready")
	}
	// Ready: the cluster comes, held by nothing but holding the log group.
	p.Observed = observeAll(first)
	second, err := Compose(p)
	if err != nil {
		t.Fatal(err)
	}
	if second.Objects["cluster"] == nil {
		t.Fatal("cluster not composed once the log group is Ready")
	}
	u := second.Objects["usage-log-group-by-cluster"]
	if u == nil || u["spec"].(Object)["of"].(Object)["kind"] != "Group" || u["spec"].(Object)["by"].(Object)["kind"] != "Cluster" {
		t.Errorf("log group not held by the cluster: %v", u)
	}
	// Once the cluster exists it is never dropped (that would delete it),
	// even if the log group stops being Ready.
	p.Observed = observeAll(second)
	p.Observed["log-group"]["status"] = Object{}
	if c, _ := Compose(p); c.Objects["cluster"] == nil {
		t.Error("existing cluster dropped when the log group is not Ready")
	}
	// Converged: nothing pending.
	runs := converge(t, testParams(t))
	if last := runs[len(runs)-1]; len(last.Pending) > 0 {
		t.Errorf("converged spoke still pending: %v", last.Pending)
	}
}

func TestClusterFields(t *testing.T) {
	p := testParams(t)
	runs := converge(t, p)
	last := runs[len(runs)-1]
	cl := last.Objects["cluster"]
	fp := cl["spec"].(Object)["forProvider"].(Object)
	cidrs := fp["vpcConfig"].(Object)["publicAccessCidrs"].([]any)
	egress, _ := clusterinfo.ParseCIDRs(clusterinfo.Example().HubEgressCIDRs)
	for i, e := range egress {
		if cidrs[i] != e {
			t.Errorf("publicAccessCidrs[%d] %v, want the hub egress %s first", i, cidrs[i], e)
		}
	}
	if !slices.Contains(cidrs, any("203.0.113.0/24")) {
		t.Error("claim's publicAccessCidrs not appended")
	}
	if cl["metadata"].(Object)["annotations"].(Object)[externalName] != spokeiam.ClusterName(p.Input.Hub(), p.Spoke) {
		t.Error("cluster external name is not spokeiam.ClusterName")
	}
	if got := len(fp["vpcConfig"].(Object)["subnetIdRefs"].([]any)); got != 2*p.Spec.AvailabilityZones {
		t.Errorf("cluster has %d subnets, want %d", got, 2*p.Spec.AvailabilityZones)
	}
	if last.Status["oidcIssuer"] != testIssuer || last.Status["eksClusterName"] != "mgmt-pay" {
		t.Errorf("XR status %v", last.Status)
	}
	ae := last.Objects["access-entry-admin"]["spec"].(Object)["forProvider"].(Object)["principalArn"]
	if ae != spokeiam.RoleARN(p.Input.Hub(), p.Spoke, spokeiam.RoleAdmin) {
		t.Errorf("admin access entry for %v", ae)
	}
}

func TestBadInputNamesField(t *testing.T) {
	for field, plant := range map[string]func(*Params){
		"fluxRoleArn":            func(p *Params) { p.Input.FluxRoleARN = "" },
		"spokeBoundaryArn":       func(p *Params) { p.Input.SpokeBoundaryARN = "arn:aws:iam::111122223333:policy/other" },
		"hubEgressCidrs":         func(p *Params) { p.Input.HubEgressCIDRs = nil },
		"logRetentionDays":       func(p *Params) { p.Input.LogRetentionDays = 42 },
		"hubName":                func(p *Params) { p.Input.HubName = "" },
		"spec.kubernetesVersion": func(p *Params) { p.Spec.KubernetesVersion = "1.20" },
		"spec.nodes":             func(p *Params) { p.Spec.Nodes.Min = 5 },
		"spec.region":            func(p *Params) { p.Spec.Region = "" },
	} {
		p := testParams(t)
		plant(&p)
		_, err := Compose(p)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("planted bad %s: error %v does not name it", field, err)
		}
	}
}

// checkUsageScope: a ClusterUsage only for a cluster-scoped user (its `by`
// has no namespace in crossplane v2.2.1), a namespaced Usage only for a
// namespaced user, in the user's namespace, naming a cluster-scoped `of`
// with an explicit empty namespace.
func checkUsageScope(u Object, objs map[string]Object) error {
	spec := u["spec"].(Object)
	byRef := spec["by"].(Object)["resourceRef"].(Object)
	var user Object
	for _, o := range objs {
		if o["kind"] == spec["by"].(Object)["kind"] && o["metadata"].(Object)["name"] == byRef["name"] {
			user = o
		}
	}
	if user == nil {
		return fmt.Errorf("%v: by names nothing composed", u["metadata"])
	}
	userNS, _ := user["metadata"].(Object)["namespace"].(string)
	uNS, _ := u["metadata"].(Object)["namespace"].(string)
	switch {
	case u["kind"] == "ClusterUsage" && userNS != "":
		return fmt.Errorf("ClusterUsage %v for namespaced user %s/%v", u["metadata"], userNS, byRef["name"])
	case u["kind"] == "Usage" && (userNS == "" || uNS != userNS):
		return fmt.Errorf("Usage %v in %q for user in %q", u["metadata"], uNS, userNS)
	case u["kind"] == "Usage":
		if ns, ok := spec["of"].(Object)["resourceRef"].(Object)["namespace"]; !ok {
			return fmt.Errorf("Usage %v: of has no explicit namespace", u["metadata"])
		} else if ns != "" {
			return nil
		}
	}
	if _, ok := byRef["namespace"]; ok {
		return fmt.Errorf("%v: by carries a namespace", u["metadata"])
	}
	return nil
}

// A namespaced user (a bootstrap Kustomization) of a cluster-scoped object
// gets a namespaced Usage; planted wrong scopes are caught.
func TestUsageScopeFollowsTheUser(t *testing.T) {
	runs := converge(t, testParams(t))
	c := runs[len(runs)-1]
	c.Objects = maps.Clone(c.Objects)
	for k := range c.Objects {
		if strings.HasPrefix(k, "usage-") {
			delete(c.Objects, k)
		}
	}
	c.Objects["bootstrap-eso-controller"] = Object{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": Object{"name": "pay-eso-controller", "namespace": "flux-system"}}
	if err := Usages(testParams(t), &c); err != nil {
		t.Fatal(err)
	}
	u := c.Objects["usage-nodes-by-eso-controller"]
	if u == nil || u["kind"] != "Usage" || u["metadata"].(Object)["namespace"] != "flux-system" {
		t.Fatalf("hold of the node group by the namespaced Kustomization: %v", u)
	}
	for k, o := range c.Objects {
		if strings.HasPrefix(k, "usage-") {
			if err := checkUsageScope(o, c.Objects); err != nil {
				t.Error(err)
			}
		}
	}
	bad := maps.Clone(u)
	bad["kind"] = "ClusterUsage"
	if checkUsageScope(bad, c.Objects) == nil {
		t.Error("planted ClusterUsage for a namespaced user: not caught")
	}
	bad = maps.Clone(c.Objects["usage-role-node"])
	bad["kind"], bad["metadata"] = "Usage", Object{"name": "x", "namespace": "flux-system"}
	if checkUsageScope(bad, c.Objects) == nil {
		t.Error("planted Usage for a cluster-scoped user: not caught")
	}
}

// The cluster and load balancer controller roles may put load balancers
// only into the subnets AWS has reported for the spoke's zones in use.
func TestLoadBalancersOnlyInTheSpokesSubnets(t *testing.T) {
	id := func(hex string) string { return "subnet-" + strings.Repeat("0", 17-len(hex)) + hex }
	subnet := func(hex string) Object {
		return Object{"status": Object{"atProvider": Object{"id": id(hex)}}}
	}
	for _, tc := range []struct {
		name     string
		zones    int
		observed map[string]Object
		want     []string
		reason   string
	}{
		{"none reported", 3, nil, nil, "before AWS reports a subnet no load balancer may be made"},
		{"all reported", 2, map[string]Object{
			"subnet-public-a": subnet("a1"), "subnet-private-a": subnet("a2"),
			"subnet-public-b": subnet("b1"), "subnet-private-b": subnet("b2"),
		}, []string{id("a1"), id("a2"), id("b1"), id("b2")}, "every subnet of the zones in use"},
		{"by external name", 2, map[string]Object{
			"subnet-public-a":  {"metadata": Object{"annotations": Object{externalName: id("a1")}}},
			"subnet-private-a": {"metadata": Object{"annotations": Object{externalName: "subnet-private-a"}}},
		}, []string{id("a1")}, "an external name the provider set, not one Crossplane defaulted to the object's name"},
		{"zone out of use", 2, map[string]Object{
			"subnet-public-a": subnet("a1"), "subnet-public-c": subnet("c1"),
		}, []string{id("a1")}, "a subnet of a zone no longer in use is being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams(t)
			p.Spec.AvailabilityZones, p.Observed = tc.zones, tc.observed
			c, err := Compose(p)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]policydoc.Document{
				"role-cluster-policy": policydoc.NewDocument(spokeiam.SubnetFence(tc.want)...),
			}
			for key, doc := range want {
				got := c.Objects[key]["spec"].(Object)["forProvider"].(Object)["policy"]
				if !sameDoc(got, doc) {
					t.Errorf("%s: %s policy\n%v\nwant\n%s", tc.reason, key, got, doc.MustJSON())
				}
			}
			if s := p.spoke(); !slices.Equal(s.SubnetIDs, tc.want) && !(len(s.SubnetIDs) == 0 && len(tc.want) == 0) {
				t.Errorf("%s: spoke subnets %v, want %v", tc.reason, s.SubnetIDs, tc.want)
			}
		})
	}
}

// A claim whose tags carry a key the spokes' boundary trusts, or any key
// under a reserved prefix, composes nothing: the function answers with an
// error naming spec.tags and the key (a fatal result on the XR).
func TestComposeRefusesReservedTags(t *testing.T) {
	tests := []struct {
		name string
		tags map[string]string
		want []string // in the error; none when the claim composes
	}{
		{"a team's tags compose", map[string]string{"team": "payments", "cost-center": "42"}, nil},
		{"EKS's node key, valued as another spoke", map[string]string{fence.TagEKSNodeCluster: "mgmt-a"},
			[]string{"spec.tags", `"eks:cluster-name"`, "EKS"}},
		{"the VPC CNI's key", map[string]string{fence.TagCNICluster: "mgmt-a"},
			[]string{"spec.tags", `"cluster.k8s.amazonaws.com/name"`, "the VPC CNI"}},
		{"the load balancer controller's key in upper case", map[string]string{"ELBV2.K8S.AWS/cluster": "mgmt-a"},
			[]string{"spec.tags", `"ELBV2.K8S.AWS/cluster"`, "the AWS Load Balancer Controller"}},
		{"the fleet's own key", map[string]string{fence.TagSpoke: "someone-else", "team": "payments"},
			[]string{"spec.tags", `"eksfleet.io/spoke"`, "the fleet"}},
		{"every reserved key is named", map[string]string{fence.TagLBCCluster: "mgmt-a", fence.TagEKSNodeCluster: "mgmt-a"},
			[]string{`"elbv2.k8s.aws/cluster"`, `"eks:cluster-name"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testParams(t)
			p.Spec.Tags = tt.tags
			c, err := Compose(p)
			if len(tt.want) == 0 {
				if err != nil || len(c.Objects) == 0 {
					t.Fatalf("Compose: %d objects, err %v; want objects and no error", len(c.Objects), err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Compose composed %d objects, want an error naming %v", len(c.Objects), tt.want)
			}
			if len(c.Objects) != 0 {
				t.Errorf("Compose composed %d objects beside its error", len(c.Objects))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
