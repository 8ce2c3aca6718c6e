package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestCheckClaimControls(t *testing.T) {
	tests := []struct {
		name      string
		spec      string // YAML of the claim's spec
		wantSet   bool
		wantErr   string
		wantRules []string // family/rule of each violation, in order
		want      []string // in the messages
	}{
		{"none", "region: eu-west-1", false, "", nil, nil},
		{"foreground", "compositeDeletePolicy: Foreground", true, "", nil, nil},
		{"background", "compositeDeletePolicy: Background", true, "", []string{"policy/delete-policy"}, []string{`"Background"`, "Foreground"}},
		{"unknown delete policy", "compositeDeletePolicy: Orphan", true, "", []string{"api/delete-policy"}, []string{`"Orphan"`}},
		{"platform composition", "compositionRef: {name: workload-cluster-eks}", true, "", nil, nil},
		{"other composition", "compositionRef: {name: cheap-clusters}", true, "", []string{"policy/composition"}, []string{`"cheap-clusters"`, "workload-cluster-eks"}},
		{"selector", "compositionSelector: {matchLabels: {provider: aws}}", true, "", []string{"policy/composition"}, []string{"workload-cluster-eks"}},
		{"platform revision", "compositionRevisionRef: {name: workload-cluster-eks-1a2b3c4}", true, "", nil, nil},
		{"other revision", "compositionRevisionRef: {name: cheap-clusters-1a2b3c4}", true, "", []string{"policy/composition"}, []string{`"cheap-clusters-1a2b3c4"`, "workload-cluster-eks-<hash>"}},
		{"revision selector", "compositionRevisionSelector: {matchLabels: {channel: dev}}", true, "", []string{"policy/composition"}, nil},
		{"manual updates", "compositionUpdatePolicy: Manual", true, "", nil, nil},
		{"bad update policy", "compositionUpdatePolicy: Sometimes", true, "", []string{"api/composition"}, []string{`"Sometimes"`}},
		{"both", "compositeDeletePolicy: Background\ncompositionRef: {name: x}", true, "", []string{"policy/delete-policy", "policy/composition"}, nil},
		{"wrong shape", "compositionRef: {nam: x}", true, "nam", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			c, set, err := SplitClaimControls(spec)
			if set != tt.wantSet {
				t.Errorf("set = %v, want %v", set, tt.wantSet)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range ClaimControlFields {
				if _, ok := spec[f]; ok {
					t.Errorf("spec still has %s", f)
				}
			}
			vs := CheckClaimControls("c1", c)
			var rules []string
			var msgs strings.Builder
			for _, v := range vs {
				rules = append(rules, v.Family+"/"+v.Rule)
				msgs.WriteString(v.Error() + "\n")
				if v.Cluster != "c1" || !strings.HasPrefix(v.Field, "spec.") {
					t.Errorf("violation %+v lacks cluster or field", v)
				}
			}
			if strings.Join(rules, ",") != strings.Join(tt.wantRules, ",") {
				t.Errorf("rules %v, want %v:\n%s", rules, tt.wantRules, msgs.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(msgs.String(), w) {
					t.Errorf("messages lack %q:\n%s", w, msgs.String())
				}
			}
		})
	}
}

// TestPlatformCompositionIsTheXRDDefault holds PlatformComposition to the
// XRD's defaultCompositionRef and the Composition's name.
func TestPlatformCompositionIsTheXRDDefault(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "manifests", "gitops-system", "platform-apis", "workload-cluster")
	tests := []struct {
		file string
		get  func(map[string]any) string
	}{
		{"definition.yaml", func(m map[string]any) string {
			ref, _ := m["spec"].(map[string]any)["defaultCompositionRef"].(map[string]any)
			s, _ := ref["name"].(string)
			return s
		}},
		{"composition.yaml", func(m map[string]any) string {
			s, _ := m["metadata"].(map[string]any)["name"].(string)
			return s
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := yaml.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if got := tt.get(m); got != PlatformComposition {
				t.Errorf("%s names %q, PlatformComposition is %q", tt.file, got, PlatformComposition)
			}
		})
	}
}
