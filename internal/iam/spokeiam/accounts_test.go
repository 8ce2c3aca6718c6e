package spokeiam_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Spokes in their own accounts (hubiam, accounts.go), under the same real
// IAM evaluator: the account boundary is the fence. Account B holds hub
// mgmt's spoke "pay" (its roles under B's boundary) and the account role
// B's spoke-account stack made; account C is another spoke account; the
// hub is in acct.

const (
	acctB = "222233334444"
	acctC = "444455556666"
	extID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
)

// moved is pr with every ARN of account from (in its resource and its
// context's values) in account to instead, except the ARNs in keep.
func moved(pr probe, from, to string, keep ...string) probe {
	move := func(v string) string {
		for _, k := range keep {
			if v == k {
				return v
			}
		}
		return strings.ReplaceAll(v, ":"+from+":", ":"+to+":")
	}
	out := probe{name: pr.name, action: pr.action, resource: move(pr.resource), ctx: map[string]any{}}
	for k, v := range pr.ctx {
		switch x := v.(type) {
		case string:
			out.ctx[k] = move(x)
		case []string:
			l := make([]string, len(x))
			for i := range x {
				l[i] = move(x[i])
			}
			out.ctx[k] = l
		default:
			out.ctx[k] = v
		}
	}
	return out
}

// accountRole is B's account role as its stack makes it: the hub
// Crossplane's fence for B.
func accountRole(in hubiam.Env) subject {
	arn := in.AccountRoleARN(in.AccountID)
	return subject{name: "account " + in.AccountID + "/crossplane-account", arn: arn,
		identity: []iamsim.Policy{{Name: "account", Policy: hubiam.Crossplane(in)}},
		ctx:      map[string]any{"aws:PrincipalArn": arn}}
}

