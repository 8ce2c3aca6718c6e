package compose

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// NodeGroupSlot is one of the two places a spoke's managed node group is
// composed in. EKS fixes a node group's instance types, AMI type, capacity
// type and launch template at CreateNodegroup: UpdateNodegroupConfig takes
// labels, taints, scaling, update and repair settings, UpdateNodegroupVersion
// the Kubernetes version, release and launch template version, and
// terraform-provider-aws marks instance_types, ami_type, capacity_type and
// launch_template.0.name ForceNew (internal/service/eks/node_group.go), so
// upjet refuses an update that changes one, and with it every other change
// of the group (scaling, upgrades). Such a change is made blue/green: a node
// group in the other slot is created with it, and once EKS reports it ACTIVE
// the old one is deleted (EKS cordons and drains its nodes, honouring
// PodDisruptionBudgets, DeleteNodegroup). The first slot keeps the name
// every earlier release gave the group, so existing spokes are not replaced
// by the upgrade.
type NodeGroupSlot struct {
	// Key is its composition-resource-name, Part its managed resource's
	// name after "<spoke>-", Name the node group's name in its cluster.
	Key, Part, Name string
}

// NodeGroupSlots are the two slots, the first the one a new spoke starts in.
var NodeGroupSlots = [2]NodeGroupSlot{
	{Key: "node-group", Part: "nodes", Name: NodeGroupName},
	{Key: "node-group-b", Part: "nodes-b", Name: NodeGroupName + "-b"},
}

// NodeGroupCondition is the XR (and claim) condition that says whether the
// spoke's node group has what EKS fixes at its creation as the claim asks
// (True, AsSpecified), or is being replaced by one that does (False,
// Replacing, naming what differs and the groups).
const NodeGroupCondition = "NodeGroupAsSpecified"

// nodeShape is what EKS fixes of a node group at CreateNodegroup, of what
// the fleet composes (NodeGroupSlot).
type nodeShape struct {
	InstanceTypes, AMIType, CapacityType string
	// LaunchTemplate is the template's name, "" for a group made without
	// one (a release before the launch template).
	LaunchTemplate string
}

// shapeOf reads a node group's shape from its forProvider or atProvider.
func shapeOf(fp any) nodeShape {
	var types []string
	listed, _ := field(fp, "instanceTypes").([]any)
	for _, t := range listed {
		if s, ok := t.(string); ok {
			types = append(types, s)
		}
	}
	return nodeShape{InstanceTypes: strings.Join(types, ","), AMIType: str(fp, "amiType"),
		CapacityType: str(fp, "capacityType"), LaunchTemplate: str(fp, "launchTemplate", "name")}
}

// runningShape is the shape of an observed node group as AWS reports it
// (status.atProvider, once the provider observed the group: it reports
// every argument), else as it was last composed; known is false when
// neither is observed.
func runningShape(o Object) (s nodeShape, known bool) {
	if at := field(o, "status", "atProvider"); field(at, "instanceTypes") != nil {
		return shapeOf(at), true
	}
	fp := field(o, "spec", "forProvider")
	return shapeOf(fp), fp != nil
}

// differences lists what of want a group of shape s lacks, as
// "field old -> new"; a field s does not know (not reported, not composed)
// is taken as wanted, except the launch template, whose absence is the
// group's.
func (s nodeShape) differences(want nodeShape) []string {
	var out []string
	for _, f := range []struct{ name, have, want string }{
		{"instanceTypes", s.InstanceTypes, want.InstanceTypes},
		{"amiType", s.AMIType, want.AMIType},
		{"capacityType", s.CapacityType, want.CapacityType},
	} {
		if f.have != "" && f.have != f.want {
			out = append(out, fmt.Sprintf("%s %s -> %s", f.name, f.have, f.want))
		}
	}
	if s.LaunchTemplate != want.LaunchTemplate {
		out = append(out, fmt.Sprintf("launchTemplate %s -> %s", orDefault(s.LaunchTemplate, "(none)"), orDefault(want.LaunchTemplate, "(none)")))
	}
	return out
}

// slotPlan is how one slot's node group is composed.
type slotPlan struct {
	Slot NodeGroupSlot
	// Keep is the shape the group runs with, kept because EKS cannot
	// change it (nil: composed as the claim asks).
	Keep *nodeShape
	// New: not observed yet.
	New bool
}

// nodeGroupPlan is what becomes of the spoke's node groups this reconcile.
type nodeGroupPlan struct {
	Slots []slotPlan
	// From and To name the groups of a replacement running (From is
	// replaced by To), with what differs and the shape From runs with;
	// Undone: To is being removed and From kept, because the claim asks
	// for From's shape again.
	From, To  NodeGroupSlot
	Diff      []string
	FromShape nodeShape
	Undone    bool
}

// Replacing reports a replacement running.
func (n nodeGroupPlan) Replacing() bool { return n.To.Key != "" }

