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

func TestOrder(t *testing.T) {
	tests := map[string]struct {
		reason      string
		a, b        string
		before      bool
		nextMinorOf string
	}{
		"older":      {reason: "1.34 is before 1.35", a: "1.34", b: "1.35", before: true, nextMinorOf: "1.35"},
		"same":       {reason: "a version is not before itself", a: "1.35", b: "1.35", before: false, nextMinorOf: "1.36"},
		"newer":      {reason: "1.36 is after 1.35", a: "1.36", b: "1.35", before: false, nextMinorOf: "1.37"},
		"by number":  {reason: "minors compare as numbers, not text", a: "1.9", b: "1.10", before: true, nextMinorOf: "1.10"},
		"unparsable": {reason: "never ordered, returned as is", a: "x", b: "1.35", before: false, nextMinorOf: "x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Before(tc.a, tc.b); got != tc.before {
				t.Errorf("Before(%q, %q) = %v, want %v (%s)", tc.a, tc.b, got, tc.before, tc.reason)
			}
			if got := NextMinor(tc.a); got != tc.nextMinorOf {
				t.Errorf("NextMinor(%q) = %q, want %q (%s)", tc.a, got, tc.nextMinorOf, tc.reason)
			}
		})
	}
	all := Kubernetes()
	if got, ok := NextKubernetes(all[0]); !ok || got != all[1] {
		t.Errorf("NextKubernetes(%s) = %q, %v; want %s", all[0], got, ok, all[1])
	}
	if got, ok := NextKubernetes(all[len(all)-1]); ok {
		t.Errorf("NextKubernetes(newest) = %q, want none", got)
	}
}
