package iamsim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// TestCacheKeepsTheEvaluatorsAnswers holds evaluate.mjs's cache of
// iam-utils' resource-type matching (cache-hooks.mjs) to iam-simulate's
// own answers: every request of a cross product of actions (with one, many
// or no resource types), ARNs of several types and "*", and two request
// contexts (so that each match is asked again and answered from the cache)
// gets the same decision and messages with and without it.
func TestCacheKeepsTheEvaluatorsAnswers(t *testing.T) {
	dir, err := ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	const acct = "111122223333"
	policy := policydoc.Document{Version: "2012-10-17", Statement: []policydoc.Statement{
		{Effect: policydoc.Allow, Action: []string{"ec2:*"}, Resource: []string{"arn:aws:ec2:*:" + acct + ":subnet/*"},
			Condition: map[string]map[string]any{"StringEquals": {"aws:ResourceTag/team": "pay"}}},
		{Effect: policydoc.Allow, Action: []string{"ec2:RunInstances", "eks:Describe*", "iam:PassRole"}, Resource: []string{"*"}},
		{Effect: policydoc.Allow, Action: []string{"s3:GetObject"}, Resource: []string{"arn:aws:s3:::bucket/*"}},
		{Effect: policydoc.Allow, Action: []string{"sqs:SendMessage"}, Resource: []string{"arn:aws:sqs:*:" + acct + ":pay_*"}},
		{Effect: policydoc.Deny, Action: []string{"iam:PassRole"}, Resource: []string{"arn:aws:iam::" + acct + ":role/pay-*"}},
	}}
	actions := []string{"ec2:RunInstances", "ec2:CreateTags", "ec2:DeleteSubnet", "ec2:DescribeVpcs", "eks:DescribeCluster",
		"eks:DescribeNodegroup", "iam:PassRole", "s3:GetObject", "sqs:SendMessage"}
	resources := []string{
		"arn:aws:ec2:eu-west-1:" + acct + ":subnet/subnet-0abc",
		"arn:aws:ec2:eu-west-1:" + acct + ":instance/i-0abc",
		"arn:aws:ec2:eu-west-1:" + acct + ":vpc/vpc-0abc",
		"arn:aws:eks:eu-west-1:" + acct + ":cluster/pay",
		"arn:aws:eks:eu-west-1:" + acct + ":nodegroup/pay/ng/0abc",
		"arn:aws:iam::" + acct + ":role/pay-node",
		"arn:aws:iam::" + acct + ":role/other-node",
		"arn:aws:s3:::bucket/key",
		"arn:aws:sqs:eu-west-1:" + acct + ":pay_orders",
		"*",
	}
	var reqs []Request
	for _, team := range []string{"pay", "other"} {
		for _, a := range actions {
			for _, r := range resources {
				reqs = append(reqs, Request{ID: team + " " + a + " " + r, Principal: "arn:aws:iam::" + acct + ":role/pay-app",
					Action: a, Resource: r, AccountID: acct, Context: map[string]any{"aws:ResourceTag/team": team},
					IdentityRefs: []string{"app"}})
			}
		}
	}
	docs := map[string]policydoc.Document{"app": policy}
	cached, _, err := runShared(dir, docs, reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	uncached, _, err := runShared(dir, docs, reqs, nil, "--uncached")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(uncached, cached); diff != "" {
		t.Errorf("the cached evaluator's answers differ from iam-simulate's own (-own +cached):\n%s", diff)
	}
	// the comparison means something only if the requests reach every
	// decision
	seen := map[string]int{}
	for _, r := range uncached {
		seen[r.Decision]++
	}
	for _, d := range []string{Allowed, ExplicitlyDenied, ImplicitlyDenied, Error} {
		if seen[d] == 0 {
			t.Errorf("no request was %s (decisions %v): the comparison does not cover it", d, seen)
		}
	}
}
