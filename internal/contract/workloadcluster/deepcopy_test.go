package workloadcluster

import (
	"reflect"
	"testing"
)

// fill sets every field reachable in v (a settable struct value) to a
// non-zero value, and fails on a field kind DeepCopy does not know.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Int:
		v.SetInt(1)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			t.Fatalf("%s: slice of %s: teach DeepCopy and this test", path, v.Type().Elem())
		}
		v.Set(reflect.ValueOf([]string{"x"}))
	case reflect.Map:
		if v.Type() != reflect.TypeOf(map[string]string{}) {
			t.Fatalf("%s: %s: teach DeepCopy and this test", path, v.Type())
		}
		v.Set(reflect.ValueOf(map[string]string{"k": "v"}))
	default:
		t.Fatalf("%s: %s field: teach DeepCopy and this test", path, v.Kind())
	}
}

// mutate changes every slice element and map entry reachable in v.
func mutate(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			mutate(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			v.Index(i).SetString("changed")
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			v.SetMapIndex(k, reflect.ValueOf("changed"))
		}
	}
}

func TestClaimDeepCopySharesNothing(t *testing.T) {
	tests := []struct {
		name string
		in   func() *Claim
	}{
		{"every field set", func() *Claim {
			c := &Claim{}
			fill(t, reflect.ValueOf(c).Elem(), "Claim")
			return c
		}},
		{"zero claim", func() *Claim { return &Claim{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.in()
			want := tt.in()
			cp := orig.DeepCopy()
			if !reflect.DeepEqual(cp, orig) {
				t.Fatalf("copy differs: %+v vs %+v", cp, orig)
			}
			mutate(reflect.ValueOf(cp).Elem())
			if !reflect.DeepEqual(orig, want) {
				t.Errorf("changing the copy changed the original: %+v", orig)
			}
		})
	}
	if (*Claim)(nil).DeepCopy() != nil {
		t.Error("nil claim: want nil copy")
	}
}
