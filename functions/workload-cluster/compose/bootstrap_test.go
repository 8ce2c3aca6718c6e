package compose

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

func bootParams(spoke string) Params {
	return Params{
		Input: Input{HubName: "mgmt", AccountID: "111122223333", Partition: "aws", HubRegion: "eu-west-1"},
		Spoke: spoke,
		Spec:  workloadcluster.Spec{Region: "eu-west-1"},
	}
}

// awsObserved is what AWS reports once the VPC and the cluster exist.
func awsObserved(spoke string) map[string]Object {
	return map[string]Object{
		vpcKey: {"status": map[string]any{"atProvider": map[string]any{"id": "vpc-0abc"}}},
		clusterKey: {"status": map[string]any{"atProvider": map[string]any{
			"arn":      "arn:aws:eks:eu-west-1:111122223333:cluster/mgmt-" + spoke,
			"identity": []any{map[string]any{"oidc": []any{map[string]any{"issuer": "https://oidc.eks.eu-west-1.amazonaws.com/id/ABC"}}}},
		}}},
	}
}

func mustBootstrap(t *testing.T, spoke string, obs map[string]Object) (map[string]Object, []Notice) {
	t.Helper()
	out, notes, err := Bootstrap(bootParams(spoke), BootstrapIn{SystemPath: "manifests/gitops-system", Observed: obs})
	if err != nil {
		t.Fatal(err)
	}
	return out, notes
}

func TestBootstrapWaitsForAWS(t *testing.T) {
	before, _ := mustBootstrap(t, "pay", nil)
	for k := range before {
		if !strings.HasPrefix(k, "usage-") {
			t.Errorf("%s composed before AWS reported the VPC, cluster ARN and issuer", k)
		}
	}
	after, _ := mustBootstrap(t, "pay", awsObserved("pay"))
	if len(after) != 1+len(BootstrapSteps())+len(BootstrapUsages("pay")) {
		t.Fatalf("composed %d objects, want kubeconfig + %d steps + %d usages", len(after), len(BootstrapSteps()), len(BootstrapUsages("pay")))
	}
	sub := field(after["bootstrap-sync"], "spec", "postBuild", "substitute").(Object)
	for _, n := range spokeinfo.BootstrapNames() {
		if v, _ := sub[n].(string); v == "" {
			t.Errorf("substitute %s empty", n)
		}
	}
	if sub[spokeinfo.OIDCIssuer] != "oidc.eks.eu-west-1.amazonaws.com/id/ABC" {
		t.Errorf("issuer %v: want it without https://", sub[spokeinfo.OIDCIssuer])
	}
	// An object already observed keeps its values while the cluster is
	// not observed (e.g. during a provider restart).
	obs := map[string]Object{}
	for k, o := range after {
		obs[k] = o
	}
	again, _ := mustBootstrap(t, "pay", obs)
	if fmt.Sprint(again) != fmt.Sprint(after) {
		t.Error("observed bootstrap objects changed when AWS status was not observed")
	}
}

// The chain: each step depends on the one before and is held by the next.
func TestBootstrapChain(t *testing.T) {
	out, _ := mustBootstrap(t, "pay", awsObserved("pay"))
	steps := BootstrapSteps()
	for i, s := range steps {
		o := out[StepKeyPrefix+s.Part]
		deps, _ := field(o, "spec", "dependsOn").([]any)
		if i == 0 && len(deps) != 0 || i > 0 && (len(deps) != 1 || str(deps[0], "name") != "pay-"+steps[i-1].Part) {
			t.Errorf("%s dependsOn %v", s.Part, deps)
		}
		_, remote := field(o, "spec", "kubeConfig").(Object)
		if remote != s.Remote {
			t.Errorf("%s remote=%v, want %v", s.Part, remote, s.Remote)
		}
	}
}

// teardown simulates deleting every object at once: an object goes in the
// first round in which no Usage whose user still exists holds it (Crossplane
// refuses its deletion until then; replayDeletion retries it). It returns
// each object's round, or an error for objects that are never released.
func teardown(objs map[string]Object) (map[string]int, error) {
	type ref struct{ kind, name string }
	id := func(o any) ref { return ref{str(o, "kind"), str(o, "metadata", "name")} }
	present := map[ref]bool{}
	for _, o := range objs {
		present[id(o)] = true
	}
	var usages []Object
	for _, o := range objs {
		if strings.HasPrefix(str(o, "kind"), "Usage") || str(o, "kind") == "ClusterUsage" {
			usages = append(usages, o)
		}
	}
	round := map[string]int{}
	for r := 0; len(present) > 0; r++ {
		var gone []ref
		for x := range present {
			held := false
			for _, u := range usages {
				of := ref{str(u, "spec", "of", "kind"), str(u, "spec", "of", "resourceRef", "name")}
				by := ref{str(u, "spec", "by", "kind"), str(u, "spec", "by", "resourceRef", "name")}
				if of == x && present[by] {
					held = true
				}
			}
			if !held {
				gone = append(gone, x)
			}
		}
		if len(gone) == 0 {
			return nil, fmt.Errorf("objects never released: %v", present)
		}
		for _, g := range gone {
			delete(present, g)
			round[g.kind+"/"+g.name] = r
		}
	}
	return round, nil
}

