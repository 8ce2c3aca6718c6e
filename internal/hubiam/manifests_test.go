package hubiam

import (
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/clusterinfo"
)

const compositionFile = "../../manifests/gitops-system/platform-apis/workload-cluster/composition.yaml"

// The spoke roles the WorkloadCluster composition makes carry the spoke
// boundary, so every action their policies allow must be inside it, or the
// spoke's controllers fail with AccessDenied at run time.
func TestBoundaryCoversCompositionPolicies(t *testing.T) {
	b, err := os.ReadFile(compositionFile)
	if err != nil {
		t.Fatalf("read the composition: %v", err)
	}
	var comp any
	if err := yaml.Unmarshal(b, &comp); err != nil {
		t.Fatal(err)
	}
	ex := clusterinfo.Example()
	vars := ex.Map()
	varRE := regexp.MustCompile(`\$\{([A-Z_]+)\}`)
	boundary := SpokeBoundary(Env{Partition: ex.Partition, AccountID: ex.AccountID, Region: ex.Region, HubName: ex.HubName}, ex.SealingSecretARN, ex.SealingKMSKeyARN)

	found := 0
	walkStrings(comp, func(s string) {
		if !strings.HasPrefix(s, `{"Version":"2012-10-17"`) || strings.Contains(s, `"Principal"`) {
			return // not a permissions policy
		}
		s = varRE.ReplaceAllStringFunc(s, func(m string) string { return vars[m[2:len(m)-1]] })
		s = strings.NewReplacer("%[1]s", "team-a", "%s", "team-a").Replace(s)
		doc, err := Parse(s)
		if err != nil {
			t.Errorf("composition policy does not parse: %v\n%s", err, s)
			return
		}
		found++
		for _, st := range doc.Statement {
			if st.Effect != Allow {
				continue
			}
			for _, a := range st.Action {
				if !allows(boundary, a) {
					t.Errorf("the spoke boundary does not allow %s, which the composition grants (%s)", a, st.Sid)
				}
			}
		}
	})
	if found == 0 {
		t.Fatal("no permissions policies found in the composition")
	}
}

// allows reports whether some Allow statement's action pattern covers a
// (IAM action patterns are case-insensitive globs).
func allows(d Document, a string) bool {
	for _, st := range d.Statement {
		if st.Effect != Allow {
			continue
		}
		for _, p := range st.Action {
			if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(a)); ok {
				return true
			}
			// a pattern in the composition (ec2:Describe*) is covered by an
			// equal pattern in the boundary
			if strings.EqualFold(p, a) {
				return true
			}
		}
	}
	return false
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range x {
			walkStrings(e, f)
		}
	}
}
