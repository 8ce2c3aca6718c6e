package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
	"github.com/gitops-fleet/eks-fleet/stacks"
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

// plantedDenial reports an AWS refusal the suite plants: STS refusing the
// hub's Crossplane the account roles of unreachable's prepared accounts,
// and the Tagging API refusing plantedDeployer.
func plantedDenial(msg string) bool {
	if strings.Contains(msg, aws.AssumedRoleARN(plantedDeployer(), "")) {
		return true
	}
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

// plantedDeployer deploys the payments account's stack with every read the
// program needs but tag:GetResources (fleetHubDeployers).
func plantedDeployer() string {
	return "arn:aws:iam::" + clusterinfo.ExampleSpokeAccount + ":role/planted-deployer"
}

// fleetHubDeployers are the fleet hub's deploying roles beside each
// account's site.DeployerRole: plantedDeployer.
func fleetHubDeployers() map[string]policydoc.Document {
	d := site.DeployerPolicy()
	st := d.Statement[0]
	st.Action = slices.DeleteFunc(slices.Clone(st.Action), func(a string) bool { return a == "tag:GetResources" })
	return map[string]policydoc.Document{plantedDeployer(): policydoc.NewDocument(st)}
}

// guardSees is what the payments account's delete guard must find there
// now, from the account's ledger: every resource AWS gives an ARN (IAM's
// roles by the spokes' role prefix, the rest by the eksfleet.io/cluster tag
// of the hub's spokes, which each must carry), sorted as
// preflight.Remains sorts. Resources without an ARN (a role's inline
// policy, a route) go with the one they belong to.
func guardSees(t *testing.T, h *site.Hub) []preflight.SpokeResource {
	t.Helper()
	_, example := exampleAccount(t)
	cfg, err := site.StackConfig(filepath.Join(plant.RepoRoot(t), example.Stack))
	if err != nil {
		t.Fatal(err)
	}
	hub := cfg[stacks.FullKey(stacks.HubNameKey)]
	var out []preflight.SpokeResource
	for _, r := range h.Accounts[clusterinfo.ExampleSpokeAccount].All() {
		switch {
		case r.ARN == "":
		case r.Type == "aws_iam_role" && strings.HasPrefix(r.Name, clusterinfo.SpokeRolePrefixFor(hub)):
			out = append(out, preflight.SpokeResource{ARN: r.ARN})
		case strings.HasPrefix(r.Tags[preflight.TagKey], hub+"-"):
			out = append(out, preflight.SpokeResource{Cluster: r.Tags[preflight.TagKey], ARN: r.ARN})
		default:
			t.Errorf("%s in the payments account carries no %s=%s-<spoke>: the account's delete guard cannot find it", check.LedgerLine(r), preflight.TagKey, hub)
		}
	}
	return preflight.Remains(hub, out)
}

// accountStackStays: with the example spoke (and its app's AWS resources)
// in the payments account, `pulumi destroy --run-program` of the account's
// stack (Pulumi.acct-payments.yaml) runs the program's pre-flight check,
// which passes (what the account holds is the fleet's), then the stack's
// delete guard, which refuses, naming every resource of the spoke the
// account holds, through the AWS SDK's real requests to the stand-in,
// authorized as the deploying role. A deploying role without
// tag:GetResources is refused with AWS's AccessDeniedException naming
// the action, and nothing is deleted.
func accountStackStays(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	id := clusterinfo.ExampleSpokeAccount
	err := h.AccountGuard(ctx, id, site.DeployerRole(id))
	var remains *preflight.RemainsError
	if !errors.As(err, &remains) {
		t.Fatalf("the payments account's guard with its spoke there: %v, want its refusal naming what remains", err)
	}
	want := guardSees(t, h)
	if len(want) == 0 {
		t.Fatal("the payments account holds nothing of the hub's spokes")
	}
	if diff := cmp.Diff(want, remains.Resources); diff != "" {
		t.Errorf("what the guard names (-the account holds +named):\n%s", diff)
	}
	for _, s := range []string{`stack "acct-payments": account ` + id + " still holds", "nothing was deleted", "pulumi destroy --run-program again"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the guard's refusal does not say %q:\n%v", s, err)
		}
	}
	t.Logf("the payments account's stack stays, its guard naming %d resources:\n%v", len(remains.Resources), err)

	err = h.AccountGuard(ctx, id, plantedDeployer())
	for _, s := range []string{"read what account " + id + " holds", "tag:GetResources in ", "AccessDeniedException",
		aws.AssumedRoleARN(plantedDeployer(), ""), "is not authorized to perform: tag:GetResources on resource: *"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("a deploying role without tag:GetResources: the guard's error does not say %q: %v", s, err)
		}
	}
}

