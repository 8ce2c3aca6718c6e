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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/accounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
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

// scratchApp is an AppInfrastructure of the example app that
// appInfraLeavesItsAccount adds to the payments spoke and removes again.
const scratchApp = "payment-scratch"

// appInfraLeavesItsAccount: on the spoke in the payments account, an
// AppInfrastructure added in Git is composed by the spoke's own Crossplane
// in that account, and once removed from Git (the spoke's Flux prunes it)
// each of its resources is deleted there, every call authorized as AWS
// would for the spoke's Crossplane role in that account (the suite fails
// on any refusal), and nothing of it is left in any account. The example
// app's own claim stays: the break-glass teardown after this needs it.
func appInfraLeavesItsAccount(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	eks := playedSpoke(t, h)
	dir := filepath.Join(h.Repo.Work, filepath.FromSlash(filepath.Dir(appOverlay)))
	staging, err := os.ReadFile(filepath.Join(dir, "appinfrastructure.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(staging, &u.Object); err != nil || u.GetName() != exampleApp {
		t.Fatalf("the app's staging claim is not %s's: %v %v", exampleApp, err, u.Object)
	}
	u.SetName(scratchApp)
	scratch, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	const file = "appinfrastructure-scratch.yaml"
	if err := os.WriteFile(filepath.Join(dir, file), scratch, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Edit(appOverlay, "  - appinfrastructure.yaml\n", "  - appinfrastructure.yaml\n  - "+file+"\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Commit(exampleApp + ": a scratch table and queue"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	check.RequestFluxReconcile(t, eks.Cluster, check.FluxObject{GVR: check.GitRepositories, Name: "flux-system"})
	mine := func() []aws.Resource {
		var out []aws.Resource
		for _, r := range allResources(h) {
			if strings.HasPrefix(r.Owner, scratchApp+"-") {
				out = append(out, r)
			}
		}
		return out
	}
	var ready, reason, msg string
	err = kube.Poll(ctx, composeBound, func() (bool, error) {
		claim, err := eks.Cluster.Dynamic.Resource(check.AppInfrastructures).Namespace(exampleAppNS).Get(ctx, scratchApp, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ready, reason, msg = check.Condition(claim, "Ready")
		return ready == "True", nil
	})
	if err != nil {
		t.Fatalf("%s/%s is not Ready: Ready=%s %s: %s: %v\nthe spoke:\n%s", exampleAppNS, scratchApp, ready, reason, msg, err, fluxState(ctx, eks.Cluster))
	}
	made := mine()
	kinds := map[string]int{}
	for _, r := range made {
		kinds[r.Kind]++
		if r.Account != clusterinfo.ExampleSpokeAccount {
			t.Errorf("%s is in account %s, not the spoke's %s", check.LedgerLine(r), r.Account, clusterinfo.ExampleSpokeAccount)
		}
	}
	if kinds[tableKind] != 1 || kinds["sqs.aws.upbound.io/Queue"] == 0 || kinds["iam.aws.upbound.io/Role"] != 1 {
		t.Fatalf("%s made %v in the accounts, want a table, its queues and a role", scratchApp, kinds)
	}
	t.Logf("%s Ready, %d resources in account %s, %s after the commit", scratchApp, len(made), clusterinfo.ExampleSpokeAccount, time.Since(start).Truncate(time.Second))

	if err := os.Remove(filepath.Join(dir, file)); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Edit(appOverlay, "  - "+file+"\n", ""); err != nil {
		t.Fatal(err)
	}
	if err := h.Repo.Commit(exampleApp + ": the scratch table and queue removed"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	check.RequestFluxReconcile(t, eks.Cluster, check.FluxObject{GVR: check.GitRepositories, Name: "flux-system"})
	err = kube.Poll(ctx, composeBound, func() (bool, error) { return len(mine()) == 0, nil })
	if err != nil {
		var left []string
		for _, r := range mine() {
			left = append(left, check.LedgerLine(r))
		}
		t.Fatalf("%s removed from Git, its resources are still in the accounts: %v\n%s\nthe spoke:\n%s", scratchApp, err, strings.Join(left, "\n"), fluxState(ctx, eks.Cluster))
	}
	acct := h.Accounts[clusterinfo.ExampleSpokeAccount]
	deleted := map[string]bool{}
	for _, d := range acct.Deletions() {
		deleted[d.Kind+"/"+d.ID] = true
	}
	for _, r := range made {
		if !deleted[r.Kind+"/"+r.ID] {
			t.Errorf("%s left account %s without a delete there", check.LedgerLine(r), clusterinfo.ExampleSpokeAccount)
		}
	}
	t.Logf("%s's %d resources deleted from account %s, %s after the commit", scratchApp, len(made), clusterinfo.ExampleSpokeAccount, time.Since(start).Truncate(time.Second))
}
