package compose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func observedWith(kind, name string, conds ...map[string]any) Object {
	l := make([]any, len(conds))
	for i, c := range conds {
		l[i] = c
	}
	return Object{"kind": kind, "metadata": map[string]any{"name": name}, "status": map[string]any{"conditions": l}}
}

func TestSyncedPart(t *testing.T) {
	refused := "update failed: refuse to update the external resource because the following update requires replacing it: " +
		`cannot change the value of the argument "instance_types.0" from "m6i.large" to "m7i.large"`
	cases := map[string]struct {
		reason   string
		observed map[string]Object
		want     []Notice
	}{
		"FirstRun": {
			reason: "Nothing observed yet: no condition, so a new claim is not told its resources are synced.",
		},
		"AllSynced": {
			reason: "Every observed resource Synced: the condition is True.",
			observed: map[string]Object{
				"vpc":        observedWith("VPC", "pay-vpc", map[string]any{"type": "Synced", "status": "True"}),
				"node-group": observedWith("NodeGroup", "pay", map[string]any{"type": "Synced", "status": "True"}),
			},
			want: []Notice{{Type: ResourcesSyncedCondition, Status: true, Reason: "Synced"}},
		},
		"NotYetReported": {
			reason:   "A resource without a Synced condition yet is not a failure.",
			observed: map[string]Object{"vpc": observedWith("VPC", "pay-vpc")},
			want:     []Notice{{Type: ResourcesSyncedCondition, Status: true, Reason: "Synced"}},
		},
		"WaitingForReferences": {
			reason: "A node group waiting for its cluster to be ACTIVE is on the condition, without a warning event: every creation goes through it.",
			observed: map[string]Object{
				"node-group": observedWith("NodeGroup", "pay",
					map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError",
						"message": "cannot resolve references: spec.forProvider.clusterName: referenced field was empty (referenced resource may not yet be ready)"}),
			},
			want: []Notice{{Type: ResourcesSyncedCondition, Reason: "ComposedResourceNotSynced",
				Message: "composed resources not synced, their desired state is not applied: node-group (NodeGroup pay): ReconcileError: " +
					"cannot resolve references: spec.forProvider.clusterName: referenced field was empty (referenced resource may not yet be ready)"}},
		},
		"RefusedUpdate": {
			reason: "The provider refused an update AWS cannot make in place: the claim says which resource and why, as a warning.",
			observed: map[string]Object{
				"vpc": observedWith("VPC", "pay-vpc", map[string]any{"type": "Synced", "status": "True"}),
				"node-group": observedWith("NodeGroup", "pay",
					map[string]any{"type": "Ready", "status": "True", "reason": "Available"},
					map[string]any{"type": "Synced", "status": "False", "reason": "ReconcileError", "message": refused}),
			},
			want: []Notice{{Type: ResourcesSyncedCondition, Warn: true, Reason: "ComposedResourceNotSynced",
				Message: "composed resources not synced, their desired state is not applied: node-group (NodeGroup pay): ReconcileError: " + refused}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &Composed{Objects: map[string]Object{}}
			if err := syncedPart(Params{Observed: tc.observed}, c); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.Notices); diff != "" {
				t.Errorf("%s\nsyncedPart(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