// Nothing crosses an account: every role of a spoke in B may do in B what
// it needs there and none of it in the hub's account or in C; B's account
// role does in B what the hub's Crossplane does for spokes and nothing
// elsewhere; the hub's Crossplane reaches B only by assuming B's account
// role with B's external ID, and no other role of B, C or the hub's, while
// the hub's other roles and B's own roles cannot assume it at all.
func TestNothingCrossesAnAccount(t *testing.T) {
	hubB := hub.InAccount(acctB)
	boundaryB := hubiam.SpokeBoundary(hubB)
	pay := spoke(hubB, "pay")
	flux := hub.FluxRoleARN()
	var exps []expectation
	add := func(s subject, pr probe, allowed bool, where string) {
		id := fmt.Sprint(len(exps))
		exps = append(exps, expectation{req: request(id, s, pr), want: allowed,
			what: s.name + ": " + pr.name + " in " + where + " (" + pr.action + " " + pr.resource + ")"})
	}

	// B's spoke: its needs (written for the hub's account) moved into B
	// are allowed; the same requests on the hub's account and on C are not.
	ns := needs(pay)
	for _, s := range subjects(t, pay, boundaryB) {
		key := roleKey(s)
		if len(ns[key]) == 0 {
			t.Fatalf("no legitimate requests for %s", key)
		}
		for _, pr := range ns[key] {
			inB := moved(pr, acct, acctB, flux)
			add(s, inB, true, "B")
			if accountOf(inB.resource) == acctB {
				add(s, moved(inB, acctB, acct), false, "the hub's account")
				add(s, moved(inB, acctB, acctC), false, "C")
			}
		}
		// and what it may not do in its own account, it may not do in B
		for _, pr := range attacks("pay", "pay-eu") {
			add(s, moved(pr, acct, acctB), false, "B")
		}
	}

	// B's account role: the hub Crossplane's needs, moved into B, are
	// allowed (the access entry still names the hub's Flux role); on the
	// hub's account or C they are not, nor are the hub's attacks in B.
	role := accountRole(hubB)
	for _, pr := range hubNeeds() {
		inB := moved(pr, acct, acctB, flux)
		add(role, inB, true, "B")
		if accountOf(inB.resource) == acctB {
			add(role, pr, false, "the hub's account")
			add(role, moved(inB, acctB, acctC), false, "C")
		}
	}
	for _, pr := range hubAttacks() {
		add(role, moved(pr, acct, acctB, flux), false, "B")
	}
	add(role, p("give another account's Flux role access", "eks:CreateAccessEntry", "arn:aws:eks:"+region+":"+acctB+":cluster/mgmt-pay",
		resTag+"eksfleet.io/cluster", "mgmt-pay", "eks:principalArn", "arn:aws:iam::"+acctC+":role/mgmt-flux"), false, "B")

	// Who may assume B's account role: the hub's Crossplane, with B's
	// external ID, and only because its stack lists B.
	trustB := hubiam.AccountRoleTrust(hubB, extID)
	trustC := hubiam.AccountRoleTrust(hub.InAccount(acctC), extID)
	xp := hubCrossplane(hub)
	xp.identity = append(xp.identity, iamsim.Policy{Name: "spoke-accounts", Policy: hubiam.CrossplaneAccounts(hub, []string{acctB})})
	assume := func(s subject, roleARN string, trust policydoc.Document, externalID string, allowed bool, what string) {
		pr := p(what, "sts:AssumeRole", roleARN)
		if externalID != "" {
			pr.ctx["sts:ExternalId"] = externalID
		}
		id := fmt.Sprint(len(exps))
		r := request(id, s, pr)
		r.ResourcePolicy = &trust
		exps = append(exps, expectation{req: r, want: allowed, what: s.name + ": " + what})
	}
	assume(xp, hub.AccountRoleARN(acctB), trustB, extID, true, "assume B's account role")
	assume(xp, hub.AccountRoleARN(acctB), trustB, "", false, "assume it without the external ID")
	assume(xp, hub.AccountRoleARN(acctB), trustB, "another-id", false, "assume it with another external ID")
	assume(xp, hub.AccountRoleARN(acctC), trustC, extID, false, "assume the account role of C, which its stack does not list")
	// B's spoke roles trust B's own principals (OIDC, admins); were one to
	// trust the hub's Crossplane, its policy still names only account roles.
	everyone := policydoc.NewDocument(policydoc.Statement{Effect: policydoc.Allow, Principal: map[string]any{"AWS": "*"}, Action: []string{"sts:AssumeRole"}})
	assume(xp, "arn:aws:iam::"+acctB+":role/mgmt-spoke-pay-admin", everyone, extID, false, "assume a spoke role of B that trusts everyone")
	assume(xp, "arn:aws:iam::"+acctB+":role/OrganizationAccountAccessRole", everyone, extID, false, "assume B's organisation admin role")
	for _, other := range []subject{
		{name: "mgmt/flux", arn: flux, identity: []iamsim.Policy{{Name: "flux", Policy: hubiam.Flux(hub)}}, ctx: map[string]any{"aws:PrincipalArn": flux}},
		{name: "mgmt/external-secrets", arn: "arn:aws:iam::" + acct + ":role/" + hubiam.ExternalSecretsRoleName("mgmt"),
			identity: []iamsim.Policy{{Name: "eso", Policy: hubiam.ExternalSecrets(hub, secret, kmsKey)}},
			ctx:      map[string]any{"aws:PrincipalArn": "arn:aws:iam::" + acct + ":role/" + hubiam.ExternalSecretsRoleName("mgmt")}},
		minted(pay, boundaryB, pay.OIDCProviderARN()),
		fencedRole(spoke(hub, "pay"), hubiam.SpokeBoundary(hub), "minted-in-the-hub-account", "arn:aws:iam::"+acct+":role/mgmt-spoke-pay_x", ""),
	} {
		assume(other, hub.AccountRoleARN(acctB), trustB, extID, false, "assume B's account role")
	}

	failures, unknown := evaluate(t, exps, everyAction(t, []policydoc.Document{boundaryB, hubiam.Crossplane(hubB), trustB}, exps))
	for _, f := range failures {
		t.Error(f)
	}
	if len(unknown) > 0 {
		t.Errorf("actions not in the IAM catalogue: %v", unknown)
	}
	allowed := 0
	for _, e := range exps {
		if e.want {
			allowed++
		}
	}
	t.Logf("%d requests, %d allowed", len(exps), allowed)
}