// planNodeGroups decides, from the observed node groups and the shape the
// claim asks for, which slots are composed and how:
//   - no group: the first slot, as asked;
//   - one group as asked: it, as asked (scaling and versions in place);
//   - one group that differs: it, kept as it runs, and a new group in the
//     other slot, as asked;
//   - two groups (a replacement running; the newer by creation time): once
//     the newer is Ready, it alone (the older is deleted, EKS drains it);
//     if the claim asks for the older's shape again, the older alone (the
//     replacement is undone); else both, each kept as it runs where it
//     differs.
func planNodeGroups(observed map[string]Object, want nodeShape) nodeGroupPlan {
	var live []NodeGroupSlot
	for _, s := range NodeGroupSlots {
		if _, ok := observed[s.Key]; ok {
			live = append(live, s)
		}
	}
	plan := func(s NodeGroupSlot) slotPlan {
		rs, known := runningShape(observed[s.Key])
		if !known || len(rs.differences(want)) == 0 {
			return slotPlan{Slot: s}
		}
		return slotPlan{Slot: s, Keep: &rs}
	}
	switch len(live) {
	case 0:
		return nodeGroupPlan{Slots: []slotPlan{{Slot: NodeGroupSlots[0], New: true}}}
	case 1:
		cur := plan(live[0])
		if cur.Keep == nil {
			return nodeGroupPlan{Slots: []slotPlan{cur}}
		}
		next := NodeGroupSlots[0]
		if live[0] == next {
			next = NodeGroupSlots[1]
		}
		return nodeGroupPlan{Slots: []slotPlan{cur, {Slot: next, New: true}}, From: live[0], To: next, Diff: cur.Keep.differences(want), FromShape: *cur.Keep}
	}
	older, newer := live[0], live[1]
	if created(observed[newer.Key]).Before(created(observed[older.Key])) {
		older, newer = newer, older
	}
	o, n := plan(older), plan(newer)
	olderShape, _ := runningShape(observed[older.Key])
	newerShape, _ := runningShape(observed[newer.Key])
	diff := olderShape.differences(newerShape)
	switch {
	case o.Keep == nil && n.Keep != nil:
		return nodeGroupPlan{Slots: []slotPlan{o}, From: older, To: newer, Diff: diff, FromShape: olderShape, Undone: true}
	case IsReady(observed[newer.Key]):
		return nodeGroupPlan{Slots: []slotPlan{n}}
	}
	slots := []slotPlan{o, n}
	slices.SortFunc(slots, func(a, b slotPlan) int { return strings.Compare(a.Slot.Key, b.Slot.Key) })
	return nodeGroupPlan{Slots: slots, From: older, To: newer, Diff: diff, FromShape: olderShape}
}

// created is an observed object's creation time (zero if unknown).
func created(o Object) time.Time {
	t, _ := time.Parse(time.RFC3339, str(o, "metadata", "creationTimestamp"))
	return t
}

// liveNodeGroups are the observed node groups, in slot order.
func liveNodeGroups(observed map[string]Object) []Object {
	var out []Object
	for _, s := range NodeGroupSlots {
		if o, ok := observed[s.Key]; ok {
			out = append(out, o)
		}
	}
	return out
}

// nodeGroupNotices reports the node groups' conditions once one exists:
// NodeGroupCondition, and NodeLaunchTemplateCondition (False while a
// group made without the launch template still runs).
func nodeGroupNotices(p Params, c *Composed, plan nodeGroupPlan, cluster, launchTemplate string) {
	if len(liveNodeGroups(p.Observed)) == 0 {
		return
	}
	template := Notice{Type: NodeLaunchTemplateCondition, Status: true, Reason: "LaunchTemplate"}
	if !plan.Replacing() {
		c.Notices = append(c.Notices, Notice{Type: NodeGroupCondition, Status: true, Reason: "AsSpecified"}, template)
		return
	}
	diff := strings.Join(plan.Diff, ", ")
	msg := fmt.Sprintf("node group %s of %s is being replaced by node group %s (%s): EKS fixes these at CreateNodegroup, so %s is created with them and, once ACTIVE, %s is drained and deleted",
		plan.From.Name, cluster, plan.To.Name, diff, plan.To.Name, plan.From.Name)
	if plan.Undone {
		msg = fmt.Sprintf("node group %s of %s, which was replacing node group %s (%s), is deleted: the claim asks for %s's again",
			plan.To.Name, cluster, plan.From.Name, diff, plan.From.Name)
	}
	c.Notices = append(c.Notices, Notice{Type: NodeGroupCondition, Reason: "Replacing", Message: msg})
	if plan.FromShape.LaunchTemplate == "" {
		template = Notice{Type: NodeLaunchTemplateCondition, Warn: true, Reason: "NodeGroupPredatesLaunchTemplate",
			Message: fmt.Sprintf("node group %s of %s was created without the launch template %s, and EKS cannot add one in place: its nodes' primary network interfaces carry no fleet tag, so the VPC CNI (under the spoke's permissions boundary) cannot assign pod IPs on them; node group %s replaces it from the template",
				plan.From.Name, cluster, launchTemplate, plan.To.Name)}
	}
	c.Notices = append(c.Notices, template)
}
