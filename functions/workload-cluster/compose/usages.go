package compose

import (
	"slices"
	"sort"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

const protectionV1 = "protection.crossplane.io/v1beta1"

// Hold is one deletion hold: Crossplane keeps Of until By is gone. Both are
// composition-resource-names; Name is the part after usage- in the hold's
// own composition-resource-name and after <spoke>-uses- in its name.
type Hold struct {
	Name, Of, By string
}

// Holds lists every hold of a spoke, in teardown terms: IAM roles, their
// policies and attachments outlive the cluster and nodes that use them; the
// network (route tables included: the provider's route-table delete first
// disassociates every subnet) and the log group outlive the cluster, and a
// NAT gateway's Elastic IP the NAT gateway; the cluster outlives its node
// group and access entries; the node group, its EKS add-ons (the pods'
// network, DNS and services) and the Flux access outlive the first
// bootstrap step (the hub's Flux still needs them to remove what it put on
// the spoke, and the spoke's own Crossplane to delete the apps' AWS
// resources before that). A hold is composed only when both ends are.
func Holds() []Hold {
	h := []Hold{
		{"role-cluster", "role-cluster", "cluster"},
		{"role-cluster-eks-by-cluster", "role-cluster-eks", "cluster"},
		{"role-cluster-policy-by-cluster", "role-cluster-policy", "cluster"},
		{"role-node", "role-node", "node-group"},
		{"role-node-worker-by-nodes", "role-node-worker", "node-group"},
		{"role-node-cni-by-nodes", "role-node-cni", "node-group"},
		{"role-node-ecr-by-nodes", "role-node-ecr", "node-group"},
		{"role-admin-by-admin-entry", "role-admin", "access-entry-admin"},
		{"role-admin-policy-by-admin-entry", "role-admin-policy", "access-entry-admin"},
		{"cluster-by-nodes", "cluster", "node-group"},
		{"launch-template-by-nodes", "launch-template", "node-group"},
		{"oidc-by-nodes", "oidc-provider", "node-group"},
		{"cluster-by-flux-entry", "cluster", "access-entry-flux"},
		{"flux-entry-by-flux-access", "access-entry-flux", "access-policy-flux"},
		{"cluster-by-admin-entry", "cluster", "access-entry-admin"},
		{"admin-entry-by-admin-access", "access-entry-admin", "access-policy-admin"},
		{"log-group-by-cluster", "log-group", "cluster"},
		{"vpc-by-cluster", "vpc", "cluster"},
		{"igw-by-cluster", "internet-gateway", "cluster"},
		{"route-public-by-cluster", "route-public-default", "cluster"},
		{"route-table-public-by-cluster", "route-table-public", "cluster"},
	}
	// namespaced users: Usages in the user's namespace. The first
	// bootstrap step, and a retired first step while it is kept
	// (retiringSteps), holds what the hub's Flux needs to remove what
	// it put on the spoke.
	for _, by := range []string{BootstrapSteps()[0].Part, retiredESOPart} {
		h = append(h,
			Hold{"nodes-by-" + by, "node-group", StepKeyPrefix + by},
			Hold{"flux-access-by-" + by, "access-policy-flux", StepKeyPrefix + by})
		for _, a := range versions.EKSAddons() {
			h = append(h, Hold{"addon-" + a + "-by-" + by, "addon-" + a, StepKeyPrefix + by})
		}
	}
	for _, r := range []string{"crossplane", "lbc"} {
		h = append(h, Hold{"role-" + r, "role-" + r, "node-group"}, Hold{"role-" + r + "-policy-by-nodes", "role-" + r + "-policy", "node-group"})
	}
	for _, z := range AZSuffixes {
		h = append(h,
			Hold{"public-" + z + "-by-cluster", "subnet-public-" + z, "cluster"},
			Hold{"private-" + z + "-by-cluster", "subnet-private-" + z, "cluster"},
			Hold{"nat-" + z + "-by-cluster", "nat-gateway-" + z, "cluster"},
			Hold{"route-private-" + z + "-by-cluster", "route-private-" + z + "-default", "cluster"},
			Hold{"route-table-private-" + z + "-by-cluster", "route-table-private-" + z, "cluster"},
			Hold{"eip-" + z + "-by-nat", "eip-" + z, "nat-gateway-" + z},
			Hold{"rta-public-" + z + "-by-cluster", "route-table-association-public-" + z, "cluster"},
			Hold{"rta-private-" + z + "-by-cluster", "route-table-association-private-" + z, "cluster"},
		)
	}
	return h
}

// Usages composes every hold of Holds whose ends are both composed. A
// cluster-scoped user gets a ClusterUsage (its `by` has no namespace). A
// namespaced user gets a namespaced Usage in the user's namespace, naming a
// cluster-scoped `of` with an explicit empty namespace (Crossplane would
// look for it in the Usage's namespace otherwise). replayDeletion: a delete
// refused while held is replayed once the hold goes, so teardown does not
// wait for the next poll.
func Usages(p Params, c *Composed) error {
	holds := Holds()
	sort.SliceStable(holds, func(i, j int) bool { return holds[i].Name < holds[j].Name })
	for _, h := range holds {
		of, by := c.Objects[h.Of], c.Objects[h.By]
		if of == nil || by == nil {
			continue
		}
		ofRef, ofNS := usageRef(of)
		byRef, byNS := usageRef(by)
		u := Object{
			"apiVersion": protectionV1, "kind": "ClusterUsage",
			"metadata": Object{"name": p.Spoke + "-uses-" + h.Name},
			"spec":     Object{"replayDeletion": true, "of": ofRef, "by": byRef},
		}
		if byNS != "" {
			u["kind"] = "Usage"
			u["metadata"].(Object)["namespace"] = byNS
			ofRef["resourceRef"].(Object)["namespace"] = ofNS
			delete(byRef["resourceRef"].(Object), "namespace")
		} else if ofNS != "" {
			// A ClusterUsage cannot hold a namespaced object by a
			// cluster-scoped one in crossplane v2.2.1; no hold asks for it.
			ofRef["resourceRef"].(Object)["namespace"] = ofNS
		}
		if err := c.add("usage-"+h.Name, u); err != nil {
			return err
		}
	}
	return nil
}

func usageRef(o Object) (Object, string) {
	md, _ := o["metadata"].(Object)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return Object{"apiVersion": o["apiVersion"], "kind": o["kind"], "resourceRef": Object{"name": name}}, ns
}

// HoldsOf returns the names of the holds that keep the object composed
// under key.
func HoldsOf(key string) []string {
	var out []string
	for _, h := range Holds() {
		if h.Of == key {
			out = append(out, h.Name)
		}
	}
	slices.Sort(out)
	return out
}