// teardownFindings checks the order the README and docs/design.md
// promise: workloads before every other step, the first step after every
// step that calls the spoke when deleted (not Orphan), the kubeconfig, the
// node group and the Flux access after the first step; and that the steps
// go in three rounds (each a Crossplane Usage poll).
func teardownFindings(objs map[string]Object, spoke string) []string {
	// The holds on k9c's objects need them present to be held.
	all := map[string]Object{}
	for k, o := range objs {
		all[k] = o
	}
	all["node-group"] = Object{"kind": "NodeGroup", "metadata": Object{"name": spoke + "-nodes"}}
	all["flux-access"] = Object{"kind": "AccessPolicyAssociation", "metadata": Object{"name": spoke + "-flux"}}
	round, err := teardown(all)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	steps := BootstrapSteps()
	ks := func(part string) string { return "Kustomization/" + spoke + "-" + part }
	// Holds, transitively: whatever by holds goes only after by is gone,
	// however long each deletion takes.
	holds := map[string][]string{}
	for _, o := range all {
		if k := str(o, "kind"); k == "Usage" || k == "ClusterUsage" {
			by := str(o, "spec", "by", "kind") + "/" + str(o, "spec", "by", "resourceRef", "name")
			holds[by] = append(holds[by], str(o, "spec", "of", "kind")+"/"+str(o, "spec", "of", "resourceRef", "name"))
		}
	}
	var held func(of, by string, seen map[string]bool) bool
	held = func(of, by string, seen map[string]bool) bool {
		if seen[by] {
			return false
		}
		seen[by] = true
		for _, x := range holds[by] {
			if x == of || held(of, x, seen) {
				return true
			}
		}
		return false
	}
	first, last := steps[0], steps[len(steps)-1]
	rounds := map[int]bool{}
	for _, s := range steps {
		rounds[round[ks(s.Part)]] = true
		if s.Part != last.Part && !held(ks(s.Part), ks(last.Part), map[string]bool{}) {
			out = append(out, fmt.Sprintf("%s may go before %s", s.Part, last.Part))
		}
		if s.Part != first.Part && s.Part != last.Part && s.DeletionPolicy != deletionOrphan && !held(ks(first.Part), ks(s.Part), map[string]bool{}) {
			out = append(out, fmt.Sprintf("%s may go before %s", first.Part, s.Part))
		}
	}
	if len(rounds) > 3 {
		out = append(out, fmt.Sprintf("the steps go in %d rounds, each a 30 s Usage poll; want 3", len(rounds)))
	}
	for _, x := range []string{"ConfigMap/" + spoke + "-kubeconfig", "NodeGroup/" + spoke + "-nodes", "AccessPolicyAssociation/" + spoke + "-flux"} {
		if !held(x, ks(first.Part), map[string]bool{}) {
			out = append(out, fmt.Sprintf("%s may go before %s", x, first.Part))
		}
	}
	return out
}

