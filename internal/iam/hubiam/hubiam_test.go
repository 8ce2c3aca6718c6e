package hubiam

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

var env = Env{Partition: "aws", AccountID: "111122223333", Region: "eu-west-1", HubName: "mgmt"}

const (
	secretARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:mgmt/sealed-secrets-key-AbCdEf"
	keyARN    = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
)

func docs() map[string]policydoc.Document {
	return map[string]policydoc.Document{
		"crossplane":       Crossplane(env),
		"external-secrets": ExternalSecrets(env, secretARN, keyARN),
		"flux":             Flux(env),
		"spoke-boundary":   SpokeBoundary(env),
	}
}

func TestDocumentsRoundTripAndAreLeastPrivilege(t *testing.T) {
	for name, d := range docs() {
		s, err := d.JSON()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := policydoc.Parse(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.EqualFunc(back.Statement, d.Statement, func(a, b policydoc.Statement) bool {
			return a.Sid == b.Sid && a.Effect == b.Effect && slices.Equal(a.Action, b.Action) && slices.Equal(a.Resource, b.Resource)
		}) {
			t.Errorf("%s: statements changed in a JSON round trip", name)
		}
		for _, e := range policydoc.CheckLeastPrivilege(back) {
			t.Errorf("%s: %v", name, e)
		}
		for _, st := range back.Statement {
			for _, a := range st.Action {
				if st.Effect == policydoc.Allow && !strings.Contains(a, ":") {
					t.Errorf("%s %s: action %q has no service", name, st.Sid, a)
				}
			}
			for _, r := range st.Resource {
				if strings.Contains(r, "::::") || strings.Contains(r, "//") {
					t.Errorf("%s %s: resource %q has a hole", name, st.Sid, r)
				}
			}
		}
	}
}

func TestCheckLeastPrivilegeCatches(t *testing.T) {
	cases := map[string]policydoc.Statement{
		"star on star":     {Effect: policydoc.Allow, Action: []string{"*"}, Resource: []string{"*"}},
		"service on star":  {Effect: policydoc.Allow, Action: []string{"iam:*"}, Resource: []string{"*"}},
		"star on resource": {Effect: policydoc.Allow, Action: []string{"*"}, Resource: []string{"arn:aws:s3:::b"}},
		"no effect":        {Action: []string{"s3:GetObject"}, Resource: []string{"*"}},
		"no resource":      {Effect: policydoc.Allow, Action: []string{"s3:GetObject"}},
	}
	for name, st := range cases {
		if errs := policydoc.CheckLeastPrivilege(policydoc.NewDocument(st)); len(errs) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
	if errs := policydoc.CheckLeastPrivilege(policydoc.Document{Version: "2008-10-17", Statement: []policydoc.Statement{{Effect: policydoc.Allow, Action: []string{"s3:GetObject"}, Resource: []string{"*"}}}}); len(errs) != 1 {
		t.Errorf("old version: %v", errs)
	}
	star, _ := policydoc.Parse(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`)
	if len(policydoc.CheckLeastPrivilege(star)) == 0 {
		t.Error("string-form Action/Resource * not caught")
	}
}

// Every IAM write the Crossplane role may make on a role is confined to
// the spoke prefix and, where IAM supports it, to the spoke boundary.
func TestCrossplaneIAMIsFenced(t *testing.T) {
	d := Crossplane(env)
	prefixARN := "arn:aws:iam::111122223333:role/mgmt-spoke-*"
	for _, st := range d.Statement {
		if st.Effect != policydoc.Allow {
			continue
		}
		for _, a := range st.Action {
			if !strings.HasPrefix(a, "iam:") {
				continue
			}
			switch {
			case strings.Contains(a, "OpenIDConnectProvider"):
				if !slices.Equal(st.Resource, []string{"arn:aws:iam::111122223333:oidc-provider/oidc.eks.*.amazonaws.com/id/*"}) {
					t.Errorf("%s on %v", a, st.Resource)
				}
				if st.Condition["StringLike"]["aws:ResourceTag/"+fence.TagCluster] != "mgmt-*" && st.Condition["StringLike"]["aws:RequestTag/"+fence.TagCluster] != "mgmt-*" {
					t.Errorf("%s not limited to providers tagged as the fleet's: %v", a, st.Condition)
				}
			case a == "iam:CreateServiceLinkedRole":
				if st.Condition["StringEquals"]["iam:AWSServiceName"] == nil {
					t.Errorf("%s without service condition", a)
				}
			case a == "iam:PassRole":
				if !slices.Equal(st.Resource, []string{"arn:aws:iam::111122223333:role/mgmt-spoke-*-cluster", "arn:aws:iam::111122223333:role/mgmt-spoke-*-node"}) {
					t.Errorf("%s on %v", a, st.Resource)
				}
			default:
				if !slices.Equal(st.Resource, []string{prefixARN}) {
					t.Errorf("%s on %v, want only %s", a, st.Resource, prefixARN)
				}
			}
			if slices.Contains(boundedRoleWrites, a) {
				if got := st.Condition["StringEquals"]["iam:PermissionsBoundary"]; got != env.BoundaryARN() {
					t.Errorf("%s without the boundary condition (%v)", a, got)
				}
			}
			if a == "iam:PassRole" {
				if svc := st.Condition["StringEquals"]["iam:PassedToService"]; svc != "eks.amazonaws.com" {
					t.Errorf("PassRole to %v", svc)
				}
			}
			if a == "iam:DeleteRolePermissionsBoundary" || a == "iam:CreatePolicyVersion" {
				t.Errorf("%s allowed", a)
			}
		}
	}
	denied := map[string]bool{}
	for _, st := range d.Statement {
		if st.Effect == policydoc.Deny {
			for _, a := range st.Action {
				denied[a] = true
			}
		}
	}
	for _, a := range []string{"iam:DeleteRolePermissionsBoundary", "iam:PutRolePermissionsBoundary", "iam:CreateRole", "iam:CreatePolicyVersion"} {
		if !denied[a] {
			t.Errorf("%s is not denied outside the boundary", a)
		}
	}
}

func TestCrossplaneCoversTheCompositionKinds(t *testing.T) {
	xp := Crossplane(env)
	actions := xp.Actions()
	for _, a := range []string{
		"ec2:CreateVpc", "ec2:CreateSubnet", "ec2:CreateInternetGateway", "ec2:AttachInternetGateway",
		"ec2:CreateNatGateway", "ec2:AllocateAddress", "ec2:CreateRouteTable", "ec2:CreateRoute",
		"ec2:AssociateRouteTable", "eks:CreateCluster", "eks:CreateNodegroup", "eks:CreateAccessEntry",
		"eks:AssociateAccessPolicy", "iam:CreateRole", "iam:AttachRolePolicy", "iam:PutRolePolicy",
		"iam:CreateOpenIDConnectProvider", "iam:PassRole",
		"logs:CreateLogGroup", "logs:PutRetentionPolicy", "logs:TagResource", "logs:DeleteLogGroup",
	} {
		if !coveredBy(xp, a) {
			t.Errorf("Crossplane policy lacks %s", a)
		}
	}
	for _, a := range actions {
		if strings.HasPrefix(a, "dynamodb:") || strings.HasPrefix(a, "sqs:") || strings.HasPrefix(a, "secretsmanager:") {
			t.Errorf("hub Crossplane needs no %s", a)
		}
	}
}

func TestReadersAndFlux(t *testing.T) {
	eso := ExternalSecrets(env, secretARN, keyARN)
	if got := eso.Actions(); !slices.Equal(got, []string{"kms:Decrypt", "secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"}) {
		t.Errorf("ESO actions %v", got)
	}
	for _, st := range eso.Statement {
		if slices.Contains(st.Resource, "*") {
			t.Errorf("ESO statement %s on *", st.Sid)
		}
	}
	f := Flux(env)
	if len(f.Statement) != 1 || !slices.Equal(f.Statement[0].Action, []string{"eks:DescribeCluster"}) ||
		!slices.Equal(f.Statement[0].Resource, []string{"arn:aws:eks:*:111122223333:cluster/mgmt-*"}) {
		t.Errorf("flux policy %+v", f)
	}
}

func TestBoundaryAllowsWhatSpokeRolesNeed(t *testing.T) {
	b := SpokeBoundary(env)
	actions := b.Actions()
	for _, a := range []string{
		"ec2:CreateNetworkInterface", "ecr:GetAuthorizationToken", "elasticloadbalancing:CreateLoadBalancer",
		"dynamodb:PutItem", "sqs:SendMessage", "iam:CreateRole",
	} {
		if !coveredBy(b, a) {
			t.Errorf("boundary lacks %s", a)
		}
	}
	// The hub hands the spokes the sealing keys: no spoke role reads them.
	for _, a := range []string{"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret", "kms:Decrypt"} {
		if coveredBy(b, a) {
			t.Errorf("boundary allows %s", a)
		}
	}
	if slices.Contains(actions, "iam:DeleteRolePermissionsBoundary") || slices.Contains(actions, "iam:CreatePolicyVersion") {
		t.Error("boundary allows changing the boundary")
	}
}

func coveredBy(d policydoc.Document, a string) bool {
	for _, st := range d.Statement {
		for _, p := range st.Action {
			if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(a)); ok && st.Effect == policydoc.Allow {
				return true
			}
		}
	}
	return false
}

func TestEnvValidate(t *testing.T) {
	if err := env.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := env
	bad.AccountID = ""
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "AccountID") {
		t.Errorf("empty account: %v", err)
	}
}
