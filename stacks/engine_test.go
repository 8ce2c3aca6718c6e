package stacks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/engineconfig"
)

func engineValues(t *testing.T, project *workspace.Project, stackFile string) (Values, error) {
	t.Helper()
	v, err := engineconfig.Values(project, stackFile)
	return Values(v), err
}

// The engine accepts every example stack of both kinds, and what it hands
// the program passes the program's validation: no setting is required by
// Pulumi.yaml that a stack kind does not set, and the defaults the engine
// applies to a spoke-account stack count as unset.
func TestTheEngineAcceptsEveryExampleStack(t *testing.T) {
	project, err := workspace.LoadProject("../Pulumi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../Pulumi.*.yaml")
	for _, f := range files {
		raw, err := engineValues(t, project, f)
		if err != nil {
			t.Errorf("%s: the engine refuses it: %v", f, err)
			continue
		}
		if errs := ValidateValues(raw); len(errs) > 0 {
			t.Errorf("%s: with the engine's defaults: %v", f, errs)
		}
	}
}

// Planted: a setting declared without a default is one the engine requires
// of every stack, and a hub setting in a spoke-account stack is refused by
// the program, naming it.
func TestTheEngineAndProgramRefuse(t *testing.T) {
	project, err := workspace.LoadProject("../Pulumi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gitURL := project.Config[GitURLKey]
	gitURL.Default = nil
	project.Config[GitURLKey] = gitURL
	if _, err := engineValues(t, project, "../Pulumi.acct-payments.yaml"); err == nil || !strings.Contains(err.Error(), "missing configuration value 'gitUrl'") {
		t.Errorf("a setting without a default: engine error %v, want it missing from the spoke-account stack", err)
	}

	project, err = workspace.LoadProject("../Pulumi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../Pulumi.acct-payments.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "Pulumi.acct-x.yaml")
	if err := os.WriteFile(f, append(b, []byte("  eks-fleet:natMode: per-az\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := engineValues(t, project, f)
	if err != nil {
		t.Fatal(err)
	}
	errs := ValidateValues(raw)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `eks-fleet:natMode: invalid value "per-az": allowed unset: a spoke-account stack sets only`) {
		t.Errorf("a hub setting in a spoke-account stack: %v", errs)
	}
}
