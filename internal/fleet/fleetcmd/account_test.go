package fleetcmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/accounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

const ordersEntry = `{"id":"444455556666","roleArn":"arn:aws:iam::444455556666:role/mgmt-crossplane-account","externalId":"ext-orders-1"}`

// fleet account add writes the policy entry, the ProviderConfig and its
// listing, and says what the hub still lacks; bad input writes nothing.
func TestAccountAdd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		want   string
		writes bool
	}{
		{name: "entry", args: []string{"--entry", ordersEntry}, want: "add it to the hub stack's eks-fleet:spokeAccounts", writes: true},
		{name: "dry run", args: []string{"--entry", ordersEntry, "--dry-run"}, want: "would write"},
		{name: "no entry", code: ExitUsage, want: "--entry is required"},
		{name: "not the output", args: []string{"--entry", `{"account":"444455556666"}`}, code: ExitUsage, want: `unknown field "account"`},
		{name: "already listed", args: []string{"--entry", `{"id":"222233334444","roleArn":"arn:aws:iam::222233334444:role/mgmt-crossplane-account","externalId":"x2"}`},
			code: ExitFailed, want: "already a spoke account"},
		{name: "the hub's account", args: []string{"--entry", `{"id":"111122223333","roleArn":"arn:aws:iam::111122223333:role/mgmt-crossplane-account","externalId":"x2"}`},
			code: ExitFailed, want: "is the hub's own"},
		{name: "a short external id", args: []string{"--entry", strings.Replace(ordersEntry, "ext-orders-1", "x", 1)},
			code: ExitFailed, want: "spec.accounts[1].externalId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.snapshot()
			r := f.run(testDeps(), append([]string{"account", "add"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s%s", r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
			if changed := f.snapshot() != before; changed != tc.writes {
				t.Fatalf("tree changed: %v, want %v", changed, tc.writes)
			}
			if !tc.writes {
				return
			}
			if got := f.read(accounts.ProviderConfigRel("444455556666")); got != string(accounts.ProviderConfig(spokeaccounts.Account{
				ID: "444455556666", RoleARN: "arn:aws:iam::444455556666:role/mgmt-crossplane-account", ExternalID: "ext-orders-1"})) {
				t.Errorf("ProviderConfig:\n%s", got)
			}
			pol, err := policy.Parse([]byte(f.read(policy.RelPath)), "p")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := pol.Account("444455556666"); !ok {
				t.Error("the policy does not list the account")
			}
			// a cluster may now name it
			f.mustAdd("orders", "--account", "444455556666")
			if !strings.Contains(f.read("gitops-system/workload-clusters/orders.yaml"), `account: "444455556666"`) {
				t.Errorf("claim:\n%s", f.read("gitops-system/workload-clusters/orders.yaml"))
			}
		})
	}
}

// fleet cluster add --account: an account the policy does not list is
// refused with the policy's accounts, nothing written.
func TestClusterAddAccount(t *testing.T) {
	f := newFixture(t)
	before := f.snapshot()
	r := f.run(testDeps(), "cluster", "add", "orders", "--account", "999988887777")
	if r.code != ExitFailed || !strings.Contains(r.stderr, `spec.account: "999988887777" is not a spoke account of the fleet policy: accounts 222233334444`) {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if f.snapshot() != before {
		t.Error("the tree changed")
	}
	r = f.run(testDeps(), "cluster", "add", "orders", "--account", "222233334444")
	if r.code != 0 || !strings.Contains(r.stdout, "cluster orders: account 222233334444, region eu-west-1") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(f.read("gitops-system/workload-clusters/orders.yaml"), `account: "222233334444"`) {
		t.Errorf("claim:\n%s", f.read("gitops-system/workload-clusters/orders.yaml"))
	}
	// fleet iam shows its roles in the account, under the account's boundary
	r = f.run(testDeps(), "iam", "orders", "-o", "json")
	if r.code != 0 {
		t.Fatalf("iam: exit %d %s", r.code, r.stderr)
	}
	var rep iamReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, u := range rep.Documents {
		if strings.Contains(u.Role, "spoke-orders") {
			n++
			if !strings.Contains(u.ARN, ":222233334444:") && !strings.Contains(u.ARN, ":aws:policy/") {
				t.Errorf("%s %s: %s not in the spoke's account", u.Role, u.Kind, u.ARN)
			}
			if strings.Contains(u.Document, "111122223333:policy/mgmt-spoke-boundary") {
				t.Errorf("%s %s names the hub account's boundary", u.Role, u.Kind)
			}
		}
	}
	if n < 10 {
		t.Errorf("%d documents of the spoke", n)
	}
}