// Planted: an account role trust without the external ID condition, and a
// hub Crossplane policy naming an account its stack should not, are each
// caught by the requests above.
func TestPlantedAccountMistakesFail(t *testing.T) {
	hubB, hubC := hub.InAccount(acctB), hub.InAccount(acctC)
	loose := hubiam.AccountRoleTrust(hubB, extID)
	loose.Statement[0].Condition = nil
	xp := hubCrossplane(hub)
	xp.identity = append(xp.identity, iamsim.Policy{Name: "spoke-accounts", Policy: hubiam.CrossplaneAccounts(hub, []string{acctB, acctC})})
	var exps []expectation
	for _, c := range []struct {
		what  string
		role  string
		trust policydoc.Document
		ext   string
	}{
		{"assume B's account role without the external ID", hub.AccountRoleARN(acctB), loose, ""},
		{"assume the account role of C", hub.AccountRoleARN(acctC), hubiam.AccountRoleTrust(hubC, extID), extID},
	} {
		pr := p(c.what, "sts:AssumeRole", c.role)
		if c.ext != "" {
			pr.ctx["sts:ExternalId"] = c.ext
		}
		r := request(fmt.Sprint(len(exps)), xp, pr)
		r.ResourcePolicy = &c.trust
		exps = append(exps, expectation{req: r, want: false, what: c.what})
	}
	failures, _ := evaluate(t, exps, nil)
	if len(failures) != len(exps) {
		t.Errorf("planted mistakes caught %d of %d: %v", len(failures), len(exps), failures)
	}
}

