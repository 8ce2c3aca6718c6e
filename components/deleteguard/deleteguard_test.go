package deleteguard

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/engine"
)

type comp struct{ pulumi.ResourceState }

// kubeconfig names a cluster nobody listens for.
const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`

// refusal is what the guard's check answers, set by the test between
// operations.
type refusal struct {
	mu  sync.Mutex
	err error
	n   int
}

func (r *refusal) set(err error) { r.mu.Lock(); defer r.mu.Unlock(); r.err = err }
func (r *refusal) check(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return r.err
}
func (r *refusal) calls() int { r.mu.Lock(); defer r.mu.Unlock(); return r.n }

// names are the stack's resources left in its state, by name.
func names(t *testing.T, s *engine.Stack) []string {
	t.Helper()
	dep, err := s.Export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var d apitype.DeploymentV3
	if err := json.Unmarshal(dep.Deployment, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range d.Resources {
		if r.Type == "pulumi:pulumi:Stack" {
			continue
		}
		out = append(out, r.URN.Name())
	}
	slices.Sort(out)
	return out
}

// On the real engine (the pinned Pulumi CLI, an inline program, a local
// backend): a guard standing before two resources.
//   - `pulumi destroy` without --run-program is refused by the engine,
//     naming the hook, and deletes nothing;
//   - with it, while the check refuses, the destroy fails with the
//     check's message and deletes nothing: not the guard, not what it
//     guards;
//   - once the check passes, the destroy deletes the guard first, then
//     the rest.
func TestTheEngineKeepsWhatTheGuardRefusesToDelete(t *testing.T) {
	ctx := context.Background()
	e, err := engine.New(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := &refusal{}
	s, err := e.Stack(ctx, "deleteguard", "test", func(ctx *pulumi.Context) error {
		acct := &comp{}
		if err := ctx.RegisterComponentResource("test:index:Account", "acct", acct); err != nil {
			return err
		}
		// The guarded are custom resources, as a SpokeAccount's are (a
		// dependency on a component stands for its custom children): two
		// Kubernetes provider instances, the one provider built here,
		// which reach no cluster while nothing uses them.
		role, err := kubernetes.NewProvider(ctx, "role", &kubernetes.ProviderArgs{Kubeconfig: pulumi.String(kubeconfig)}, pulumi.Parent(acct))
		if err != nil {
			return err
		}
		policy, err := kubernetes.NewProvider(ctx, "policy", &kubernetes.ProviderArgs{Kubeconfig: pulumi.String(kubeconfig)}, pulumi.Parent(acct), pulumi.DependsOn([]pulumi.Resource{role}))
		if err != nil {
			return err
		}
		_, err = New(ctx, "guard", Args{Guarded: []pulumi.Resource{role, policy}, Check: ref.check}, pulumi.Parent(acct))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Up(ctx); err != nil {
		t.Fatal(err)
	}
	all := []string{"acct", "guard", "policy", "role"}
	if got := names(t, s); !slices.Equal(got, all) {
		t.Fatalf("after up: %v, want %v", got, all)
	}

	_, err = s.Destroy(ctx)
	if err == nil || !strings.Contains(err.Error(), "--run-program") || !strings.Contains(err.Error(), HookName("guard")) {
		t.Errorf("destroy without --run-program: %v, want the engine's refusal naming %s", err, HookName("guard"))
	}
	if got := names(t, s); !slices.Equal(got, all) {
		t.Errorf("after the refused destroy: %v, want %v", got, all)
	}

	ref.set(errors.New("account 222233334444 still holds 2 resource(s) of hub mgmt's spokes"))
	_, err = s.Destroy(ctx, optdestroy.RunProgram(true))
	if err == nil || !strings.Contains(err.Error(), "account 222233334444 still holds 2 resource(s) of hub mgmt's spokes") {
		t.Errorf("destroy while the check refuses: %v, want the check's message", err)
	}
	if got := names(t, s); !slices.Equal(got, all) {
		t.Errorf("after the guarded destroy: %v, want %v", got, all)
	}
	if ref.calls() == 0 {
		t.Error("the check never ran")
	}

	ref.set(nil)
	res, err := s.Destroy(ctx, optdestroy.RunProgram(true))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, s); len(got) != 0 {
		t.Errorf("after destroy: %v left", got)
	}
	var order []string
	for _, st := range res.Steps {
		if st.Op == apitype.OpDelete && st.Type != "pulumi:pulumi:Stack" {
			order = append(order, st.URN[strings.LastIndex(st.URN, "::")+2:])
		}
	}
	if len(order) != 4 || order[0] != "guard" {
		t.Errorf("deletes %v, want the guard's first and four in all", order)
	}
}
