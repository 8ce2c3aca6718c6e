package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/accounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// exampleAccount is the tree's example spoke account
// (clusterinfo.ExampleSpokeAccount) as its fleet policy lists it, and the
// checkout's spoke-account stack that prepares it (as site.PreparedAccounts
// matches them: the entry's role and external ID are the stack's).
func exampleAccount(t testing.TB) (spokeaccounts.Account, site.SpokeAccount) {
	t.Helper()
	root := plant.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "manifests", filepath.FromSlash(policy.RelPath)))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(b, policy.RelPath)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pol.Accounts, func(a spokeaccounts.Account) bool { return a.ID == clusterinfo.ExampleSpokeAccount })
	prepared, missing, err := site.PreparedAccounts(root)
	if err != nil {
		t.Fatal(err)
	}
	j := slices.IndexFunc(prepared, func(a site.SpokeAccount) bool { return a.ID == clusterinfo.ExampleSpokeAccount })
	if i < 0 || j < 0 {
		t.Fatalf("the checkout prepares no example account %s (fleet policy %s, Pulumi.*.yaml): %v", clusterinfo.ExampleSpokeAccount, policy.RelPath, missing)
	}
	return pol.Accounts[i], prepared[j]
}

// unreachable are accounts TestHubAddsAndDestroysSpokes' hub cannot make a
// spoke in, each planted one way, with what a claim naming it must show.
var unreachable = []struct {
	name, claim, account, cidr string
	// stack edits the config of the example account's spoke-account
	// stack (exampleAccount) run in that account; nil: the account was never
	// prepared nor listed anywhere.
	stack func(cfg map[string]string)
	// want is what the claim's managed resources must say (their last
	// string is what each says that is not waiting on another), or, with
	// no stack, the claim's SpecAccepted condition.
	want []string
}{
	{name: "the account role trusts another hub's Crossplane role", claim: "planted-trust", account: "333344445555", cidr: "10.41.0.0/16",
		stack: func(cfg map[string]string) { cfg["eks-fleet:hubAccountId"] = "999988887777" },
		want: []string{"connect failed: cannot get terraform setup: cache manager failure", "api error AccessDenied: User: arn:aws:sts::" + mocks.AccountID + ":assumed-role/",
			"is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::333344445555:role/" + hubiam.AccountRoleName("mgmt")}},
	{name: "the hub's ProviderConfig sends another external ID than the account role's", claim: "planted-extid", account: "444455556666", cidr: "10.42.0.0/16",
		stack: func(cfg map[string]string) { cfg["eks-fleet:externalId"] = "0b5cbbd2-6a43-4b8e-9e0c-9e0d2b0c6f11" },
		want:  []string{"api error AccessDenied", "sts:AssumeRole on resource: arn:aws:iam::444455556666:role/" + hubiam.AccountRoleName("mgmt")}},
	{name: "the account is not one of the hub's spoke accounts", claim: "planted-unlisted", account: "555566667777", cidr: "10.43.0.0/16",
		want: []string{`spec.account "555566667777" is not one of the hub's spoke accounts`, clusterinfo.SpokeAccounts}},
}

// plantedDenial reports an AWS refusal the prepared accounts of
// unreachable are planted to draw: STS refusing the hub's Crossplane their
// account role.
func plantedDenial(msg string) bool {
	for _, u := range unreachable {
		if u.stack != nil && strings.Contains(msg, "is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::"+u.account+":role/") {
			return true
		}
	}
	return false
}

// fleetHubAccounts are the stand-in accounts of TestHubAddsAndDestroysSpokes'
// hub: the payments account, and those of unreachable that were prepared.
func fleetHubAccounts(t testing.TB) []site.SpokeAccount {
	_, example := exampleAccount(t)
	out := []site.SpokeAccount{example}
	for _, u := range unreachable {
		if u.stack != nil {
			out = append(out, site.SpokeAccount{ID: u.account, Stack: example.Stack, Config: u.stack})
		}
	}
	return out
}

// withFleetHubAccounts lists the prepared accounts in the hub stack's
// eks-fleet:spokeAccounts (a HubOptions.Config).
func withFleetHubAccounts(prepared []site.SpokeAccount) func(cfg map[string]string) {
	return func(cfg map[string]string) {
		var ids []string
		for _, a := range prepared {
			ids = append(ids, a.ID)
		}
		b, _ := json.Marshal(ids)
		cfg["eks-fleet:spokeAccounts"] = string(b)
	}
}

// fleetHubTree is the fleet hub's tree: the example claim out of the
// claims' list and in the payments account (spec.account, as `fleet
// cluster add --account` writes it), for the scenario that merges it; and
// each prepared account of unreachable listed as `fleet account add` lists
// it (the fleet policy's entry, the hub's ProviderConfig), with the
// example account's external ID (example, the policy's entry).
func fleetHubTree(example spokeaccounts.Account) func(work string) error {
	return func(work string) error { return editFleetHubTree(work, example) }
}

