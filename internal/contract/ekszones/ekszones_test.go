package ekszones

import "testing"

func TestUnsupported(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{"use1-az3", true}, {"usw1-az2", true}, {"cac1-az3", true},
		{"use1-az1", false}, {"usw1-az1", false}, {"euw1-az3", false}, {"", false},
	} {
		if got := Unsupported(tt.id); got != tt.want {
			t.Errorf("Unsupported(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
	l := List()
	l[0] = "changed"
	if !Unsupported("use1-az3") {
		t.Error("List exposes the package's slice")
	}
}
