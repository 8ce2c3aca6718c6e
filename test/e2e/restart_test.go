package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fnjson"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// addClaim commits a copy of the example claim named name with its own
// VPC CIDR, as a team's pull request adds one.
func addClaim(t *testing.T, h *site.Hub, name, cidr string) {
	t.Helper()
	writeClaim(t, h, name, cidr)
	if err := h.Repo.Commit("add " + name); err != nil {
		t.Fatal(err)
	}
}

// writeClaim writes a copy of the example claim named name with its own
// VPC CIDR into h's work tree and lists it, uncommitted.
func writeClaim(t testing.TB, h *site.Hub, name, cidr string) {
	t.Helper()
	writeClaimIn(t, h, name, cidr, "")
}

// writeClaimIn is writeClaim with the claim's spec.account (empty: none,
// the hub's).
func writeClaimIn(t testing.TB, h *site.Hub, name, cidr, account string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", claimFile))
	if err != nil {
		t.Fatal(err)
	}
	claim := strings.NewReplacer("name: "+claimName, "name: "+name, "vpcCidr: 10.20.0.0/16", "vpcCidr: "+cidr).Replace(string(b))
	if !strings.Contains(claim, "name: "+name) || !strings.Contains(claim, cidr) || strings.Count(claim, "\nspec:\n") != 1 {
		t.Fatalf("the example claim changed shape; cannot derive %s from it:\n%s", name, claim)
	}
	if account != "" {
		claim = strings.Replace(claim, "\nspec:\n", "\nspec:\n  account: \""+account+"\"\n", 1)
	}
	dir := filepath.Dir(filepath.Join(h.Repo.Work, filepath.FromSlash(claimFile)))
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(claim), 0o644); err != nil {
		t.Fatal(err)
	}
	listClaim(t, h, name)
}

// listClaim lists the claim file name.yaml in the claims folder's
// kustomization.yaml of h's work tree, with the editor `fleet cluster add`
// uses (kustfile.Add).
func listClaim(t testing.TB, h *site.Hub, name string) {
	t.Helper()
	path := filepath.Join(h.Repo.Work, filepath.FromSlash(filepath.Dir(claimFile)), "kustomization.yaml")
	b, err := os.ReadFile(path)
	if err == nil {
		b, err = kustfile.Add(b, name+".yaml")
	}
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatalf("list %s: %v", name, err)
	}
}

