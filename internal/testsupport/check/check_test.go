package check

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
)

func TestReads(t *testing.T) {
	o := &unstructured.Unstructured{Object: map[string]any{
		"status": map[string]any{
			"observedGeneration": int64(3),
			"conditions": []any{
				map[string]any{"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
				map[string]any{"type": "Ready", "status": "False", "reason": "Creating", "message": "waiting for the cluster", "lastTransitionTime": "2026-11-29T21:00:00Z"},
			},
			"inventory": map[string]any{"entries": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}},
		},
	}}
	empty := &unstructured.Unstructured{Object: map[string]any{}}
	type read struct {
		Status, Reason, Message string
		Transition              time.Time
		Generation              int64
		Inventory               int
	}
	at := func(o *unstructured.Unstructured, typ string) read {
		s, r, m := Condition(o, typ)
		return read{s, r, m, ReadyTransition(o), ObservedGeneration(o), InventorySize(o)}
	}
	cases := map[string]struct {
		reason string
		got    read
		want   read
	}{
		"Ready": {
			reason: "the condition asked for, not the first one, with when Ready last changed",
			got:    at(o, "Ready"),
			want:   read{"False", "Creating", "waiting for the cluster", time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC), 3, 2},
		},
		"Synced": {
			reason: "another condition of the same object",
			got:    at(o, "Synced"),
			want:   read{"True", "ReconcileSuccess", "", time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC), 3, 2},
		},
		"Absent": {
			reason: "an object without status reads as empty, not as an error",
			got:    at(empty, "Ready"),
			want:   read{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	if !IsTrue("True", "") || IsTrue("False", "") || IsTrue("", "") {
		t.Error("IsTrue accepts only the status True")
	}
	if got, want := LedgerLine(aws.Resource{Kind: "VPC", ID: "vpc-1", Owner: "apps-staging-vpc", Account: "222233334444"}), "VPC vpc-1 (apps-staging-vpc) in 222233334444"; got != want {
		t.Errorf("LedgerLine = %q, want %q", got, want)
	}
}