// accountStackGoes: after the teardown the payments account holds only
// what break glass abandoned (the unreachable spoke's apps' resources), so
// its stack's delete guard still refuses, naming exactly those; once an
// operator deletes them by hand, as break glass's help says, the stack
// may go: its pre-flight check and delete guard pass.
func accountStackGoes(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	id := clusterinfo.ExampleSpokeAccount
	want := guardSees(t, h)
	err := h.AccountGuard(ctx, id, site.DeployerRole(id))
	var remains *preflight.RemainsError
	switch {
	case len(want) == 0:
		t.Errorf("break glass abandoned nothing in the payments account with an ARN (guard: %v)", err)
	case !errors.As(err, &remains):
		t.Errorf("the payments account's guard with what break glass abandoned there: %v, want its refusal naming %v", err, want)
	default:
		if diff := cmp.Diff(want, remains.Resources); diff != "" {
			t.Errorf("what the guard names after the teardown (-the account holds +named):\n%s", diff)
		}
	}
	acct := h.Accounts[id]
	for _, r := range acct.All() {
		acct.DeleteByHand(r.Kind, r.ID)
	}
	if err := h.AccountGuard(ctx, id, site.DeployerRole(id)); err != nil {
		t.Errorf("the payments account's stack, the account empty: %v", err)
	}
}

// hubUpReadsItsAccount: with a spoke in the hub's account (the restarted
// claim's), `pulumi up -s mgmt` run again passes its pre-flight check on
// the account as it now is: the spoke's EKS OIDC provider and launch
// template, read through the AWS SDK's real requests, are the fleet's.
// A launch template another team makes by hand stops it, named, before
// anything is created; once deleted, the check passes again.
func hubUpReadsItsAccount(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	role := site.DeployerRole(mocks.AccountID)
	kinds := map[string]int{}
	for _, r := range h.Account.All() {
		kinds[r.Type]++
	}
	if kinds["aws_launch_template"] == 0 || kinds["aws_iam_openid_connect_provider"] == 0 {
		t.Fatalf("the hub's account holds no spoke's launch template or OIDC provider to read: %v", kinds)
	}
	if err := h.HubPreflight(ctx, role); err != nil {
		t.Fatalf("the hub's pulumi up with a spoke in its account: %v", err)
	}
	const id = "lt-0feedfacecafe0001"
	h.Account.CreateByHand(aws.Resource{Kind: "ec2.aws.upbound.io/LaunchTemplate", Type: "aws_launch_template", ID: id, Name: id,
		ARN: "arn:aws:ec2:eu-west-1:" + mocks.AccountID + ":launch-template/" + id, Account: mocks.AccountID,
		Attrs: map[string]any{"region": "eu-west-1", "name": "web-batch"}, Tags: map[string]string{"team": "web"}})
	// The engine's error wraps the program's ("1 error occurred: * ...").
	err := h.HubPreflight(ctx, role)
	want := "account " + mocks.AccountID + " holds 1 EKS OIDC provider(s) or launch template(s) that hub mgmt's fleet did not make, nothing was created:\n" +
		"  - launch template " + id + " (web-batch) in eu-west-1 (tags team=web)\n"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("the hub's pulumi up with another team's launch template in its account: %v\nwant it to say %q", err, want)
	}
	h.Account.DeleteByHand("ec2.aws.upbound.io/LaunchTemplate", id)
	if err := h.HubPreflight(ctx, role); err != nil {
		t.Errorf("the hub's pulumi up, the foreign launch template deleted: %v", err)
	}
}
