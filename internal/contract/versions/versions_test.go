package versions

import (
	"strings"
	"testing"
)

func TestKubernetesList(t *testing.T) {
	if !IsSupportedKubernetes(DefaultKubernetes) {
		t.Errorf("default %s is not an allowed version", DefaultKubernetes)
	}
	got := Kubernetes()
	got[0] = "0.0" // a copy: callers cannot change the list
	if Kubernetes()[0] == "0.0" {
		t.Error("Kubernetes() returns the package's own slice")
	}
	for i := 1; i < len(kubernetes); i++ {
		_, a, _ := ParseMinor(kubernetes[i-1])
		_, b, _ := ParseMinor(kubernetes[i])
		if b != a+1 {
			t.Errorf("versions not consecutive, oldest first: %v", kubernetes)
		}
	}
}

func TestValidateKubernetes(t *testing.T) {
	for _, tc := range []struct {
		v       string
		wantErr string
	}{
		{"1.35", ""},
		{"1.33", "allowed 1.34, 1.35, 1.36"},
		{"1.35.1", "unsupported"},
		{"", "unsupported"},
	} {
		err := ValidateKubernetes(tc.v)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("ValidateKubernetes(%q) = %v, want %q", tc.v, err, tc.wantErr)
		}
	}
}

func TestCheckUpgrade(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		wantErr  string
	}{
		{"1.34", "1.35", ""},
		{"1.35", "1.36", ""},
		{"1.34", "1.36", "skips a minor version"},
		{"1.36", "1.35", "downgrade"},
		{"1.35", "1.35", "already at"},
		{"1.35", "1.37", "unsupported"},
		{"x", "1.35", "MAJOR.MINOR"},
	} {
		err := CheckUpgrade(tc.from, tc.to)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("CheckUpgrade(%s, %s) = %v, want %q", tc.from, tc.to, err, tc.wantErr)
		}
	}
}
