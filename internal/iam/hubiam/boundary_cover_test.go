package hubiam_test

import (
	"path"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// Every spoke role carries the spoke boundary, so every action its
// policies allow must be inside it, or the spoke's controllers fail with
// AccessDenied at run time. The roles are the ones the composition function
// composes (spokeiam.Roles). Action patterns only; the IAM evaluation tests
// (internal/iam/spokeiam) prove the resources and conditions.
func TestBoundaryCoversSpokeRolePolicies(t *testing.T) {
	ex := clusterinfo.Example()
	env := hubiam.Env{Partition: ex.Partition, AccountID: ex.AccountID, Region: ex.Region, HubName: ex.HubName}
	boundary := hubiam.SpokeBoundary(env)
	roles, err := spokeiam.Roles(spokeiam.Spoke{
		Hub: env, Name: "team-a", OIDCIssuer: "oidc.eks." + ex.Region + ".amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
		FluxRoleARN: ex.FluxRoleARN,
	})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range roles {
		if r.Inline == nil {
			continue
		}
		found++
		for _, st := range r.Inline.Statement {
			if st.Effect != policydoc.Allow {
				continue
			}
			for _, a := range st.Action {
				if !allows(boundary, a) {
					t.Errorf("the spoke boundary does not allow %s, which role %s is granted (%s)", a, r.Key, st.Sid)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no inline policies")
	}
}

// allows reports whether some Allow statement's action pattern covers a
// (IAM action patterns are case-insensitive globs).
func allows(d policydoc.Document, a string) bool {
	for _, st := range d.Statement {
		if st.Effect != policydoc.Allow {
			continue
		}
		for _, p := range st.Action {
			if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(a)); ok || strings.EqualFold(p, a) {
				return true
			}
		}
	}
	return false
}
