package compose

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// A change of what EKS fixes at CreateNodegroup (instance types, AMI type,
// capacity type, launch template) is made blue/green: the running group is
// kept as it runs, a group in the other slot is made as the claim asks,
// and the old one goes once the new one is Ready; until then every other
// change still reaches the old group in place.
func TestNodeGroupReplacement(t *testing.T) {
	p := testParams(t) // m7i.large
	runs := converge(t, p)
	steady := runs[len(runs)-1]
	lt := workloadcluster.NodeLaunchTemplateName(spokeiam.ClusterName(p.Input.Hub(), p.Spoke))
	group := func(slot int, created string, ready bool, at Object) Object {
		s := NodeGroupSlots[slot]
		cond := "False"
		if ready {
			cond = "True"
		}
		st := Object{"conditions": []any{Object{"type": "Ready", "status": cond}}}
		if at != nil {
			st["atProvider"] = at
		}
		return Object{"apiVersion": eksV2, "kind": "NodeGroup",
			"metadata": Object{"name": p.Spoke + "-" + s.Part, "creationTimestamp": created}, "status": st}
	}
	running := func(types ...string) Object {
		return Object{"instanceTypes": toAny(types), "amiType": "AL2023_x86_64_STANDARD", "capacityType": "ON_DEMAND",
			"launchTemplate": Object{"name": lt, "version": "1"}, "version": "1.35"}
	}
	legacy := Object{"instanceTypes": []any{"m7i.large"}, "amiType": "AL2023_x86_64_STANDARD", "capacityType": "ON_DEMAND", "version": "1.35"}
	const t1, t2 = "2026-11-01T10:00:00Z", "2026-11-30T10:00:00Z"

	// composed is what the test compares of a composed node group.
	type composed struct {
		Name, External, Types string
		Template              bool
	}
	type want struct {
		groups  map[string]composed // by key
		holds   []string            // usage keys held by or of a node group
		cond    Notice              // NodeGroupCondition, Message left out
		message []string            // what its message says
		lt      Notice              // NodeLaunchTemplateCondition, Message left out
		pending string
	}
	a := composed{Name: "pay-nodes", External: "default", Types: "m7i.large", Template: true}
	b := composed{Name: "pay-nodes-b", External: "default-b", Types: "m7i.large", Template: true}
	holds := func(part string) []string {
		bare := func(n string) string {
			if part == "nodes" {
				return n
			}
			return n + "-by-" + part
		}
		out := []string{"usage-" + part + "-by-" + BootstrapSteps()[0].Part}
		for _, n := range []string{bare("role-node"), bare("role-crossplane"), bare("role-lbc")} {
			out = append(out, "usage-"+n)
		}
		for _, n := range []string{"launch-template", "oidc", "role-crossplane-policy", "role-lbc-policy", "role-node-cni", "role-node-ecr", "role-node-worker"} {
			out = append(out, "usage-"+n+"-by-"+part)
		}
		return out
	}
	holdsA, holdsB := holds("nodes"), holds("nodes-b")
	// the first slot's holds keep the names earlier releases gave them
	if !slices.Contains(holdsA, "usage-role-node-worker-by-nodes") || !slices.Contains(holdsA, "usage-role-node") {
		t.Fatalf("hold names: %q", holdsA)
	}
	asSpecified := Notice{Type: NodeGroupCondition, Status: true, Reason: "AsSpecified"}
	replacing := Notice{Type: NodeGroupCondition, Reason: "Replacing"}
	template := Notice{Type: NodeLaunchTemplateCondition, Status: true, Reason: "LaunchTemplate"}
	m6i := func(c composed) composed { c.Types = "m6i.large"; return c }

	for name, tc := range map[string]struct {
		reason  string
		observe map[string]Object
		cluster bool // the cluster not Ready
		want    want
	}{
		"as asked": {
			reason:  "a group with what the claim asks is updated in place, in its slot",
			observe: map[string]Object{"node-group": group(0, t1, true, running("m7i.large"))},
			want:    want{groups: map[string]composed{"node-group": a}, holds: holdsA, cond: asSpecified, lt: template},
		},
		"nothing known of the group": {
			reason:  "a group observed without spec or atProvider is taken as asked, never replaced on no evidence",
			observe: map[string]Object{"node-group": group(0, t1, true, nil)},
			want:    want{groups: map[string]composed{"node-group": a}, holds: holdsA, cond: asSpecified, lt: template},
		},
		"instance types changed": {
			reason:  "EKS cannot change them in place: the running group is kept as it runs, a second is made as asked",
			observe: map[string]Object{"node-group": group(0, t1, true, running("m6i.large"))},
			want: want{groups: map[string]composed{"node-group": m6i(a), "node-group-b": b}, holds: append(slices.Clone(holdsA), holdsB...),
				cond: replacing, message: []string{"node group default of mgmt-pay is being replaced by node group default-b (instanceTypes m6i.large -> m7i.large)"}, lt: template},
		},
		"instance types an earlier release composed in place": {
			reason: "the previous release composed the new types into the group, which upjet refused: AWS's report decides, not the spec",
			observe: map[string]Object{"node-group": func() Object {
				o := group(0, t1, true, running("m6i.large"))
				o["spec"] = Object{"forProvider": Object{"instanceTypes": []any{"m7i.large"}, "launchTemplate": Object{"name": lt}}}
				return o
			}()},
			want: want{groups: map[string]composed{"node-group": m6i(a), "node-group-b": b}, holds: append(slices.Clone(holdsA), holdsB...),
				cond: replacing, message: []string{"instanceTypes m6i.large -> m7i.large"}, lt: template},
		},
		"the replacement waits for the cluster": {
			reason:  "EKS refuses CreateNodegroup while the cluster is not ACTIVE (an upgrade running); the old group stays",
			observe: map[string]Object{"node-group": group(0, t1, true, running("m6i.large"))},
			cluster: true,
			want: want{groups: map[string]composed{"node-group": m6i(a)}, holds: holdsA, cond: replacing, lt: template,
				pending: "node group default-b waits for cluster mgmt-pay to be active"},
		},
		"the replacement not Ready yet": {
			reason: "both run until EKS reports the new group ACTIVE",
			observe: map[string]Object{"node-group": group(0, t1, true, running("m6i.large")),
				"node-group-b": group(1, t2, false, running("m7i.large"))},
			want: want{groups: map[string]composed{"node-group": m6i(a), "node-group-b": b}, holds: append(slices.Clone(holdsA), holdsB...),
				cond: replacing, message: []string{"instanceTypes m6i.large -> m7i.large"}, lt: template},
		},
		"the replacement Ready": {
			reason: "the old group and its holds go (Crossplane deletes them, EKS drains its nodes); the new one holds what the old one held",
			observe: map[string]Object{"node-group": group(0, t1, true, running("m6i.large")),
				"node-group-b": group(1, t2, true, running("m7i.large"))},
			want: want{groups: map[string]composed{"node-group-b": b}, holds: holdsB, cond: asSpecified, lt: template},
		},
		"the second slot alone, as asked": {
			reason:  "after a replacement the group lives in the second slot, updated in place",
			observe: map[string]Object{"node-group-b": group(1, t2, true, running("m7i.large"))},
			want:    want{groups: map[string]composed{"node-group-b": b}, holds: holdsB, cond: asSpecified, lt: template},
		},
		"a replacement back into the first slot": {
			reason:  "from the second slot the next replacement goes to the first, under the name the first group had",
			observe: map[string]Object{"node-group-b": group(1, t2, true, running("m6i.large"))},
			want: want{groups: map[string]composed{"node-group": a, "node-group-b": m6i(b)}, holds: append(slices.Clone(holdsA), holdsB...),
				cond: replacing, message: []string{"node group default-b of mgmt-pay is being replaced by node group default"}, lt: template},
		},
		"the claim asks for the old shape again": {
			reason: "a replacement not Ready yet is undone: the new group goes, the old one stays",
			observe: map[string]Object{"node-group": group(0, t1, true, running("m7i.large")),
				"node-group-b": group(1, t2, false, running("m6i.large"))},
			want: want{groups: map[string]composed{"node-group": a}, holds: holdsA, cond: replacing, lt: template,
				message: []string{"node group default-b of mgmt-pay, which was replacing node group default (instanceTypes m7i.large -> m6i.large), is deleted"}},
		},
		"the newer group is not the second slot": {
			reason: "creation time, not the slot, says which group replaces which",
			observe: map[string]Object{"node-group": group(0, t2, false, running("m7i.large")),
				"node-group-b": group(1, t1, true, running("m6i.large"))},
			want: want{groups: map[string]composed{"node-group": a, "node-group-b": m6i(b)}, holds: append(slices.Clone(holdsA), holdsB...),
				cond: replacing, message: []string{"node group default-b of mgmt-pay is being replaced by node group default"}, lt: template},
		},
		"a group a release before the launch template made": {
			reason:  "EKS takes a template only at CreateNodegroup: the group runs on without one, and a group from the template replaces it",
			observe: map[string]Object{"node-group": group(0, t1, true, legacy)},
			want: want{groups: map[string]composed{"node-group": {Name: "pay-nodes", External: "default", Types: "m7i.large"}, "node-group-b": b},
				holds: append(slices.Clone(holdsA), holdsB...), cond: replacing, message: []string{"launchTemplate (none) -> " + lt},
				lt: Notice{Type: NodeLaunchTemplateCondition, Warn: true, Reason: "NodeGroupPredatesLaunchTemplate"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			q := p
			q.Observed = observeAll(steady)
			for _, s := range NodeGroupSlots {
				delete(q.Observed, s.Key)
			}
			maps.Copy(q.Observed, tc.observe)
			if tc.cluster {
				q.Observed["cluster"]["status"].(Object)["conditions"] = []any{Object{"type": "Ready", "status": "False", "reason": "Updating"}}
			}
			c, err := Compose(q)
			if err != nil {
				t.Fatal(err)
			}
			got := want{groups: map[string]composed{}}
			for k, o := range c.Objects {
				switch {
				case o["kind"] == "NodeGroup":
					fp := o["spec"].(Object)["forProvider"].(Object)
					var types []string
					for _, x := range fp["instanceTypes"].([]any) {
						types = append(types, x.(string))
					}
					_, hasLT := fp["launchTemplate"]
					got.groups[k] = composed{Name: str(o, "metadata", "name"), External: str(o, "metadata", "annotations", externalName),
						Types: strings.Join(types, ","), Template: hasLT}
				case o["kind"] == "ClusterUsage" || o["kind"] == "Usage":
					for _, end := range []string{"of", "by"} {
						if field(o, "spec", end, "kind") == "NodeGroup" {
							got.holds = append(got.holds, k)
						}
					}
				}
			}
			slices.Sort(got.holds)
			var msg string
			for _, n := range c.Notices {
				switch n.Type {
				case NodeGroupCondition:
					msg, n.Message = n.Message, ""
					got.cond = n
				case NodeLaunchTemplateCondition:
					n.Message = ""
					got.lt = n
				}
			}
			for _, m := range c.Pending {
				if strings.HasPrefix(m, "node group ") {
					got.pending = m
				}
			}
			w := tc.want
			slices.Sort(w.holds)
			w.message = nil
			if d := cmp.Diff(w, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, d)
			}
			for _, m := range tc.want.message {
				if !strings.Contains(msg, m) {
					t.Errorf("%s: %s message %q does not say %q", tc.reason, NodeGroupCondition, msg, m)
				}
			}
		})
	}
}