// unlistClaim removes the claim file name.yaml of h's work tree and its
// entry in the claims folder's kustomization.yaml, as `fleet cluster
// remove` does (kustfile.Remove), uncommitted.
func unlistClaim(t testing.TB, h *site.Hub, name string) {
	t.Helper()
	dir := filepath.Join(h.Repo.Work, filepath.FromSlash(filepath.Dir(claimFile)))
	path := filepath.Join(dir, "kustomization.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, found, err := kustfile.Remove(b, name+".yaml")
	if err == nil && !found {
		err = fmt.Errorf("not listed")
	}
	if err == nil {
		err = os.WriteFile(path, out, 0o644)
	}
	if err == nil {
		err = os.Remove(filepath.Join(dir, name+".yaml"))
	}
	if err != nil {
		t.Fatalf("unlist %s: %v", name, err)
	}
}

// withoutExampleClaim removes the example claim from the claims folder's
// list in the work tree work (a HubOptions.Edit), with the editor `fleet
// cluster remove` uses (kustfile.Remove): the hub comes up with no spoke,
// and a scenario merges it later (leadTime).
func withoutExampleClaim(work string) error {
	path := filepath.Join(work, filepath.FromSlash(filepath.Dir(claimFile)), "kustomization.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, found, err := kustfile.Remove(b, filepath.Base(claimFile))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !found {
		return fmt.Errorf("%s does not list %s; cannot take the example claim out of it:\n%s", path, filepath.Base(claimFile), b)
	}
	return os.WriteFile(path, out, 0o644)
}

// kindsOf counts a claim's resources by kind, in every account the
// stand-in holds.
func kindsOf(h *site.Hub, claim string) map[string]int {
	out := map[string]int{}
	for _, r := range allResources(h) {
		if strings.HasPrefix(r.Owner, claim+"-") {
			out[r.Kind]++
		}
	}
	return out
}

// allResources are the resources of every account the stand-in holds,
// the hub's first, then the spoke accounts by ID.
func allResources(h *site.Hub) []aws.Resource {
	out := h.Account.All()
	for _, id := range slices.Sorted(maps.Keys(h.Accounts)) {
		if l := h.Accounts[id]; l != h.Account {
			out = append(out, l.All()...)
		}
	}
	return out
}

// inAccountOnly checks that every resource of the stand-in whose managed
// resource's name starts with owner is in account, named there (an ARN in
// it), and that account holds some.
func inAccountOnly(t *testing.T, h *site.Hub, owner, account string) {
	t.Helper()
	n := 0
	for _, r := range allResources(h) {
		if !strings.HasPrefix(r.Owner, owner) {
			continue
		}
		n++
		if r.Account != account || r.ARN != "" && !strings.Contains(r.ARN, ":"+account+":") {
			t.Errorf("%s is in account %s (ARN %q); want every resource of %s* in %s", check.LedgerLine(r), r.Account, r.ARN, owner, account)
		}
	}
	if n == 0 {
		t.Errorf("no resource of %s* in any account", owner)
	}
}

// restartedClaim is the claim restartMidCreate merges; its spoke is not
// played, so it waits for good from then on.
const restartedClaim = "restarted"

// restartMidCreate merges a new claim with the EKS control plane's create
// time at 20 s and, while AWS is creating it, kills the hub's Crossplane
// (core: the composite, claim and Usage controllers) and the composition
// function's process, as an OOM kill or a lost node does; the pods' restart
// policy brings them back. The claim must still be composed to every
// resource Ready, with exactly the resources of the same claim composed
// without a restart (like's, kind by kind: nothing created twice, nothing
// missing) and EKS refusing nothing. The providers are the
// stand-in's (their restart, and crossplane-runtime's external-create
// bookkeeping across it, are not modelled).
func restartMidCreate(t *testing.T, h *site.Hub, like string) {
	ctx := context.Background()
	const name, createTakes = restartedClaim, 20 * time.Second
	h.AWS.SetReadyAfter("aws_eks_cluster", createTakes)
	defer h.AWS.SetReadyAfter("aws_eks_cluster", 0)
	refusedBefore := len(h.AWS.Refusals())
	want := kindsOf(h, like)
	if len(want) == 0 {
		t.Fatalf("the account holds nothing of %s to compare with", like)
	}
	addClaim(t, h, name, "10.22.0.0/16")
	check.RequestReconcile(t, h)

	// Once AWS is creating the control plane, kill what composes it.
	var creating time.Time
	err := kube.Poll(ctx, settleBound, func() (bool, error) {
		if c := kindsOf(h, name)["eks.aws.upbound.io/Cluster"]; c > 0 {
			creating = time.Now()
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("AWS never started creating %s's control plane: %v", name, err)
	}
	killed := map[string]int{}
	for _, prefix := range []string{"crossplane-", "function-workload-cluster-"} {
		for pod, procs := range h.Pods.Pods("crossplane-system", prefix) {
			if strings.HasPrefix(pod, "crossplane-rbac-manager") {
				continue
			}
			for _, p := range procs {
				if pid := p.PID(); pid != 0 {
					if err := p.Kill(); err != nil {
						t.Fatal(err)
					}
					killed[pod+"/"+p.Name] = pid
				}
			}
		}
	}
	if len(killed) < 2 {
		t.Fatalf("killed %v: want Crossplane's core and the function", killed)
	}
	t.Logf("killed %v %s after AWS began creating the control plane", killed, time.Since(creating).Truncate(time.Millisecond))
	if err := claimComposedOf(ctx, h, name, composeBound); err != nil {
		t.Fatal(err)
	}
	t.Logf("composed %s after the kill", time.Since(creating).Truncate(time.Second))
	// The killed processes run again.
	for pod := range killed {
		n, running := strings.SplitN(pod, "/", 2), false
		for _, p := range h.Pods.Pods("crossplane-system", n[0])[n[0]] {
			running = running || p.PID() != 0
		}
		if !running {
			t.Errorf("%s was not restarted", pod)
		}
	}
	got := kindsOf(h, name)
	var diff []string
	kinds := maps.Clone(want)
	maps.Copy(kinds, got)
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		if want[k] != got[k] {
			diff = append(diff, fmt.Sprintf("%s: %d, want %d", k, got[k], want[k]))
		}
	}
	if len(diff) > 0 {
		t.Errorf("after the restart the account holds for %s, compared with %s:\n%s", name, like, strings.Join(diff, "\n"))
	}
	if refused := h.AWS.Refusals()[refusedBefore:]; len(refused) > 0 {
		t.Errorf("EKS refused calls on the way:\n%s", strings.Join(refused, "\n"))
	}
}

// The second hub's tree lists no claim; the edit refuses a list it cannot
// take the example claim out of.
func TestWithoutExampleClaim(t *testing.T) {
	rel := filepath.Join(filepath.FromSlash(filepath.Dir(claimFile)), "kustomization.yaml")
	tree, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason  string
		list    string
		want    string
		wantErr bool
	}{
		"TreeList": {
			reason: "the tree's list, without the example claim",
			list:   string(tree),
			want: "# One WorkloadCluster claim per spoke (written by `fleet cluster add`,\n" +
				"# checked by `fleet validate`). Deleting a file deletes that spoke, in order.\n" +
				"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n",
		},
		"NotListed": {reason: "a list without the example claim has nothing to take out", list: "resources:\n  - namespace.yaml\n", wantErr: true},
		"NotAList":  {reason: "resources that are not a list cannot be edited", list: "resources: apps-staging.yaml\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			path := filepath.Join(work, rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.list), 0o644); err != nil {
				t.Fatal(err)
			}
			err := withoutExampleClaim(work)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("%s: error %v, want error %v", tc.reason, err, tc.wantErr)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if tc.wantErr {
				want = tc.list
			}
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// waitKeepsItsStart: the composite of a claim whose spoke waits for good
// (name's: not played, so its bootstrap's first remote step never
// applies) shows what it waits for in its Settled condition, and Crossplane
// keeps the condition's lastTransitionTime while the wait stays the same,
// across the reconciles that run it at least every 30 s
// (fnjson.PendingTTL): the function reads that time to requeue a wait of
// fnjson.LongWait as a settled composite. Were the time reset at each
// reconcile, the wait would never be older than 30 s and the spoke would be
// re-applied every 30 s for good.
func waitKeepsItsStart(t *testing.T, h *site.Hub, name string) {
	ctx := context.Background()
	const old = 3 * 30 * time.Second
	var last string
	err := kube.Poll(ctx, old+time.Minute, func() (bool, error) {
		claim, err := h.Cluster.Dynamic.Resource(check.Claims).Namespace(claimNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		xr, _, err := compositeOf(ctx, h, claim)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		st, reason, msg := check.Condition(xr, fnjson.SettledCondition)
		since := check.TransitionTime(xr, fnjson.SettledCondition)
		last = fmt.Sprintf("%s=%s %s: %q since %s (%s ago)", fnjson.SettledCondition, st, reason, msg, since.Format(time.RFC3339), time.Since(since).Round(time.Second))
		return st == "False" && reason == fnjson.ReasonWaiting && strings.HasPrefix(msg, "composed resources not Ready") && time.Since(since) >= old, nil
	})
	if err != nil {
		t.Fatalf("claim %s's composite never showed the same wait for %s: %v; last %s", name, old, err, last)
	}
	t.Logf("claim %s: %s", name, last)
}
