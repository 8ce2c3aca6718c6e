package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// AWS's create times the lead-time scenario plays, scaled down by
// leadTimeScale: an EKS control plane takes about 10 minutes and a managed
// node group about 3 (the figures the issue gives; AWS publishes no exact
// ones). Everything else the spoke is made of is created in seconds by
// AWS, or in parallel with the control plane (NAT gateways), and is
// created at once here.
var awsCreateTimes = map[string]time.Duration{
	"aws_eks_cluster":    10 * time.Minute,
	"aws_eks_node_group": 3 * time.Minute,
}

const leadTimeScale = 30

// nodeGroupTaint keeps the played spoke's node from taking pods while the
// stand-in creates its node group: on AWS no node joins the cluster before
// then, so nothing the bootstrap installs runs earlier.
const nodeGroupTaint = "eksfleet.io/e2e-node-group-creating"

// leadTime merges the example claim into a hub at rest (it came up
// without it: withoutExampleClaim) as `fleet cluster add`'s pull request
// does: the claim listed and its deploy key sealed for this environment,
// in one commit. The stand-in's create times are AWS's scaled down, and
// the played spoke's node takes no pod until the stand-in reports the
// node group ACTIVE (holdNodes). It measures, in one run, merge to the
// spoke's own Flux fetching the repository with its unsealed key (its
// GitRepository Ready: from there the spoke runs by itself), step by step,
// and splits it into AWS's create times and what orchestration adds (Flux,
// Crossplane, the function, the provider reacting, the bootstrap); then on
// to the spoke's tools Ready (the sync step). EKS must refuse nothing on
// the way, and no pod may be scheduled on the spoke before the node group
// is ACTIVE.
func leadTime(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	eks := playedSpoke(t, h)
	for tf, d := range awsCreateTimes {
		h.AWS.SetReadyAfter(tf, d/leadTimeScale)
	}
	defer func() {
		for tf := range awsCreateTimes {
			h.AWS.SetReadyAfter(tf, 0)
		}
	}()
	refusedBefore := len(h.AWS.Refusals())
	env, err := h.HubEnv()
	if err != nil {
		t.Fatal(err)
	}
	eksName := spokeiam.ClusterName(env, claimName)
	holdCtx, cancelHold := context.WithCancel(ctx)
	defer cancelHold()
	joined := holdNodes(holdCtx, t, h, eks, eksName)

	writeResealedKey(t, h)
	listClaim(t, h, claimName)
	if err := h.Repo.Commit("add " + claimName); err != nil {
		t.Fatal(err)
	}
	merged := time.Now()
	clock := startStepClock(holdCtx, h)
	check.RequestReconcile(t, h)

	last, err := check.WaitCondition(ctx, eks.Cluster, check.GitRepositories, "flux-system", "flux-system", "Ready", spokeBound, check.IsTrue)
	if err != nil {
		_, s, _ := stepsReady(ctx, h, claimName, "")
		t.Fatalf("the spoke's own GitRepository is not Ready: %v (last: %s)\nhub steps:\n%s", err, last, s)
	}
	sourceReady := time.Now()
	var held heldNodes
	select {
	case held = <-joined:
	case <-time.After(time.Minute):
		held.err = errors.New("the taint is still on a minute later")
	}
	if held.err != nil {
		t.Fatalf("the spoke's source is Ready, yet its node was never let take pods: %v", held.err)
	}
	nodesJoined := held.at

	one := func(kind string, of func(aws.Resource) bool) aws.Resource {
		t.Helper()
		found := h.Accounts[eks.Account].Find(kind, of)
		if len(found) != 1 {
			t.Fatalf("%d %s of %s in the account", len(found), kind, eksName)
		}
		return found[0]
	}
	// Everything of the spoke is in its account (the claim's
	// spec.account, or the hub's), nothing in another.
	inAccountOnly(t, h, claimName+"-", eks.Account)
	cluster := one("eks.aws.upbound.io/Cluster", func(r aws.Resource) bool { return r.Name == eksName })
	nodes := one("eks.aws.upbound.io/NodeGroup", nodeGroupOf(eksName))
	// When Flux applied the claim (the API server's creation time, to
	// the second).
	c, err := h.Cluster.Dynamic.Resource(check.Claims).Namespace(claimNS).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applied := c.GetCreationTimestamp().Time
	steps := []struct {
		what     string
		from, to time.Time
		aws      bool
	}{
		{what: "merge to the claim on the hub (Flux)", from: merged, to: applied},
		{what: "claim to the control plane's create call (Crossplane, the function; the log group and roles first)", from: applied, to: cluster.Created},
		{what: "the control plane created (AWS)", from: cluster.Created, to: cluster.ReadyAt, aws: true},
		{what: "control plane active to the node group's create call", from: cluster.ReadyAt, to: nodes.Created},
		{what: "the node group created (AWS)", from: nodes.Created, to: nodes.ReadyAt, aws: true},
		{what: "node group active to the spoke's own source Ready (the bootstrap's steps)", from: nodes.ReadyAt, to: sourceReady},
	}
	var onAWS, awsPart, orchestration time.Duration
	for _, d := range awsCreateTimes {
		onAWS += d
	}
	var report []string
	for _, s := range steps {
		if s.aws {
			awsPart += s.to.Sub(s.from)
		} else {
			orchestration += s.to.Sub(s.from)
		}
		report = append(report, fmt.Sprintf("  %s: %s", s.what, s.to.Sub(s.from).Round(100*time.Millisecond)))
	}
	t.Logf("merge to the spoke's own source Ready: %s, of which AWS's create times %s (1/%d of %s) and orchestration %s; on AWS: about %s\n%s",
		sourceReady.Sub(merged).Round(100*time.Millisecond), awsPart.Round(100*time.Millisecond), leadTimeScale, onAWS,
		orchestration.Round(100*time.Millisecond), (onAWS + orchestration).Round(time.Second), strings.Join(report, "\n"))
	t.Logf("the node took pods %s after the node group's create call; bootstrap steps first Ready, after the EKS cluster was ACTIVE:\n%s",
		nodesJoined.Sub(nodes.Created).Round(100*time.Millisecond), clock.since(t, h, eksName))

	// No pod on the spoke was scheduled before the node group was ACTIVE
	// (the API server keeps the time to the second).
	pods, err := eks.Cluster.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Error("no pod on the spoke, yet its source is Ready")
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && c.LastTransitionTime.Time.Before(nodesJoined.Truncate(time.Second)) {
				t.Errorf("pod %s/%s was scheduled at %s, before the node group was ACTIVE (%s)", p.Namespace, p.Name,
					c.LastTransitionTime.Format(time.Stamp), nodesJoined.Format(time.StampMilli))
			}
		}
	}
	if refused := h.AWS.Refusals()[refusedBefore:]; len(refused) > 0 {
		var log []string
		for _, l := range h.Accounts[eks.Account].Log() {
			if strings.Contains(l, claimName) {
				log = append(log, l)
			}
		}
		t.Errorf("EKS refused calls on the way:\n%s\nthe account's log of %s:\n%s", strings.Join(refused, "\n"), claimName, strings.Join(log, "\n"))
	}

	// Then the spoke's tools: the sync step is Ready once spoke-tools is
	// on the spoke (its own Crossplane, providers, load balancer
	// controller).
	var state string
	err = kube.Poll(ctx, spokeBound, func() (bool, error) {
		ok, s, err := stepsReady(ctx, h, claimName, "sync")
		state = s
		return ok, err
	})
	if err != nil {
		t.Fatalf("bootstrap steps up to sync: %v\n%s\nthe spoke:\n%s", err, state, fluxState(ctx, eks.Cluster))
	}
	var toolsReady time.Time
	if err := kube.Poll(ctx, observedBound, func() (bool, error) {
		at, ok := clock.first("sync")
		toolsReady = at
		return ok, nil
	}); err != nil {
		t.Fatalf("the step clock never saw the sync step Ready: %v", err)
	}
	t.Logf("merge to the spoke's tools Ready (the sync step): %s", toolsReady.Sub(merged).Round(100*time.Millisecond))
}

