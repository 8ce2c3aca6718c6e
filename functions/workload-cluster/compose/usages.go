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

// Holds lists every hold of a spoke, in teardown terms. A hold is composed
// only when both ends are. Each is one object the composite applies at
// every reconcile (and one Usage Crossplane keeps), so a spoke holds only
// what AWS and the provider would otherwise let go too early:
//   - IAM roles, their policies and attachments outlive the cluster and
//     nodes that act with them: IAM deletes a role in use by EKS, which
//     then cannot clean up its network interfaces, and the spoke's
//     controllers (VPC CNI, load balancer controller, Crossplane) need
//     their roles, and the identity provider their tokens, while the nodes
//     drain;
//   - the log group outlives the cluster: EKS writes the control plane's
//     logs to it and recreates it if it is gone;
//   - the spoke's egress outlives the cluster (and so the nodes and the
//     first bootstrap step): NAT gateways, route tables, routes and
//     associations, which AWS deletes while in use (the provider's route
//     table delete disassociates every subnet first), and the internet
//     gateway, whose delete the provider makes synchronously, retrying
//     AWS's refusal for its 20-minute timeout inside a reconcile;
//   - the node group outlives the first bootstrap step, with its EKS
//     add-ons and the hub's Flux access (the hub's Flux still needs them to
//     remove what it put on the spoke, and the spoke's own Crossplane to
//     delete the apps' AWS resources before that), and the launch template
//     the node group; an access policy association its access entry (EKS
//     does not say that it deletes an entry's associations with it).
//
// What AWS itself refuses to delete while in use, and the provider
// deletes asynchronously (UseAsync) until AWS takes it, is not held: the
// VPC and subnets (DependencyViolation while anything is in them,
// retried by the provider's delete), a NAT gateway's Elastic IP
// (AuthFailure while the gateway holds it), the cluster while it has node
// groups (ResourceInUseException). Nor is what goes with the cluster or
// needs nothing of it: its access entries (gone with it, and the
// provider's delete takes ResourceNotFoundException as done) and the
// admin role, whose access ends at teardown's start. The stand-in AWS
// refuses each of these deletes as AWS does (internal/sandbox/aws
// inUseRefusal).
func Holds() []Hold {
	h := []Hold{
		{"role-cluster", "role-cluster", "cluster"},
		{"role-cluster-eks-by-cluster", "role-cluster-eks", "cluster"},
		{"role-cluster-policy-by-cluster", "role-cluster-policy", "cluster"},
		{"flux-entry-by-flux-access", "access-entry-flux", "access-policy-flux"},
		{"admin-entry-by-admin-access", "access-entry-admin", "access-policy-admin"},
		{"log-group-by-cluster", "log-group", "cluster"},
		{"igw-by-cluster", "internet-gateway", "cluster"},
		{"route-public-by-cluster", "route-public-default", "cluster"},
		{"route-table-public-by-cluster", "route-table-public", "cluster"},
	}
	// namespaced users: Usages in the user's namespace. The first
	// bootstrap step, and a retired first step while it is kept
	// (retiringSteps), holds what the hub's Flux needs to remove what
	// it put on the spoke.
	for _, by := range []string{BootstrapSteps()[0].Part, retiredESOPart} {
		h = append(h, Hold{"flux-access-by-" + by, "access-policy-flux", StepKeyPrefix + by})
		for _, a := range versions.EKSAddons() {
			h = append(h, Hold{"addon-" + a + "-by-" + by, "addon-" + a, StepKeyPrefix + by})
		}
	}
	// Each node group holds the same, and the first bootstrap step holds
	// each (NodeGroupSlots: two while one replaces the other). The first
	// slot's holds keep the names every earlier release gave them.
	for i, s := range NodeGroupSlots {
		bare := func(n string) string { // a name that did not say "by nodes"
			if i == 0 {
				return n
			}
			return n + "-by-" + s.Part
		}
		h = append(h,
			Hold{bare("role-node"), "role-node", s.Key},
			Hold{"role-node-worker-by-" + s.Part, "role-node-worker", s.Key},
			Hold{"role-node-cni-by-" + s.Part, "role-node-cni", s.Key},
			Hold{"role-node-ecr-by-" + s.Part, "role-node-ecr", s.Key},
			Hold{"launch-template-by-" + s.Part, "launch-template", s.Key},
			Hold{"oidc-by-" + s.Part, "oidc-provider", s.Key})
		for _, r := range []string{"crossplane", "lbc"} {
			h = append(h, Hold{bare("role-" + r), "role-" + r, s.Key}, Hold{"role-" + r + "-policy-by-" + s.Part, "role-" + r + "-policy", s.Key})
		}
		for _, by := range []string{BootstrapSteps()[0].Part, retiredESOPart} {
			h = append(h, Hold{s.Part + "-by-" + by, s.Key, StepKeyPrefix + by})
		}
	}
	for _, z := range AZSuffixes {
		h = append(h,
			Hold{"nat-" + z + "-by-cluster", "nat-gateway-" + z, "cluster"},
			Hold{"route-private-" + z + "-by-cluster", "route-private-" + z + "-default", "cluster"},
			Hold{"route-table-private-" + z + "-by-cluster", "route-table-private-" + z, "cluster"},
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