func editFleetHubTree(work string, example spokeaccounts.Account) error {
	if err := withoutExampleClaim(work); err != nil {
		return err
	}
	path := filepath.Join(work, filepath.FromSlash(claimFile))
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	const anchor = "\nspec:\n"
	if strings.Count(string(b), anchor) != 1 || strings.Contains(string(b), "\n  account:") {
		return fmt.Errorf("%s: want one spec and no spec.account, to put the claim in account %s", path, clusterinfo.ExampleSpokeAccount)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), anchor, anchor+"  account: \""+clusterinfo.ExampleSpokeAccount+"\"\n", 1)), 0o644); err != nil {
		return err
	}
	tree, err := fleettree.Open(filepath.Join(work, "manifests"))
	if err != nil {
		return err
	}
	for _, u := range unreachable {
		if u.stack == nil {
			continue
		}
		c, err := accounts.Add(tree, spokeaccounts.Account{ID: u.account, RoleARN: "arn:aws:iam::" + u.account + ":role/" + hubiam.AccountRoleName("mgmt"),
			ExternalID: example.ExternalID})
		if err != nil {
			return err
		}
		if err := c.Apply(tree.Root); err != nil {
			return err
		}
	}
	return nil
}

// unreachableAccounts merges one claim for each of unreachable, in one
// commit, and waits until each shows why its account cannot be reached:
// every managed resource of the prepared ones failing to connect with
// STS's refusal of the account role, the unlisted one refused by the
// function on the claim (SpecAccepted=False) with nothing composed.
// Nothing of any is made in any account. Then the claims are removed, and
// every object they composed goes (none holds the provider's finalizer,
// which would need the account to delete from).
func unreachableAccounts(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	for _, u := range unreachable {
		writeClaimIn(t, h, u.claim, u.cidr, u.account)
	}
	if err := h.Repo.Commit("add claims in accounts the hub cannot reach"); err != nil {
		t.Fatal(err)
	}
	check.RequestReconcile(t, h)
	for _, u := range unreachable {
		var last string
		err := kube.Poll(ctx, composeBound, func() (bool, error) {
			claim, out, err := composedResourcesOf(ctx, h, u.claim)
			if claim == nil {
				last = fmt.Sprint(err)
				return false, nil
			}
			_, _, spec := check.Condition(claim, compose.SpecAcceptedCondition)
			msgs := []string{spec}
			aws := 0
			for _, c := range out {
				if c.managedByAWSFam {
					aws++
					msgs = append(msgs, c.syncedMsg)
				}
			}
			last = strings.Join(msgs, "\n") + "\n" + describeComposed(out)
			for _, w := range u.want {
				if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, w) }) {
					return false, nil
				}
			}
			if u.stack == nil {
				return aws == 0, nil
			}
			// every managed resource composed so far fails the same way,
			// or waits on one that does (its references unresolved)
			for _, c := range out {
				if !c.managedByAWSFam {
					continue
				}
				if !c.exists || c.synced != "False" ||
					!strings.Contains(c.syncedMsg, u.want[len(u.want)-1]) && !strings.HasPrefix(c.syncedMsg, "cannot resolve references: ") {
					return false, nil
				}
			}
			return aws > 0, nil
		})
		if err != nil {
			t.Errorf("%s: claim %s never showed %q (%v):\n%s", u.name, u.claim, u.want, err, last)
			continue
		}
		t.Logf("%s: claim %s shows it", u.name, u.claim)
	}
	made := func() []string {
		var out []string
		for _, r := range allResources(h) {
			for _, u := range unreachable {
				if strings.HasPrefix(r.Owner, u.claim+"-") {
					out = append(out, check.LedgerLine(r))
				}
			}
		}
		return out
	}
	if m := made(); len(m) > 0 {
		t.Errorf("claims in unreachable accounts made resources:\n%s", strings.Join(m, "\n"))
	}

	// What each claim composed, to follow once the claims go.
	var composedObjects []composed
	for _, u := range unreachable {
		_, out, err := composedResourcesOf(ctx, h, u.claim)
		if err != nil && u.stack != nil {
			t.Fatalf("claim %s: %v", u.claim, err)
		}
		composedObjects = append(composedObjects, out...)
	}
	for _, u := range unreachable {
		unlistClaim(t, h, u.claim)
	}
	if err := h.Repo.Commit("remove the claims in accounts the hub cannot reach"); err != nil {
		t.Fatal(err)
	}
	check.RequestReconcile(t, h)
	var left []string
	err := kube.Poll(ctx, composeBound, func() (bool, error) {
		left = nil
		for _, u := range unreachable {
			if _, err := h.Cluster.Dynamic.Resource(check.Claims).Namespace(claimNS).Get(ctx, u.claim, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, fmt.Sprintf("claim %s (%v)", u.claim, err))
			}
		}
		for _, c := range composedObjects {
			gvr, err := resourceFor(h, c.ref)
			if err != nil {
				continue
			}
			if _, err := h.Cluster.Dynamic.Resource(gvr).Get(ctx, c.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, fmt.Sprintf("%s %s (%v)", c.ref.Kind, c.name, err))
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Fatalf("the claims in unreachable accounts were removed, yet %d objects stay (%v):\n%s", len(left), err, strings.Join(left, "\n"))
	}
	if m := made(); len(m) > 0 {
		t.Errorf("removing the claims left resources:\n%s", strings.Join(m, "\n"))
	}
}
