package xrender

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
)

// TestObserveLeavesDesired: observe shares what it does not write with the
// desired objects, so the desired objects (the last pass's are the
// result) must come out unchanged while the observed ones carry a name
// and the provider's status.
func TestObserveLeavesDesired(t *testing.T) {
	cd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "iam.aws.m.upbound.io/v1beta1",
		"kind":       "Role",
		"metadata": map[string]any{
			"generateName": "spoke-a-",
			"annotations":  map[string]any{"crossplane.io/composition-resource-name": "node-role"},
		},
		"spec":   map[string]any{"forProvider": map[string]any{"assumeRolePolicy": "{}", "tags": map[string]any{"a": "b"}}},
		"status": map[string]any{"note": "desired"},
	}}
	desired := []*unstructured.Unstructured{cd}
	before := cd.DeepCopy().Object
	got := observe(desired, clusterinfo.Example())
	if !reflect.DeepEqual(desired[0].Object, before) {
		t.Fatalf("observe changed the desired object:\nbefore %v\nafter  %v", before, desired[0].Object)
	}
	o := got[0]
	if o.GetName() == "" {
		t.Error("observed object has no name")
	}
	status, _ := o.Object["status"].(map[string]any)
	if status["note"] != "desired" || status["atProvider"] == nil || status["conditions"] == nil {
		t.Errorf("observed status = %v, want the desired status plus atProvider and conditions", status)
	}
}
