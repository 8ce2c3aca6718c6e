package policy

import (
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

const spokeAccount = "222233334444" // the repository policy's spoke account

// The policy's spoke accounts: each entry as a spoke-account stack outputs
// it, each once.
func TestParseAccounts(t *testing.T) {
	_, src := repoPolicy(t)
	for name, tc := range map[string]struct{ old, new, want string }{
		"short id":         {`- id: "222233334444"`, `- id: "2222"`, `spec.accounts[0].id "2222": not an AWS account ID`},
		"role elsewhere":   {"roleArn: arn:aws:iam::222233334444:", "roleArn: arn:aws:iam::999988887777:", "spec.accounts[0].roleArn"},
		"not the role":     {"role/mgmt-crossplane-account", "role/Admin", "spec.accounts[0].roleArn"},
		"bad external id":  {"externalId: 7c9e6679-7425-40de-944b-e07fc1f90ae7", "externalId: x", "spec.accounts[0].externalId"},
		"twice":            {"      externalId: 7c9e6679-7425-40de-944b-e07fc1f90ae7\n", "      externalId: 7c9e6679-7425-40de-944b-e07fc1f90ae7\n    - id: \"222233334444\"\n      roleArn: arn:aws:iam::222233334444:role/mgmt-crossplane-account\n      externalId: abc\n", `spec.accounts[1].id "222233334444": listed twice`},
		"an unknown field": {"      externalId: 7c9e6679", "      region: eu-west-1\n      externalId: 7c9e6679", "region"},
	} {
		if !strings.Contains(src, tc.old) {
			t.Fatalf("%s: policy has no %q", name, tc.old)
		}
		_, err := Parse([]byte(strings.Replace(src, tc.old, tc.new, 1)), "p")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

// A claim names an account of the policy or none; an account the hub's
// Crossplane may not assume into (cluster-info SPOKE_ACCOUNTS) is the
// policy's problem; quotas count per account and region; a spoke's own
// account may hold its admins; the account never changes.
func TestClaimAccounts(t *testing.T) {
	p, _ := repoPolicy(t)
	for name, tc := range map[string]struct {
		account string
		want    string // family/rule
	}{
		"the hub's":         {account: ""},
		"a listed one":      {account: spokeAccount},
		"not an account":    {account: "22223333444", want: "api/account"},
		"not in the policy": {account: "999988887777", want: "policy/account"},
	} {
		c := good()
		c.Spec.Account = tc.account
		var got []string
		for _, v := range p.CheckClaim(c) {
			got = append(got, v.Family+"/"+v.Rule)
			if v.Field != "spec.account" || !strings.Contains(v.Message, tc.account) {
				t.Errorf("%s: %+v does not name the field and value", name, v)
			}
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s: %v, want %q", name, got, tc.want)
		}
	}

	// The hub may not reach the policy's account.
	vs := p.CheckFleet(nil, Hub{AccountID: hubAccount, SpokeAccounts: []string{}})
	if len(vs) != 1 || vs[0].Rule != "account-hub" || vs[0].Field != "spec.accounts[0].id" || !strings.Contains(vs[0].Message, "eks-fleet:spokeAccounts") {
		t.Errorf("an account the hub does not list: %v", vs)
	}
	if vs := p.CheckFleet(nil, Hub{AccountID: hubAccount, SpokeAccounts: []string{spokeAccount}}); len(vs) != 0 {
		t.Errorf("an account the hub lists: %v", vs)
	}
	if vs := p.CheckFleet(nil, Hub{AccountID: hubAccount}); len(vs) != 0 {
		t.Errorf("cluster-info silent on accounts: %v", vs)
	}

	// Six VPCs in one region, five of them in the spoke account: only the
	// spoke account's fifth passes its quota (counted together, the fifth
	// and sixth would).
	spoke := func(name, account string) Member {
		c := &workloadcluster.Claim{Metadata: workloadcluster.Metadata{Name: name},
			Spec: workloadcluster.Spec{Account: account, Region: "us-east-1", NATMode: "single", AvailabilityZones: 2, VPCCIDR: "10." + string(rune('1'+len(name))) + ".0.0/16"}}
		return MemberOf(c, name+".yaml")
	}
	members := []Member{spoke("a", ""), spoke("bb", spokeAccount), spoke("ccc", spokeAccount), spoke("dddd", spokeAccount), spoke("eeeee", spokeAccount), spoke("ffffff", spokeAccount)}
	var quota []string
	for _, v := range p.CheckFleet(members, Hub{AccountID: hubAccount, Region: "eu-west-1"}) {
		quota = append(quota, v.Rule+":"+v.Cluster)
	}
	if strings.Join(quota, ",") != "region-quota:ffffff" {
		t.Errorf("quotas by account: %v, want only the fifth VPC of the spoke account refused", quota)
	}
	for _, v := range p.CheckFleet(members, Hub{AccountID: hubAccount}) {
		if v.Cluster == "ffffff" && !strings.Contains(v.Message, "us-east-1 of account "+spokeAccount) {
			t.Errorf("the quota message does not name the account: %s", v.Message)
		}
	}

	// Admins of the spoke's own account.
	own := Member{Name: "a", File: "a.yaml", CIDR: "10.1.0.0/16", Account: spokeAccount, Admins: []string{"arn:aws:iam::" + spokeAccount + ":role/team-admins"}}
	if vs := p.CheckFleet([]Member{own}, Hub{AccountID: hubAccount}); len(vs) != 0 {
		t.Errorf("an admin of the spoke's own account: %v", vs)
	}
	own.Account = ""
	if vs := p.CheckFleet([]Member{own}, Hub{AccountID: hubAccount}); len(vs) != 1 || vs[0].Rule != "admin-account" {
		t.Errorf("the same admin for a spoke in the hub's account: %v", vs)
	}

	old, cur := good(), good()
	cur.Spec.Account = spokeAccount
	if vs := CheckTransition(old, cur); len(vs) != 1 || vs[0].Field != "spec.account" || vs[0].Rule != "immutable" {
		t.Errorf("moving a spoke to an account: %v", vs)
	}
}
