package compose

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
)

// Every input field is fed by exactly one cluster-info variable, so the
// Composition's step input (written from InputVariables) cannot miss one.
func TestInputVariablesCoverEveryField(t *testing.T) {
	vars := InputVariables()
	typ := reflect.TypeOf(Input{})
	for i := range typ.NumField() {
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		v, ok := vars[tag]
		if !ok {
			t.Errorf("input field %s has no cluster-info variable", tag)
			continue
		}
		if !slices.Contains(clusterinfo.Names(), v) {
			t.Errorf("input field %s: %s is not a cluster-info variable", tag, v)
		}
		delete(vars, tag)
	}
	for k := range vars {
		t.Errorf("InputVariables names %s, which is no input field", k)
	}
	// The example cluster-info makes a valid input.
	in, err := InputFrom(clusterinfo.Example())
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
}
