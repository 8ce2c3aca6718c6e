package aws

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/fleetdocs"
)

// fleetDocuments are the documents the stand-in evaluates provider calls
// with (fleetdocs.Documents).
func fleetDocuments(t *testing.T) map[string]policydoc.Document {
	t.Helper()
	docs, err := fleetdocs.Documents()
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// actionMatches reports whether an IAM action pattern ("ec2:Create*")
// matches action, as IAM compares them: without regard to case, * and ?
// as wildcards.
func actionMatches(pattern, action string) bool {
	ok, err := path.Match(strings.ToLower(pattern), strings.ToLower(action))
	return err == nil && ok
}

// notSetByAWS are service keys the catalogue lists for an action that AWS
// does not set on the call as the provider makes it, by action and key.
var notSetByAWS = map[[2]string]string{
	// "The ec2:CreateAction condition key [...] the name of a
	// resource-creating API action": set only when the tags come with a
	// create request (EC2 user guide, "Grant permission to tag Amazon EC2
	// resources during creation"), which the stand-in models
	// (tagOnCreate). The provider's tag updates call CreateTags alone.
	{"ec2:CreateTags", "ec2:CreateAction"}: "set only on tags applied during a create",
}

// keySet is what the stand-in puts in a call's request context besides
// tags: its service keys, and ec2:CreateAction on the CreateTags of a
// tag-on-create.
func keySet(c call) []string {
	keys := slices.Clone(c.keys)
	if c.tagOnCreate {
		keys = append(keys, "ec2:CreateAction")
	}
	return keys
}

// awsSets are the service condition keys (not aws:) the catalogue lists
// for the action of c (the action's own, and those of the resource types
// the call names), less those AWS does not set on it as the provider makes
// it.
func awsSets(e iamsim.Action, c call) []string {
	all := slices.Clone(e.ConditionKeys)
	for _, rt := range e.ResourceTypes {
		if slices.ContainsFunc(c.on, func(tg target) bool { return tg.typ == rt.Name }) {
			all = append(all, rt.ActionConditionKeys...)
			all = append(all, rt.ConditionKeys...)
		}
	}
	var out []string
	for _, k := range all {
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			continue
		}
		if _, ok := notSetByAWS[[2]string{c.action, k}]; ok {
			continue
		}
		out = append(out, k)
	}
	return out
}

func hasKey(keys []string, k string) bool {
	return slices.ContainsFunc(keys, func(s string) bool { return strings.EqualFold(s, k) })
}

// TestStandInSetsTheServiceKeysAWSSets: every call carries each service
// key the stand-in models that AWS sets for the call's action (catalogue).
// A call that left one out would be evaluated without it, and a policy
// that grants or denies by it would decide differently than on AWS.
func TestStandInSetsTheServiceKeysAWSSets(t *testing.T) {
	a := authorizer(t)
	checked := 0
	for tf, tc := range providerCalls {
		for _, calls := range [][]call{tc.create, tc.observe, tc.update, tc.delete} {
			for _, c := range calls {
				for _, k := range awsSets(a.Catalogue[strings.ToLower(c.action)], c) {
					if !hasKey(modelledKeys, k) {
						continue
					}
					checked++
					if !hasKey(keySet(c), k) {
						t.Errorf("%s (%s, %s): AWS sets %s (catalogue); the stand-in does not", c.action, tf, c.src, k)
					}
				}
				for _, k := range c.keys {
					if !hasKey(awsSets(a.Catalogue[strings.ToLower(c.action)], c), k) {
						t.Errorf("%s (%s, %s): the stand-in sets %s, which the catalogue does not list for the action", c.action, tf, c.src, k)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no call has a modelled key: the check proves nothing")
	}
}

// TestStandInModelsTheServiceKeysTheFleetConditionsOn: every service key
// a fleet document conditions a provider call's action on, where AWS sets
// it for that action, is one the stand-in models (and then sets,
// TestStandInSetsTheServiceKeysAWSSets).
func TestStandInModelsTheServiceKeysTheFleetConditionsOn(t *testing.T) {
	a := authorizer(t)
	checked := 0
	for name, doc := range fleetDocuments(t) {
		for i, st := range doc.Statement {
			var keys []string
			for _, cond := range st.Condition {
				for k := range cond {
					keys = append(keys, k)
				}
			}
			for tf, tc := range providerCalls {
				for _, calls := range [][]call{tc.create, tc.observe, tc.update, tc.delete} {
					for _, c := range calls {
						if !slices.ContainsFunc(st.Action, func(p string) bool { return actionMatches(p, c.action) }) {
							continue
						}
						sets := awsSets(a.Catalogue[strings.ToLower(c.action)], c)
						for _, k := range keys {
							if !hasKey(sets, k) {
								continue
							}
							checked++
							if !hasKey(keySet(c), k) {
								t.Errorf("%s, statement %d conditions %s on %s, which AWS sets for it (catalogue); the stand-in's call (%s, %s) does not", name, i, c.action, k, tf, c.src)
							}
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no fleet document conditions a provider call on a service key: the check proves nothing")
	}
}

func authorizer(t *testing.T) *Authorizer {
	t.Helper()
	toolDir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthorizer(toolDir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestRoleCallsCarryTheRoleBoundary: a call on an existing role is
// evaluated with the boundary the role has (iam:PermissionsBoundary, as
// AWS sets it), and a boundary change with the one it asks for.
func TestRoleCallsCarryTheRoleBoundary(t *testing.T) {
	const current, asked = "arn:aws:iam::111122223333:policy/current", "arn:aws:iam::111122223333:policy/asked"
	p := &Provider{IAM: authorizer(t), Ledger: NewLedger()}
	role := &Resource{Type: "aws_iam_role", Name: "r", ARN: "arn:aws:iam::111122223333:role/r",
		Attrs: map[string]any{"permissionsBoundary": current}}
	cases := map[string]struct {
		reason  string
		changed string
		args    map[string]any
		action  string
		want    any
	}{
		"trust policy edit": {"UpdateAssumeRolePolicy acts on the role as it is, before a boundary change made with it", "assumeRolePolicy",
			map[string]any{"assumeRolePolicy": "{}", "permissionsBoundary": asked}, "iam:UpdateAssumeRolePolicy", current},
		"boundary change": {"PutRolePermissionsBoundary is evaluated with the boundary it sets", "permissionsBoundary",
			map[string]any{"permissionsBoundary": asked}, "iam:PutRolePermissionsBoundary", asked},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var calls []call
			for _, c := range providerCalls["aws_iam_role"].update {
				if slices.Contains(c.changed, tc.changed) {
					calls = append(calls, c)
				}
			}
			reqs, err := p.callRequests(&session{ledger: p.Ledger}, calls, "aws_iam_role", role, tc.args, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []any
			for _, r := range reqs {
				if r.action == tc.action {
					got = append(got, r.context[keyBoundary])
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("%s: %s evaluated with %s = %v, want [%v]", tc.reason, tc.action, keyBoundary, got, tc.want)
			}
		})
	}
}
