package compose

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// outlives is one teardown order: Of must be deleted only after By is
// gone, Why says what breaks otherwise.
type outlives struct{ Of, By, Why string }

// awsRefuses are the orders AWS keeps itself: it refuses to delete Of while
// By uses it, and the provider retries the delete until AWS takes it
// (Holds; the stand-in AWS refuses each, internal/sandbox/aws
// inUseRefusal).
func awsRefuses() []outlives {
	o := []outlives{
		{"vpc", "internet-gateway", "EC2 DependencyViolation"},
		{"vpc", "route-table-public", "EC2 DependencyViolation"},
	}
	for _, ng := range NodeGroupSlots {
		o = append(o, outlives{"cluster", ng.Key, "EKS ResourceInUseException: Cluster has nodegroups attached"})
	}
	for _, z := range AZSuffixes {
		for _, s := range []string{"subnet-public-" + z, "subnet-private-" + z} {
			o = append(o,
				outlives{"vpc", s, "EC2 DependencyViolation"},
				outlives{s, "cluster", "EC2 DependencyViolation: the cluster's network interfaces"},
			)
			for _, ng := range NodeGroupSlots {
				o = append(o, outlives{s, ng.Key, "EC2 DependencyViolation: the nodes' network interfaces"})
			}
		}
		o = append(o,
			outlives{"subnet-public-" + z, "nat-gateway-" + z, "EC2 DependencyViolation: the NAT gateway's interface"},
			outlives{"eip-" + z, "nat-gateway-" + z, "EC2 AuthFailure disassociating the gateway's address"},
			outlives{"vpc", "route-table-private-" + z, "EC2 DependencyViolation"},
		)
	}
	return o
}

// teardownNeeds are the orders a spoke's teardown needs, each with what
// breaks without it.
func teardownNeeds() []outlives {
	first := StepKeyPrefix + BootstrapSteps()[0].Part
	egress := "the spoke's Crossplane reaches AWS through it while it deletes the apps' resources"
	n := []outlives{
		{"role-cluster", "cluster", "EKS deletes its network interfaces as this role"},
		{"role-cluster-eks", "cluster", "EKS deletes its network interfaces with this policy"},
		{"role-cluster-policy", "cluster", "EKS deletes its network interfaces with this policy"},
		{"log-group", "cluster", "EKS writes the control plane's logs to it and recreates it if it is gone"},
		{"access-policy-flux", first, "the hub's Flux acts on the spoke with this access"},
		{"access-entry-flux", first, "the hub's Flux acts on the spoke with this access"},
		{"internet-gateway", first, egress},
		{"route-public-default", first, egress},
		{"route-table-public", first, egress},
	}
	// each node group, two while one replaces the other
	for _, ng := range NodeGroupSlots {
		n = append(n,
			outlives{"role-node", ng.Key, "the nodes' kubelets and VPC CNI act as this role while they drain"},
			outlives{"role-node-worker", ng.Key, "the nodes act with this policy while they drain"},
			outlives{"role-node-cni", ng.Key, "the VPC CNI releases the pods' addresses with this policy"},
			outlives{"role-node-ecr", ng.Key, "the nodes pull images with this policy while they drain"},
			outlives{"role-crossplane", ng.Key, "the spoke's Crossplane deletes the apps' resources as this role"},
			outlives{"role-crossplane-policy", ng.Key, "the spoke's Crossplane deletes the apps' resources with this policy"},
			outlives{"role-lbc", ng.Key, "the load balancer controller deletes the apps' load balancers as this role"},
			outlives{"role-lbc-policy", ng.Key, "the load balancer controller deletes load balancers with this policy"},
			outlives{"oidc-provider", ng.Key, "the spoke's controllers take their roles through it"},
			outlives{"launch-template", ng.Key, "the node group's instances are made from it"},
			outlives{ng.Key, first, "the hub's Flux removes what it put on the spoke through the spoke's nodes"},
		)
	}
	for _, a := range versions.EKSAddons() {
		n = append(n, outlives{"addon-" + a, first, "the spoke's pods need their network, DNS and services while the hub's Flux empties it"})
	}
	for _, z := range AZSuffixes {
		for _, k := range []string{"nat-gateway-" + z, "eip-" + z, "route-private-" + z + "-default", "route-table-private-" + z,
			"route-table-association-public-" + z, "route-table-association-private-" + z, "subnet-public-" + z, "subnet-private-" + z} {
			n = append(n, outlives{k, first, egress})
		}
	}
	return n
}

// TestHoldsKeepEveryTeardownOrder: every order the teardown needs is kept,
// by a hold or by AWS's own refusal, directly or through others (a NAT
// gateway held by the cluster outlives the node group, because EKS refuses
// to delete the cluster before it). A hold taken away that nothing else
// replaces fails here, naming what breaks.
func TestHoldsKeepEveryTeardownOrder(t *testing.T) {
	cases := map[string]struct {
		reason string
		drop   string // a hold taken away
		want   []string
	}{
		"the product's holds": {reason: "every order the teardown needs is kept"},
		"log group let go": {reason: "AWS does not keep the log group for the cluster", drop: "log-group-by-cluster",
			want: []string{"log-group must outlive cluster: EKS writes the control plane's logs to it and recreates it if it is gone"}},
		"NAT gateway let go": {reason: "AWS deletes a NAT gateway in use; its Elastic IP and the egress go with it", drop: "nat-a-by-cluster",
			want: []string{
				"eip-a must outlive " + StepKeyPrefix + BootstrapSteps()[0].Part + ": the spoke's Crossplane reaches AWS through it while it deletes the apps' resources",
				"nat-gateway-a must outlive " + StepKeyPrefix + BootstrapSteps()[0].Part + ": the spoke's Crossplane reaches AWS through it while it deletes the apps' resources",
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			edges := awsRefuses()
			dropped := false
			for _, h := range Holds() {
				if h.Name == tc.drop {
					dropped = true
					continue
				}
				edges = append(edges, outlives{h.Of, h.By, "hold " + h.Name})
			}
			if tc.drop != "" && !dropped {
				t.Fatalf("no hold %s to take away", tc.drop)
			}
			var got []string
			for _, n := range teardownNeeds() {
				if !reaches(edges, n.Of, n.By) {
					got = append(got, fmt.Sprintf("%s must outlive %s: %s", n.Of, n.By, n.Why))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: orders not kept:\n got %q\nwant %q", tc.reason, got, tc.want)
			}
		})
	}
}

// reaches reports whether edges order of after by, through any chain.
func reaches(edges []outlives, of, by string) bool {
	seen := map[string]bool{of: true}
	next := []string{of}
	for len(next) > 0 {
		cur := next[0]
		next = next[1:]
		for _, e := range edges {
			if e.Of != cur || seen[e.By] {
				continue
			}
			if e.By == by {
				return true
			}
			seen[e.By] = true
			next = append(next, e.By)
		}
	}
	return false
}

// TestHoldsAreNotRedundantWithAWS: no hold repeats an order AWS keeps
// itself; each would be one more object every composite reconcile applies.
func TestHoldsAreNotRedundantWithAWS(t *testing.T) {
	for _, h := range Holds() {
		for _, r := range awsRefuses() {
			if h.Of == r.Of && h.By == r.By {
				t.Errorf("hold %s repeats what AWS refuses itself (%s)", h.Name, r.Why)
			}
		}
	}
}