func TestTeardownOrder(t *testing.T) {
	out, _ := mustBootstrap(t, "pay", awsObserved("pay"))
	if f := teardownFindings(out, "pay"); len(f) > 0 {
		t.Fatalf("teardown order: %v", f)
	}
	// Planted: remove each Usage in turn; the order must break every time.
	var keys []string
	for k := range out {
		if strings.HasPrefix(k, "usage-") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	// Every step but workloads held by it; the first by the other steps
	// that are not Orphan; three held by the first.
	want := len(BootstrapSteps()) - 1 - 1 + 3
	for _, s := range BootstrapSteps()[1 : len(BootstrapSteps())-1] {
		if s.DeletionPolicy != deletionOrphan {
			want++
		}
	}
	if len(keys) != want {
		t.Fatalf("%d usages, want %d", len(keys), want)
	}
	for _, k := range keys {
		planted := map[string]Object{}
		for kk, o := range out {
			if kk != k {
				planted[kk] = o
			}
		}
		if f := teardownFindings(planted, "pay"); len(f) == 0 {
			t.Errorf("removing %s left the teardown order intact: the check cannot see it", k)
		}
	}
}

// Every hold is one Crossplane v2.2.1 can enforce: a namespaced Usage whose
// user is in its namespace and whose object is in its namespace or, when
// cluster-scoped, named with an explicit namespace "" (finder.go indexes
// Deref(of.namespace, usage namespace)); a ClusterUsage between
// cluster-scoped objects. A ClusterUsage cannot name a namespaced user.
func TestUsagesSupported(t *testing.T) {
	out, _ := mustBootstrap(t, "pay", awsObserved("pay"))
	namespaced := map[string]bool{"Kustomization": true, "ConfigMap": true}
	check := func(u Object) error {
		if str(u, "kind") != "Usage" || str(u, "metadata", "namespace") != BootstrapNamespace {
			return fmt.Errorf("%s: want a Usage in %s", str(u, "metadata", "name"), BootstrapNamespace)
		}
		if !namespaced[str(u, "spec", "by", "kind")] {
			return fmt.Errorf("%s: user %s is cluster-scoped", str(u, "metadata", "name"), str(u, "spec", "by", "kind"))
		}
		ns, set := field(u, "spec", "of", "resourceRef").(Object)["namespace"]
		want := ""
		if namespaced[str(u, "spec", "of", "kind")] {
			want = BootstrapNamespace
		}
		if !set || ns != want {
			return fmt.Errorf("%s: of %s namespace %v (set %v), want %q", str(u, "metadata", "name"), str(u, "spec", "of", "kind"), ns, set, want)
		}
		return nil
	}
	for k, o := range out {
		if strings.HasPrefix(k, "usage-") {
			if err := check(o); err != nil {
				t.Error(err)
			}
			if field(o, "spec", "replayDeletion") != true {
				t.Errorf("%s: replayDeletion not set", k)
			}
		}
	}
	// Planted: a cluster-scoped of without the explicit empty namespace.
	bad := BootstrapUsages("pay")
	u := bootstrapUsages("pay", nil)[bad[len(bad)-1].Key]
	delete(u["spec"].(Object)["of"].(Object)["resourceRef"].(Object), "namespace")
	if check(u) == nil {
		t.Error("planted cluster-scoped of without namespace: not caught")
	}
}

// healthChecked models kustomize-controller v1.9.3 checkHealth: with wait
// the objects it applied, else spec.healthChecks; none means Ready.
func healthChecked(ks Object, applied []string) []string {
	if field(ks, "spec", "wait") == true {
		return applied
	}
	var out []string
	hc, _ := field(ks, "spec", "healthChecks").([]any)
	for _, h := range hc {
		out = append(out, str(h, "namespace")+"_"+str(h, "name")+"_"+str(h, "kind"))
	}
	return out
}

// A spoke whose deploy-key folder is empty must not get past
// <spoke>-deploy-key, and the XR says to run fleet cluster add.
func TestDeployKeyFailsClosed(t *testing.T) {
	out, _ := mustBootstrap(t, "apps-staging", awsObserved("apps-staging"))
	dk := out[StepKeyPrefix+DeployKeyPart]
	checked := healthChecked(dk, nil)
	if !slices.Contains(checked, "flux-system_flux-system_Secret") {
		t.Errorf("empty deploy-key folder: checks %v, want Secret flux-system/flux-system on the spoke", checked)
	}
	// Planted: the Composition's spec (wait: true, no healthChecks) checks nothing.
	old := Object{"spec": Object{"wait": true}}
	if len(healthChecked(old, nil)) != 0 {
		t.Fatal("model broken")
	}

	notReady := func(inv ...string) map[string]Object {
		obs := awsObserved("apps-staging")
		var entries []any
		for _, id := range inv {
			entries = append(entries, map[string]any{"id": id, "v": "v1alpha1"})
		}
		obs[StepKeyPrefix+DeployKeyPart] = Object{"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "HealthCheckFailed"}},
			"inventory":  map[string]any{"entries": entries}}}
		return obs
	}
	cannotDecrypt := notReady(sealedSecretInventoryID)
	cannotDecrypt[StepKeyPrefix+DeployKeyPart]["status"].(map[string]any)["conditions"] = []any{map[string]any{
		"type": "Ready", "status": "False", "reason": "HealthCheckFailed",
		// kustomize-controller v1.9.3's message when the failed expression matches.
		"message": "health check failed after 5.01s: failed early due to stalled resources: [SealedSecret/flux-system/flux-system status: 'Failed']"}}
	ready := awsObserved("apps-staging")
	ready[StepKeyPrefix+DeployKeyPart] = Object{"status": map[string]any{
		"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	for _, tc := range []struct {
		name   string
		obs    map[string]Object
		reason string // "" no condition
	}{
		{"not observed", awsObserved("apps-staging"), ""},
		{"empty folder", notReady(), "DeployKeyMissing"},
		{"other object only", notReady("flux-system_other_bitnami.com_SealedSecret"), "DeployKeyMissing"},
		{"key applied, unsealing", notReady(sealedSecretInventoryID), "Unsealing"},
		{"key sealed for another certificate", cannotDecrypt, "CannotDecrypt"},
		{"ready", ready, "Available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, notes := mustBootstrap(t, "apps-staging", tc.obs)
			if tc.reason == "" {
				if len(notes) != 0 {
					t.Fatalf("notices %v, want none", notes)
				}
				return
			}
			if len(notes) != 1 || notes[0].Type != DeployKeyCondition || notes[0].Reason != tc.reason {
				t.Fatalf("notices %+v, want one %s reason %s", notes, DeployKeyCondition, tc.reason)
			}
			if notes[0].Status != (tc.reason == "Available") || notes[0].Warn != (tc.reason == "DeployKeyMissing" || tc.reason == "CannotDecrypt") {
				t.Errorf("status %v warn %v for reason %s", notes[0].Status, notes[0].Warn, tc.reason)
			}
			if tc.reason == "DeployKeyMissing" && !strings.Contains(notes[0].Message, "fleet cluster add apps-staging") {
				t.Errorf("notice %q does not name `fleet cluster add apps-staging`", notes[0].Message)
			}
		})
	}
}

