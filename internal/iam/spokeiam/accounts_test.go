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
		key := s.name[strings.Index(s.name, "/")+1:]
		if strings.HasPrefix(key, "minted") {
			key = "minted"
		}
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