// The fleet account SCP under the same evaluator, as the account's
// organization level with AWS's default FullAWSAccess: the fleet's
// principals create EKS OIDC providers, launch templates, EKS clusters and
// node groups (the hub's
// Crossplane and deployer in the hub's account, B's account role in B);
// an administrator of another team in the account cannot, nor can a
// spoke's role holding every action; other OIDC providers are not the
// SCP's business. Planted: without the SCP, the other team's requests are
// allowed, which is what the test must see denied.
func TestFleetAccountSCP(t *testing.T) {
	deployer := "arn:aws:iam::" + acct + ":role/platform-deployer"
	fullAccess := policydoc.NewDocument(policydoc.Statement{Effect: policydoc.Allow, Action: []string{"*"}, Resource: []string{"*"}})
	scp := hubiam.FleetAccountSCP(hub, []string{deployer})
	if n := policydoc.Size(scp); n > hubiam.QuotaSCP {
		t.Fatalf("SCP %d characters, quota %d", n, hubiam.QuotaSCP)
	}
	admin := func(arn string) subject {
		return subject{name: arn, arn: arn, identity: []iamsim.Policy{{Name: "admin", Policy: allowAll}}, ctx: map[string]any{"aws:PrincipalArn": arn}}
	}
	hubB := hub.InAccount(acctB)
	oidc := func(account, host string) string { return "arn:aws:iam::" + account + ":oidc-provider/" + host }
	spokeOIDC := func(account string) probe {
		return p("create a spoke's EKS OIDC provider", "iam:CreateOpenIDConnectProvider", oidc(account, "oidc.eks.eu-west-1.amazonaws.com/id/PAY0000"),
			reqTag+"eksfleet.io/cluster", "mgmt-pay", "aws:TagKeys", []string{"eksfleet.io/cluster"})
	}
	lt := func(account string) probe {
		return p("create a launch template", "ec2:CreateLaunchTemplate", "arn:aws:ec2:"+region+":"+account+":launch-template/*",
			reqTag+"eksfleet.io/cluster", "mgmt-pay", "aws:TagKeys", []string{"eksfleet.io/cluster"})
	}
	ltVersion := func(account string) probe {
		return p("add a version to a spoke's launch template", "ec2:CreateLaunchTemplateVersion", "arn:aws:ec2:"+region+":"+account+":launch-template/lt-0pay",
			resTag+"eksfleet.io/cluster", "mgmt-pay")
	}
	// CreateCluster names no resource in IAM; a node group is created on
	// its cluster, which the composition tagged.
	eksCluster := func(string) probe {
		return p("create a spoke's EKS cluster", "eks:CreateCluster", "*",
			reqTag+"eksfleet.io/cluster", "mgmt-pay", "aws:TagKeys", []string{"eksfleet.io/cluster"},
			"eks:bootstrapClusterCreatorAdminPermissions", "false")
	}
	nodegroup := func(account string) probe {
		return p("create a spoke's node group (EKS makes a launch template for one without)", "eks:CreateNodegroup", "arn:aws:eks:"+region+":"+account+":cluster/mgmt-pay",
			resTag+"eksfleet.io/cluster", "mgmt-pay", reqTag+"eksfleet.io/cluster", "mgmt-pay", "aws:TagKeys", []string{"eksfleet.io/cluster"})
	}
	other := admin("arn:aws:iam::" + acct + ":role/other-team-admin")
	otherB := admin("arn:aws:iam::" + acctB + ":role/other-team-admin")
	xp := hubCrossplane(hub)
	role := accountRole(hubB)
	cases := []struct {
		s       subject
		pr      probe
		allowed bool
	}{
		{xp, spokeOIDC(acct), true},
		{xp, lt(acct), true},
		{xp, ltVersion(acct), true},
		{admin(deployer), p("create the hub's EKS OIDC provider", "iam:CreateOpenIDConnectProvider", oidc(acct, "oidc.eks.eu-west-1.amazonaws.com/id/HUB0000")), true},
		{admin(deployer), lt(acct), true},
		{role, spokeOIDC(acctB), true},
		{role, lt(acctB), true},
		{other, spokeOIDC(acct), false},
		{other, p("create an untagged EKS OIDC provider", "iam:CreateOpenIDConnectProvider", oidc(acct, "oidc.eks.eu-west-1.amazonaws.com/id/OTHER00")), false},
		{other, lt(acct), false},
		{other, ltVersion(acct), false},
		{otherB, spokeOIDC(acctB), false},
		{otherB, lt(acctB), false},
		{fencedRole(spoke(hub, "pay"), hubiam.SpokeBoundary(hub), "minted", "arn:aws:iam::"+acct+":role/mgmt-spoke-pay_x", ""), lt(acct), false},
		{other, p("create another OIDC provider", "iam:CreateOpenIDConnectProvider", oidc(acct, "token.actions.githubusercontent.com")), true},
		{xp, eksCluster(acct), true},
		{xp, nodegroup(acct), true},
		{admin(deployer), eksCluster(acct), true},
		{role, nodegroup(acctB), true},
		{other, eksCluster(acct), false},
		{other, nodegroup(acct), false},
		{otherB, eksCluster(acctB), false},
	}
	run := func(withSCP bool) []string {
		var exps []expectation
		for _, c := range cases {
			r := request(fmt.Sprint(len(exps)), c.s, c.pr)
			if withSCP {
				r.SCPs = []iamsim.Policy{{Name: "FullAWSAccess", Policy: fullAccess}, {Name: "fleet-account", Policy: scp}}
			}
			exps = append(exps, expectation{req: r, want: c.allowed, what: c.s.name + ": " + c.pr.name + " (" + c.pr.resource + ")"})
		}
		failures, unknown := evaluate(t, exps, everyAction(t, []policydoc.Document{scp}, exps))
		if len(unknown) > 0 {
			t.Errorf("actions not in the IAM catalogue: %v", unknown)
		}
		return failures
	}
	for _, f := range run(true) {
		t.Error(f)
	}
	// (the minted role's request is its boundary's to deny)
	if got := run(false); len(got) != 9 {
		t.Errorf("without the SCP, %d requests change their decision, want the other teams' 9:\n%s", len(got), strings.Join(got, "\n"))
	}
}