// The steps an operator suspends when the spoke's API is gone are
// exactly the composed Kustomizations whose finalizer prunes through the
// spoke (kubeConfig set, deletionPolicy not Orphan).
func TestBreakGlassParts(t *testing.T) {
	out, _ := mustBootstrap(t, "pay", awsObserved("pay"))
	var want []string
	for _, o := range out {
		if str(o, "kind") != "Kustomization" {
			continue
		}
		if _, remote := field(o, "spec", "kubeConfig").(Object); remote && str(o, "spec", "deletionPolicy") != deletionOrphan && field(o, "spec", "prune") == true {
			want = append(want, strings.TrimPrefix(str(o, "metadata", "name"), "pay-"))
		}
	}
	sort.Strings(want)
	got := BreakGlassParts()
	sort.Strings(got)
	if !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("break-glass parts %v, composed remote pruning steps %v", got, want)
	}
}

func TestBootstrapReady(t *testing.T) {
	ks := func(applied, status, reason string) Object {
		st := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status, "reason": reason}}}
		if applied != "" {
			st["lastAppliedRevision"] = applied
		}
		return Object{"kind": "Kustomization", "status": st}
	}
	for name, tc := range map[string]struct {
		o      Object
		want   bool
		reason string
	}{
		"nothing observed":            {nil, false, "not there yet"},
		"kubeconfig":                  {Object{"kind": "ConfigMap"}, true, "a ConfigMap is ready once it exists"},
		"no status":                   {Object{"kind": "Kustomization"}, false, "never reconciled"},
		"ready":                       {ks("main@sha1:1", "True", "ReconciliationSucceeded"), true, "Ready True"},
		"first reconcile":             {ks("", "Unknown", "Progressing"), false, "nothing applied yet: not ready until the first apply succeeds"},
		"reconciling again":           {ks("main@sha1:1", "Unknown", "Progressing"), true, "every reconcile marks Ready Unknown: what it applied is in place"},
		"dependency catching up":      {ks("main@sha1:1", "False", "DependencyNotReady"), true, "a new commit walks the chain: what it applied is in place"},
		"first wait on a dependency":  {ks("", "False", "DependencyNotReady"), false, "never applied"},
		"health check canceled":       {ks("main@sha1:1", "False", "HealthCheckCanceled"), true, "a new revision ended its health check: what it applied is in place"},
		"first health check canceled": {ks("", "False", "HealthCheckCanceled"), false, "never applied"},
		"own apply failed":            {ks("main@sha1:1", "False", "ReconciliationFailed"), false, "its own failure is a fault"},
		"health check failed":         {ks("main@sha1:1", "False", "HealthCheckFailed"), false, "its own failure is a fault"},
		"usage not ready":             {Object{"kind": "Usage", "status": map[string]any{"lastAppliedRevision": "x", "conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "DependencyNotReady"}}}}, false, "stickiness is a Kustomization's only"},
	} {
		if got := BootstrapReady(tc.o); got != tc.want {
			t.Errorf("%s (%s): ready %v, want %v", name, tc.reason, got, tc.want)
		}
	}
}

func TestBootstrapRefusesMissingInput(t *testing.T) {
	if _, _, err := Bootstrap(bootParams("pay"), BootstrapIn{}); err == nil || !strings.Contains(err.Error(), "gitopsSystemPath") {
		t.Errorf("err %v, want it to name gitopsSystemPath", err)
	}
	p := bootParams("")
	if _, _, err := Bootstrap(p, BootstrapIn{SystemPath: "x"}); err == nil {
		t.Error("no spoke: want an error")
	}
}

// mixedScopeChecked are the Crossplane releases whose Usage code was read
// for the two holds of cluster-scoped objects (node group, Flux access) by
// the namespaced first step: v2.2.1 apis/protection/v1beta1
// NamespacedResourceRef ("suitable for cluster scoped resources"),
// internal/protection/usage/finder.go:77 and
// internal/controller/protection/usage/reconciler.go:309 (both
// Deref(of.namespace, usage namespace)); v2.4.0 the same
// (internal/protection/usage/finder.go:82 and
// internal/controller/protection/usage/reconciler.go:311), and the
// real-controller suite's teardown requires the node group and its add-ons
// to go only after the first step (test/e2e teardown_test.go).
// crossplane/crossplane#7640 (open) proposes to reject this shape; re-read
// the code before adding a release.
var mixedScopeChecked = []string{"2.2.1", "2.4.0"}

func TestCrossplaneSupportsMixedScopeUsages(t *testing.T) {
	if !slices.Contains(mixedScopeChecked, versions.Crossplane) {
		t.Errorf("Crossplane %s: the namespaced Usages holding %s-NodeGroup and the Flux AccessPolicyAssociation were checked only for %v; "+
			"re-read the Usage finder/reconciler (crossplane#7640) and extend mixedScopeChecked", versions.Crossplane, nodeGroupPart, mixedScopeChecked)
	}
	var mixed int
	for _, u := range BootstrapUsages("pay") {
		if u.Of.ClusterScoped {
			mixed++
		}
	}
	if mixed != 2 {
		t.Errorf("%d namespaced Usages hold cluster-scoped objects; the check above covers node group and Flux access only", mixed)
	}
}

// The bound after break-glass: with every step's finalizer modelled
// (kustomize-controller: remote pruning steps are suspended, Orphan ones
// skip, hub-side WaitForTermination ones wait their timeout) and each step
// going once the composed Usages holding it are gone, the teardown's
// critical path is the longest chain of hub-side waits.
func TestUnreachableTeardownBound(t *testing.T) {
	got, err := UnreachableTeardownBound()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := mustBootstrap(t, "pay", awsObserved("pay"))
	wait := map[string]time.Duration{}
	for _, o := range out {
		if str(o, "kind") != "Kustomization" {
			continue
		}
		name := str(o, "metadata", "name")
		wait[name] = 0
		if _, remote := field(o, "spec", "kubeConfig").(Object); remote || str(o, "spec", "deletionPolicy") == deletionOrphan {
			continue // suspended by break-glass, or Orphan: no wait
		}
		d, err := time.ParseDuration(str(o, "spec", "timeout"))
		if err != nil {
			t.Fatal(err)
		}
		wait[name] = d
	}
	holders := map[string][]string{}
	for _, o := range out {
		if str(o, "kind") == "Usage" && str(o, "spec", "of", "kind") == "Kustomization" {
			of := str(o, "spec", "of", "resourceRef", "name")
			holders[of] = append(holders[of], str(o, "spec", "by", "resourceRef", "name"))
		}
	}
	// Relax until stable: a step ends its wait after every holder ended.
	end := map[string]time.Duration{}
	for range len(wait) + 1 {
		for name, w := range wait {
			var start time.Duration
			for _, by := range holders[name] {
				start = max(start, end[by])
			}
			end[name] = start + w
		}
	}
	var path time.Duration
	for _, d := range end {
		path = max(path, d)
	}
	if got != path || got == 0 {
		t.Errorf("bound %s, the composed holds' longest chain of hub-side waits is %s", got, path)
	}
	if got > 90*time.Minute {
		t.Errorf("bound %s exceeds workload-clusters' 90m teardown timeout", got)
	}
}
