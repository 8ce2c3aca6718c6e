package hubiam

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

const spokeAccount = "222233334444"

// In a spoke account the hub Crossplane's fence and the spokes' boundary
// are the hub account's, every ARN moved into that account, except the
// hub's Flux role, which every spoke's access entry names where it is.
func TestAccountDocumentsAreTheHubsInTheAccount(t *testing.T) {
	in := env.InAccount(spokeAccount)
	if in.HubAccount() != env.AccountID || in.AccountID != spokeAccount {
		t.Fatalf("InAccount: %+v", in)
	}
	move := func(d policydoc.Document, keep ...string) string {
		s := strings.ReplaceAll(d.MustJSON(), ":"+env.AccountID+":", ":"+spokeAccount+":")
		for _, k := range keep {
			s = strings.ReplaceAll(s, strings.ReplaceAll(k, ":"+env.AccountID+":", ":"+spokeAccount+":"), k)
		}
		return s
	}
	for _, c := range []struct {
		name      string
		got, want string
	}{
		{"crossplane", Crossplane(in).MustJSON(), move(Crossplane(env), env.FluxRoleARN())},
		{"boundary", SpokeBoundary(in).MustJSON(), move(SpokeBoundary(env))},
	} {
		if d := cmp.Diff(c.want, c.got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
	if !strings.Contains(Crossplane(in).MustJSON(), `"arn:aws:iam::111122223333:role/mgmt-flux"`) {
		t.Error("the account's Crossplane fence does not name the hub's Flux role in the hub's account")
	}
}

func TestAccountRoleTrustAndCrossplaneAccounts(t *testing.T) {
	in := env.InAccount(spokeAccount)
	for _, c := range []struct {
		name      string
		got, want string
	}{
		{
			name: "trust",
			got:  AccountRoleTrust(in, "ext-123").MustJSON(),
			want: `{"Version":"2012-10-17","Statement":[{"Sid":"HubCrossplane","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:role/mgmt-crossplane-aws"},"Action":"sts:AssumeRole","Condition":{"StringEquals":{"sts:ExternalId":"ext-123"}}}]}`,
		},
		{
			name: "crossplane accounts, sorted",
			got:  CrossplaneAccounts(env, []string{"444455556666", spokeAccount}).MustJSON(),
			want: `{"Version":"2012-10-17","Statement":[{"Sid":"SpokeAccounts","Effect":"Allow","Action":"sts:AssumeRole","Resource":["arn:aws:iam::222233334444:role/mgmt-crossplane-account","arn:aws:iam::444455556666:role/mgmt-crossplane-account"]}]}`,
		},
	} {
		if d := cmp.Diff(c.want, c.got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
	if d := CrossplaneAccounts(env, nil); len(d.Statement) != 0 {
		t.Errorf("no accounts: %v", d)
	}
}

// At the longest names the validators admit, every document of a spoke
// account fits its quota: the account role's managed policy and name, its
// trust with the longest external ID, the boundary, and the hub
// Crossplane's inline policy on 100 accounts (stacks.MaxSpokeAccounts).
func TestAccountDocumentsFitTheirQuotas(t *testing.T) {
	for partition, region := range LongestRegions {
		e := Env{Partition: partition, AccountID: "111122223333", Region: region, HubName: strings.Repeat("h", workloadcluster.MaxHubNameLength)}
		accounts := make([]string, 100)
		for i := range accounts {
			accounts[i] = fmt.Sprintf("999999999%03d", i)
		}
		us := append(AccountUsages(e.InAccount(spokeAccount), strings.Repeat("x", MaxExternalIDLength)), CrossplaneAccountsUsage(e, accounts))
		if len(us) != 5 {
			t.Errorf("%d documents", len(us))
		}
		if err := CheckUsages(us); err != nil {
			t.Errorf("%s: %v", partition, err)
		}
	}
	// and the check can fail: 200 accounts do not fit
	e := Env{Partition: "aws-us-gov", AccountID: "111122223333", Region: "us-gov-west-1", HubName: strings.Repeat("h", workloadcluster.MaxHubNameLength)}
	accounts := make([]string, 200)
	for i := range accounts {
		accounts[i] = fmt.Sprintf("99999999%04d", i)
	}
	if err := CheckUsages([]Usage{CrossplaneAccountsUsage(e, accounts)}); err == nil {
		t.Error("200 accounts fit the inline quota: the quota test proves nothing")
	}
}

func TestCheckExternalID(t *testing.T) {
	for name, tc := range map[string]struct {
		id     string
		reason string
		ok     bool
	}{
		"uuid":      {id: "7c9e6679-7425-40de-944b-e07fc1f90ae7", ok: true, reason: "what uuidgen prints"},
		"symbols":   {id: "a_b+c=d,e.f@g:h/i-j", ok: true, reason: "every character STS allows"},
		"two":       {id: "ab", ok: true, reason: "STS's minimum length"},
		"longest":   {id: strings.Repeat("x", MaxExternalIDLength), ok: true, reason: "STS's maximum length"},
		"one":       {id: "a", reason: "below STS's minimum length"},
		"too long":  {id: strings.Repeat("x", MaxExternalIDLength+1), reason: "above STS's maximum length"},
		"space":     {id: "a b", reason: "STS refuses spaces"},
		"wildcard":  {id: "ab*", reason: "STS refuses *, which a trust condition would also read as a pattern under StringLike"},
		"empty":     {id: "", reason: "a role assumable without an external ID is the confused deputy the ID guards against"},
		"non-ascii": {id: "ünïcode", reason: "STS's pattern is ASCII word characters"},
	} {
		err := CheckExternalID(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("%s (%s): error %v", name, tc.reason, err)
		}
	}
}

func TestEnvValidateAccounts(t *testing.T) {
	if err := env.InAccount(spokeAccount).Validate(); err != nil {
		t.Errorf("a spoke account's Env: %v", err)
	}
	bad := env.InAccount("2222")
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `hubiam.Env.AccountID "2222"`) {
		t.Errorf("a malformed account: %v", err)
	}
	bad = env
	bad.HubAccountID = "x"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `hubiam.Env.HubAccountID "x"`) {
		t.Errorf("a malformed hub account: %v", err)
	}
}

// The fleet account SCP fits Organizations' quota at the longest names,
// with a deployer role of IAM's longest name.
func TestFleetAccountSCPFitsItsQuota(t *testing.T) {
	for partition, region := range LongestRegions {
		e := Env{Partition: partition, AccountID: "111122223333", Region: region, HubName: strings.Repeat("h", workloadcluster.MaxHubNameLength)}
		deployer := "arn:" + partition + ":iam::111122223333:role/" + strings.Repeat("d", QuotaRoleName)
		u := FleetAccountSCPUsage(e, []string{deployer})
		if err := CheckUsages([]Usage{u}); err != nil {
			t.Error(err)
		}
		if !strings.Contains(u.Document, deployer) || !strings.Contains(u.Document, e.CrossplaneRoleARN()) || !strings.Contains(u.Document, ":role/"+AccountRoleName(e.HubName)) {
			t.Errorf("%s: the SCP does not name every fleet principal: %s", partition, u.Document)
		}
	}
}
