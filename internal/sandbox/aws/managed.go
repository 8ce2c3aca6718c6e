package aws

import (
	"encoding/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// managed is an unstructured managed resource seen through
// crossplane-runtime's resource.Managed, so the reference resolution the
// provider runs (crossplane-runtime's reference.APIResolver) runs here
// unchanged.
//
// The Unstructured is embedded by value: clients decode into a *managed
// through its promoted UnmarshalJSON, and controller-runtime's fake client
// zeroes the object first.
type managed struct {
	unstructured.Unstructured
}

var _ resource.Managed = &managed{}

func (m *managed) GetManagementPolicies() xpv2.ManagementPolicies {
	var p xpv2.ManagementPolicies
	raw, _, _ := unstructured.NestedSlice(m.Object, "spec", "managementPolicies")
	for _, v := range raw {
		if s, ok := v.(string); ok {
			p = append(p, xpv2.ManagementAction(s))
		}
	}
	if len(p) == 0 {
		p = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	}
	return p
}

func (m *managed) SetManagementPolicies(p xpv2.ManagementPolicies) {
	l := make([]any, len(p))
	for i, a := range p {
		l[i] = string(a)
	}
	_ = unstructured.SetNestedSlice(m.Object, l, "spec", "managementPolicies")
}

// conditioned reads status.conditions as crossplane-runtime's
// ConditionedStatus.
func (m *managed) conditioned() *xpv2.ConditionedStatus {
	cs := &xpv2.ConditionedStatus{}
	if raw, ok, _ := unstructured.NestedFieldNoCopy(m.Object, "status", "conditions"); ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &cs.Conditions)
	}
	return cs
}

func (m *managed) GetCondition(ct xpv2.ConditionType) xpv2.Condition {
	return m.conditioned().GetCondition(ct)
}

// SetConditions merges c as crossplane-runtime does (a condition whose
// status, reason and message are unchanged keeps its transition time).
func (m *managed) SetConditions(c ...xpv2.Condition) {
	cs := m.conditioned()
	cs.SetConditions(c...)
	b, _ := json.Marshal(cs.Conditions)
	var l []any
	_ = json.Unmarshal(b, &l)
	statusMap(&m.Unstructured)
	_ = unstructured.SetNestedSlice(m.Object, l, "status", "conditions")
}

// managedList is a list of one managed kind for selector resolution.
type managedList struct {
	unstructured.UnstructuredList
}

func (l *managedList) GetItems() []resource.Managed {
	out := make([]resource.Managed, len(l.Items))
	for i := range l.Items {
		out[i] = &managed{Unstructured: l.Items[i]}
	}
	return out
}

// statusMap makes status a map (a client may hand back "status": null,
// under which every unstructured.SetNested* fails).
func statusMap(u *unstructured.Unstructured) {
	if _, ok := u.Object["status"].(map[string]any); !ok {
		u.Object["status"] = map[string]any{}
	}
}
