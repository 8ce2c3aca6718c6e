package aws

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight/awsreader"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// TestAccountAPIs: the program's account reader (awsreader, through
// aws-sdk-go-v2's own requests and parsers) reads the stand-in's accounts
// as it reads AWS: its pre-flight inventory and a spoke account's remains
// are the ledger's, of the caller's account only, in every enabled region;
// a deploying role granted exactly the reader's actions reads everything,
// and one without tag:GetResources is refused with the Tagging API's
// AccessDeniedException naming the caller and the action.
func TestAccountAPIs(t *testing.T) {
	const (
		acct  = "123456789012"
		other = "210987654321"
	)
	toolDir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	actions := slices.Compact(slices.Sorted(slices.Values(append(awsreader.InventoryActions(), awsreader.RemainsActions()...))))
	reads := policydoc.NewDocument(policydoc.Statement{Effect: "Allow", Action: actions, Resource: []string{"*"}})
	noTagging := policydoc.NewDocument(policydoc.Statement{Effect: "Allow",
		Action: slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return a == "tag:GetResources" }), Resource: []string{"*"}})
	deployer, narrow := "arn:aws:iam::"+acct+":role/platform-deployer", "arn:aws:iam::"+acct+":role/narrow-deployer"
	a, err := NewAuthorizer(toolDir, nil, map[string]Role{deployer: {Inline: []policydoc.Document{reads}}, narrow: {Inline: []policydoc.Document{noTagging}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	mine, theirs := NewLedger(), NewLedger()
	put := func(l *Ledger, account, tf, id, region, arn string, attrs map[string]any, tags map[string]string) {
		if attrs == nil {
			attrs = map[string]any{}
		}
		attrs["region"] = region
		l.put(&Resource{Kind: "test/" + tf, Type: tf, ID: id, Name: id, ARN: arn, Account: account, Attrs: attrs, Tags: tags, Created: time.Unix(1764000000, 0)})
	}
	spoke := map[string]string{"eksfleet.io/cluster": "mgmt-orders"}
	vpc := "arn:aws:ec2:eu-west-1:" + acct + ":vpc/vpc-0a1"
	put(mine, acct, "aws_vpc", "vpc-0a1", "eu-west-1", vpc, nil, spoke)
	put(mine, acct, "aws_vpc", "vpc-0a2", "eu-west-1", "arn:aws:ec2:eu-west-1:"+acct+":vpc/vpc-0a2", nil, map[string]string{"team": "web"})
	queue := "arn:aws:sqs:us-east-1:" + acct + ":orders-jobs"
	put(mine, acct, "aws_sqs_queue", "orders-jobs", "us-east-1", queue, nil, spoke)
	put(mine, acct, "aws_route_table_association", "rtbassoc-1", "eu-west-1", "", nil, nil)
	put(mine, acct, "aws_launch_template", "lt-0b1", "eu-west-1", "arn:aws:ec2:eu-west-1:"+acct+":launch-template/lt-0b1",
		map[string]any{"name": "mgmt-orders-nodes"}, map[string]string{"eksfleet.io/cluster": "mgmt-orders", "eks:cluster-name": "mgmt-orders"})
	oidc := "arn:aws:iam::" + acct + ":oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ORDERS"
	put(mine, acct, "aws_iam_openid_connect_provider", oidc, "", oidc, nil, spoke)
	role := "arn:aws:iam::" + acct + ":role/mgmt-spoke-orders-cluster"
	put(mine, acct, "aws_iam_role", "mgmt-spoke-orders-cluster", "", role, nil, spoke)
	// another account's spoke, which no caller here may see
	put(theirs, other, "aws_vpc", "vpc-0c1", "eu-west-1", "arn:aws:ec2:eu-west-1:"+other+":vpc/vpc-0c1", nil, spoke)

	e := &Endpoints{Region: "eu-west-1", Account: acct, Partition: "aws", Regions: []string{"eu-west-1", "us-east-1"},
		Ledgers: map[string]*Ledger{acct: mine, other: theirs},
		Authorize: func(role, action, resource string, keys map[string]any) error {
			return a.Authorize(role, acct, mine, action, resource, keys)
		}}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	reader := func(role string) awsreader.Reader {
		return awsreader.Reader{Options: []func(*config.LoadOptions) error{
			config.WithBaseEndpoint(srv.URL),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(e.Session(role), "secret", "token")),
		}}
	}
	q := preflight.Query{AccountID: acct, Region: "eu-west-1"}
	ctx := context.Background()

	inv, err := reader(deployer).Read(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	wantInv := preflight.Inventory{
		OIDCProviders:   []preflight.OIDCProvider{{ARN: oidc, Tags: spoke}},
		LaunchTemplates: []preflight.LaunchTemplate{{Region: "eu-west-1", ID: "lt-0b1", Name: "mgmt-orders-nodes", Tags: map[string]string{"eksfleet.io/cluster": "mgmt-orders", "eks:cluster-name": "mgmt-orders"}}},
	}
	if diff := cmp.Diff(wantInv, inv); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}

	err = preflight.CheckNoSpokes(ctx, reader(deployer), "acct-orders", "mgmt", "arn:aws:iam::"+acct+":role/mgmt-crossplane-account", "mgmt-spoke-", q)
	var remains *preflight.RemainsError
	if !errors.As(err, &remains) {
		t.Fatalf("CheckNoSpokes: %v, want a RemainsError", err)
	}
	wantRemains := []preflight.SpokeResource{
		{ARN: role},
		{Cluster: "mgmt-orders", ARN: "arn:aws:ec2:eu-west-1:" + acct + ":launch-template/lt-0b1"},
		{Cluster: "mgmt-orders", ARN: vpc},
		{Cluster: "mgmt-orders", ARN: oidc},
		{Cluster: "mgmt-orders", ARN: queue},
	}
	if diff := cmp.Diff(wantRemains, remains.Resources); diff != "" {
		t.Errorf("remains (-want +got):\n%s", diff)
	}

	_, err = reader(narrow).Remains(ctx, q, preflight.TagKey, "mgmt-spoke-")
	if err == nil || !strings.Contains(err.Error(), "AccessDeniedException") ||
		!strings.Contains(err.Error(), "User: arn:aws:sts::"+acct+":assumed-role/narrow-deployer/") ||
		!strings.Contains(err.Error(), "is not authorized to perform: tag:GetResources on resource: *") {
		t.Errorf("a role without tag:GetResources: %v", err)
	}

	// The other account's caller sees its own account only.
	other1 := "arn:aws:iam::" + other + ":role/platform-deployer"
	e.Authorize = nil
	got, err := reader(other1).Remains(ctx, preflight.Query{AccountID: other, Region: "eu-west-1"}, preflight.TagKey, "mgmt-spoke-")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]preflight.SpokeResource{{Cluster: "mgmt-orders", ARN: "arn:aws:ec2:eu-west-1:" + other + ":vpc/vpc-0c1"}}, got); diff != "" {
		t.Errorf("the other account's remains (-want +got):\n%s", diff)
	}
}
