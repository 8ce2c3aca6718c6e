package binaries

import (
	"slices"
	"strings"
	"testing"
)

// TestKeepEntries: an upstream registration map cut to the keys kept, in
// upstream's order, with the imports only the dropped entries used
// removed and every other line as upstream wrote it.
func TestKeepEntries(t *testing.T) {
	const src = `package provider

import (
	"fmt"

	chart "example.com/helm/v4"
	"example.com/resource"
	"example.com/unused"
	yamlv2 "example.com/yaml/v2"
)

// factories are the component providers.
var factories = map[string]resource.Factory{
	"kubernetes:yaml/v2:ConfigFile":  yamlv2.NewConfigFile,
	"kubernetes:yaml/v2:ConfigGroup": yamlv2.NewConfigGroup,
	"kubernetes:helm.sh/v4:Chart":    chart.New,
}

func Construct(typ string) error { return fmt.Errorf("unknown %s", typ) }
`
	cases := map[string]struct {
		reason  string
		name    string
		keep    []string
		want    string
		wantErr string
	}{
		"none kept": {reason: "every entry and the imports only they used go; an import unused before stays",
			name: "factories",
			want: `package provider

import (
	"fmt"

	"example.com/resource"
	"example.com/unused"
)

// factories are the component providers.
var factories = map[string]resource.Factory{}

func Construct(typ string) error { return fmt.Errorf("unknown %s", typ) }
`},
		"one kept": {reason: "a kept entry keeps its import and its line (the printer keeps the dropped line before it as a blank one)",
			name: "factories", keep: []string{"kubernetes:yaml/v2:ConfigGroup"},
			want: `package provider

import (
	"fmt"

	"example.com/resource"
	"example.com/unused"
	yamlv2 "example.com/yaml/v2"
)

// factories are the component providers.
var factories = map[string]resource.Factory{

	"kubernetes:yaml/v2:ConfigGroup": yamlv2.NewConfigGroup,
}

func Construct(typ string) error { return fmt.Errorf("unknown %s", typ) }
`},
		"kept key missing": {reason: "a key to keep that upstream dropped or renamed fails, naming it",
			name: "factories", keep: []string{"kubernetes:kustomize/v2:Directory"},
			wantErr: `variable factories has no entry "kubernetes:kustomize/v2:Directory" to keep`},
		"no such variable": {reason: "a variable upstream renamed fails rather than cutting nothing",
			name: "resourceProviders", wantErr: "no package-level variable resourceProviders"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := keepEntries([]byte(src), tc.name, tc.keep)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s: error %v, want %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if string(got) != tc.want {
				t.Errorf("%s: got\n%s\nwant\n%s", tc.reason, got, tc.want)
			}
		})
	}
	keys, err := MapKeys([]byte(src), "factories")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kubernetes:yaml/v2:ConfigFile", "kubernetes:yaml/v2:ConfigGroup", "kubernetes:helm.sh/v4:Chart"}; !slices.Equal(keys, want) {
		t.Errorf("MapKeys: %q, want %q (source order)", keys, want)
	}
}
