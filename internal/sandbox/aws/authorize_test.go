package aws

import (
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// TestAuthorizeNamesWhyAWSDenies: a denied call is refused in AWS's words,
// naming the caller's session, the action, the resource and which policy
// kept it out: none of the role's policies, its permissions boundary, or
// an explicit deny; an allowed call passes, and a call decided once is not
// evaluated again.
func TestAuthorizeNamesWhyAWSDenies(t *testing.T) {
	const (
		queue    = "arn:aws:sqs:eu-west-1:111122223333:mgmt-pay_orders"
		boundary = "arn:aws:iam::111122223333:policy/mgmt-spoke-boundary"
	)
	allow := func(actions ...string) policydoc.Document {
		return policydoc.NewDocument(policydoc.Statement{Effect: policydoc.Allow, Action: actions, Resource: []string{"*"}})
	}
	toolDir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	deny := allow("sqs:*")
	deny.Statement = append(deny.Statement, policydoc.Statement{Effect: policydoc.Deny, Action: []string{"sqs:DeleteQueue"}, Resource: []string{queue}})
	a, err := NewAuthorizer(toolDir, map[string]policydoc.Document{boundary: allow("dynamodb:*", "sqs:GetQueueAttributes")}, map[string]Role{
		"arn:aws:iam::111122223333:role/none":     {Inline: []policydoc.Document{allow("dynamodb:*")}},
		"arn:aws:iam::111122223333:role/bounded":  {Inline: []policydoc.Document{allow("sqs:*", "dynamodb:*")}, Boundary: boundary},
		"arn:aws:iam::111122223333:role/denied":   {Inline: []policydoc.Document{deny}},
		"arn:aws:iam::111122223333:role/attached": {Attached: []string{"arn:aws:iam::aws:policy/Unknown"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cases := map[string]struct {
		reason, role, action string
		want                 []string // empty: allowed
	}{
		"NoPolicy": {reason: "No policy of the role allows the action.", role: "none", action: "sqs:CreateQueue",
			want: []string{"api error AccessDenied: User: arn:aws:sts::111122223333:assumed-role/none/", "is not authorized to perform: sqs:CreateQueue on resource: " + queue + " because no identity-based policy allows the sqs:CreateQueue action"}},
		"Boundary": {reason: "The role's policy allows it, its boundary does not: AWS names the boundary.", role: "bounded", action: "sqs:CreateQueue",
			want: []string{"because no permissions boundary allows the sqs:CreateQueue action"}},
		"ExplicitDeny": {reason: "An explicit deny wins over the allow.", role: "denied", action: "sqs:DeleteQueue",
			want: []string{"sqs:DeleteQueue on resource: " + queue + " with an explicit deny in an identity-based policy"}},
		"Allowed": {reason: "Within the policy and the boundary.", role: "bounded", action: "sqs:GetQueueAttributes"},
		"UnknownPolicy": {reason: "A policy the stand-in does not hold is its error, not a decision.", role: "attached", action: "sqs:CreateQueue",
			want: []string{"stand-in: the policy arn:aws:iam::aws:policy/Unknown attached to arn:aws:iam::111122223333:role/attached is not known"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for range 2 {
				err := a.Authorize("arn:aws:iam::111122223333:role/"+tc.role, "111122223333", NewLedger(), tc.action, queue, nil)
				if len(tc.want) == 0 {
					if err != nil {
						t.Fatalf("%s\nrefused: %v", tc.reason, err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("%s\nallowed", tc.reason)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s\n%v\nlacks %q", tc.reason, err, w)
					}
				}
			}
		})
	}
	// Each of the four decided requests ran once; the second asks came
	// from the cache.
	if asked, evaluated := a.Stats(); asked != 8 || evaluated != 4 {
		t.Errorf("asked %d, evaluated %d; want 8 and 4", asked, evaluated)
	}
}