// holdNodes taints every node of eks NoSchedule with nodeGroupTaint, and
// takes the taint off once the stand-in account holds the node group of
// the EKS cluster eksName and reports it ACTIVE; the channel then gets the
// time, or why the taint could not be taken off. It gives up, sending
// nothing, when ctx ends.
func holdNodes(ctx context.Context, t *testing.T, h *site.Hub, eks *site.EKS, eksName string) <-chan heldNodes {
	t.Helper()
	nodes, err := eks.Cluster.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the spoke's nodes: %v", err)
	}
	if len(nodes.Items) == 0 {
		t.Fatal("the spoke has no node to hold")
	}
	patch := func(taints []corev1.Taint) error {
		list, err := json.Marshal(taints)
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			b := fmt.Appendf(nil, `{"spec":{"taints":%s}}`, list)
			if _, err := eks.Cluster.Kube.CoreV1().Nodes().Patch(context.Background(), n.Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		return nil
	}
	if err := patch([]corev1.Taint{{Key: nodeGroupTaint, Effect: corev1.TaintEffectNoSchedule}}); err != nil {
		t.Fatal(err)
	}
	out := make(chan heldNodes, 1)
	go func() {
		var readyAt time.Time
		err := kube.Poll(ctx, spokeBound, func() (bool, error) {
			found := h.Accounts[eks.Account].Find("eks.aws.upbound.io/NodeGroup", nodeGroupOf(eksName))
			if len(found) == 1 {
				readyAt = found[0].ReadyAt
			}
			return len(found) == 1, nil
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			out <- heldNodes{err: fmt.Errorf("no node group of %s in the account: %w", eksName, err)}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(readyAt)):
		}
		if err := patch(nil); err != nil {
			out <- heldNodes{err: fmt.Errorf("untaint: %w", err)}
			return
		}
		out <- heldNodes{at: time.Now()}
	}()
	return out
}

// heldNodes is when holdNodes let the nodes take pods again, or why it
// could not.
type heldNodes struct {
	at  time.Time
	err error
}

// nodeGroupOf selects the node groups of the EKS cluster eksName.
func nodeGroupOf(eksName string) func(aws.Resource) bool {
	return func(r aws.Resource) bool { return r.Attrs["clusterName"] == eksName }
}
