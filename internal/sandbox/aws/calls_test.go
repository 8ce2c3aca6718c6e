package aws

import (
	"slices"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
)

// TestCallsNameWhatTheCatalogueAuthorizes checks every call of
// providerCalls against the AWS action catalogue: the action exists, each
// resource it is evaluated on is of a type the catalogue lists for the
// action (so its ARN is the one IAM matches), every type the catalogue
// marks required is among them, and a call evaluated on "*" is one IAM
// authorizes on no resource. A call written down wrongly would be
// evaluated on the wrong resource and prove nothing.
func TestCallsNameWhatTheCatalogueAuthorizes(t *testing.T) {
	a := authorizer(t)
	n := 0
	for tf, tc := range providerCalls {
		for op, calls := range map[string][]call{"create": tc.create, "observe": tc.observe, "update": tc.update, "delete": tc.delete} {
			for _, c := range calls {
				n++
				where := tf + " " + op + " " + c.action + " (" + c.src + ")"
				if c.src == "" {
					t.Errorf("%s: no source cited", where)
				}
				e, ok := a.Catalogue[strings.ToLower(c.action)]
				if !ok {
					t.Errorf("%s: not in the catalogue", where)
					continue
				}
				var typs []string
				for _, tg := range c.on {
					typs = append(typs, tg.typ)
					if _, err := a.takesRequestTags(c.action, tg.typ); err != nil {
						t.Errorf("%s: %v", where, err)
					}
				}
				for _, rt := range e.ResourceTypes {
					if rt.Required && !c.oneOf && !slices.Contains(typs, rt.Name) && !slices.Contains(typs, "*") {
						t.Errorf("%s: the catalogue requires resource type %s, the call names %v", where, rt.Name, typs)
					}
				}
				if c.oneOf && !slices.ContainsFunc(e.ResourceTypes, func(rt iamsim.ResourceType) bool { return rt.Required && slices.Contains(typs, rt.Name) }) {
					t.Errorf("%s: names none of the required resource types", where)
				}
				if op == "update" && len(c.changed) == 0 {
					t.Errorf("%s: an update call names no argument it is made for", where)
				}
			}
		}
	}
	if n < 60 {
		t.Errorf("only %d calls listed", n)
	}
}

// TestUpdateCalls: an update is made of the calls for the arguments that
// changed, and an argument no call changes is reported, not ignored.
func TestUpdateCalls(t *testing.T) {
	cases := map[string]struct {
		reason     string
		tf         string
		diff       []string
		want       []string
		unmodelled []string
	}{
		"NodeGroupUpgrade": {reason: "A node group's version moves with UpdateNodegroupVersion (eks/node_group.go:498).",
			tf: "aws_eks_node_group", diff: []string{"version"}, want: []string{"eks:UpdateNodegroupVersion", "eks:DescribeUpdate"}},
		"RouteTarget": {reason: "natMode moves a route's target: ReplaceRoute (ec2/vpc_route.go:403).",
			tf: "aws_route", diff: []string{"natGatewayId"}, want: []string{"ec2:ReplaceRoute"}},
		"RoleTags": {reason: "A role's tags move with TagRole and UntagRole (iam/tags.go).",
			tf: "aws_iam_role", diff: []string{"tags"}, want: []string{"iam:TagRole", "iam:UntagRole"}},
		"Unknown": {reason: "A change the stand-in has no call for is named.",
			tf: "aws_vpc", diff: []string{"cidrBlock"}, unmodelled: []string{"cidrBlock"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			calls, unmodelled := updateCalls(tc.tf, tc.diff)
			var got []string
			for _, c := range calls {
				got = append(got, c.action)
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(unmodelled, tc.unmodelled) {
				t.Errorf("%s\nupdateCalls(%s, %v) = %v, %v; want %v, %v", tc.reason, tc.tf, tc.diff, got, unmodelled, tc.want, tc.unmodelled)
			}
		})
	}
}
