// Package fleetstatus reads the live state of the fleet from the hub: every
// WorkloadCluster claim with its conditions, the Flux Kustomizations that
// bootstrap each spoke, and whether the hub's kustomize-controller has
// workers enough for them.
package fleetstatus

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fluxcontrollers"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

// Resources read.
var (
	ClaimGVR         = schema.GroupVersionResource{Group: workloadcluster.Group, Version: workloadcluster.Version, Resource: "workloadclusters"}
	KustomizationGVR = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	DeploymentGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// FluxNamespace is where the hub's Kustomizations live.
const FluxNamespace = "flux-system"

// Cluster is one claim's row. Account is its spec.account, "hub" for the
// hub's own.
type Cluster struct {
	Name, Ready, Synced, Version, Account, Region, Age string
	Bootstrap                                          []Kustomization
}

// HubAccount is the Account of a spoke in the hub's account.
const HubAccount = "hub"

// Kustomization is one bootstrap Kustomization's row.
type Kustomization struct {
	Name, Ready, Message, Age string
	// Settled is the readiness the composition function gives the step
	// (compose.BootstrapReady): a step that applied a revision and is
	// reconciling again, or waiting for a dependency to apply a new one,
	// is settled though its Ready condition is not True.
	Settled bool
}

// Status is the fleet as the hub sees it.
type Status struct {
	Hub      []Kustomization // the hub's root flux-system Kustomization
	Clusters []Cluster
	// HubSteps counts the hub's own Kustomizations (flux-system's that
	// bootstrap no spoke).
	HubSteps int
	// Workers is the hub's kustomize-controller --concurrent, 0 when it
	// could not be read (WorkersErr says why).
	Workers    int
	WorkersErr error
}

// Read lists claims and Kustomizations. now stamps ages.
func Read(ctx context.Context, c dynamic.Interface, now time.Time) (*Status, error) {
	claims, err := c.Resource(ClaimGVR).Namespace(workloadcluster.ClaimNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing %s claims in %s: %w", workloadcluster.ClaimKind, workloadcluster.ClaimNamespace, err)
	}
	ks, err := c.Resource(KustomizationGVR).Namespace(FluxNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Flux Kustomizations in %s: %w", FluxNamespace, err)
	}
	st := &Status{}
	items := claims.Items
	sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
	kitems := ks.Items
	sort.Slice(kitems, func(i, j int) bool { return kitems[i].GetName() < kitems[j].GetName() })
	for i := range kitems {
		if kitems[i].GetName() == "flux-system" {
			st.Hub = append(st.Hub, kust(&kitems[i], now))
		}
	}
	for i := range items {
		u := &items[i]
		name := u.GetName()
		region, _, _ := unstructured.NestedString(u.Object, "spec", "region")
		account, _, _ := unstructured.NestedString(u.Object, "spec", "account")
		if account == "" {
			account = HubAccount
		}
		version, _, _ := unstructured.NestedString(u.Object, "spec", "kubernetesVersion")
		ready, _ := condition(u, "Ready")
		synced, _ := condition(u, "Synced")
		cl := Cluster{Name: name, Ready: ready, Synced: synced, Version: version, Account: account, Region: region, Age: age(u, now)}
		for j := range kitems {
			if strings.HasPrefix(kitems[j].GetName(), name+"-") {
				cl.Bootstrap = append(cl.Bootstrap, kust(&kitems[j], now))
			}
		}
		st.Clusters = append(st.Clusters, cl)
	}
	for i := range kitems {
		spoke := slices.ContainsFunc(items, func(c unstructured.Unstructured) bool {
			return strings.HasPrefix(kitems[i].GetName(), c.GetName()+"-")
		})
		if !spoke {
			st.HubSteps++
		}
	}
	st.Workers, st.WorkersErr = workers(ctx, c)
	return st, nil
}

// workers reads the hub's kustomize-controller Deployment for its
// --concurrent (the last one given wins, as with any flag: the FluxInstance
// appends the hub stack's fluxConcurrency after the operator's profile).
func workers(ctx context.Context, c dynamic.Interface) (int, error) {
	d, err := c.Resource(DeploymentGVR).Namespace(FluxNamespace).Get(ctx, fluxcontrollers.KustomizeController, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, ct := range containers {
		m, _ := ct.(map[string]any)
		if m["name"] != fluxcontrollers.Container {
			continue
		}
		args, _, _ := unstructured.NestedStringSlice(m, "args")
		return concurrent(args)
	}
	return 0, fmt.Errorf("deployment %s/%s has no %s container", FluxNamespace, fluxcontrollers.KustomizeController, fluxcontrollers.Container)
}

// concurrent is the worker count args give kustomize-controller.
func concurrent(args []string) (int, error) {
	n, v := fluxcontrollers.KustomizeControllerWorkers, ""
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, fluxcontrollers.ConcurrentFlag+"="):
			v = strings.TrimPrefix(a, fluxcontrollers.ConcurrentFlag+"=")
		case a == fluxcontrollers.ConcurrentFlag && i+1 < len(args):
			v = args[i+1]
		default:
			continue
		}
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			return 0, fmt.Errorf("%s %s %q: not a worker count", fluxcontrollers.KustomizeController, fluxcontrollers.ConcurrentFlag, v)
		}
	}
	return n, nil
}

func kust(u *unstructured.Unstructured, now time.Time) Kustomization {
	r, msg := condition(u, "Ready")
	return Kustomization{Name: u.GetName(), Ready: r, Message: msg, Age: age(u, now), Settled: compose.BootstrapReady(u.Object)}
}

// condition returns a status condition's status ("Unknown" when absent)
// and message.
func condition(u *unstructured.Unstructured, typ string) (string, string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		s, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		return s, msg
	}
	return "Unknown", ""
}

func age(u *unstructured.Unstructured, now time.Time) string {
	ts := u.GetCreationTimestamp()
	if ts.IsZero() {
		return "-"
	}
	d := now.Sub(ts.Time)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// Healthy reports whether every claim is Ready and Synced and every
// bootstrap Kustomization settled (Kustomization.Settled): a reconcile in
// progress or a commit walking the chain is not a fault.
func (s *Status) Healthy() bool {
	for _, c := range s.Clusters {
		if c.Ready != "True" || c.Synced != "True" {
			return false
		}
		for _, k := range c.Bootstrap {
			if !k.Settled {
				return false
			}
		}
	}
	return true
}

// Print writes the two tables.
func (s *Status) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tREADY\tSYNCED\tVERSION\tACCOUNT\tREGION\tAGE")
	for _, c := range s.Clusters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Ready, c.Synced, c.Version, c.Account, c.Region, c.Age)
	}
	if len(s.Clusters) == 0 {
		fmt.Fprintln(tw, "(no WorkloadCluster claims)\t\t\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tKUSTOMIZATION\tREADY\tAGE\tMESSAGE")
	for _, k := range s.Hub {
		fmt.Fprintf(tw, "(hub)\t%s\t%s\t%s\t%s\n", k.Name, k.Ready, k.Age, oneLine(k.Message))
	}
	for _, c := range s.Clusters {
		if len(c.Bootstrap) == 0 {
			fmt.Fprintf(tw, "%s\t(none yet)\t-\t-\t\n", c.Name)
		}
		for _, k := range c.Bootstrap {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, k.Name, k.Ready, k.Age, oneLine(k.Message))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	need := len(s.Clusters) + s.HubSteps
	switch {
	case s.WorkersErr != nil:
		fmt.Fprintf(w, "\n%s's workers not read (%v); it needs at least one per spoke plus one per hub Kustomization (%d here)\n", fluxcontrollers.KustomizeController, s.WorkersErr, need)
	case need > s.Workers:
		fmt.Fprintf(w, "\nwarning: %s runs %d workers for %d spokes and %d hub Kustomizations. A spoke being deleted, or one whose API server cannot be reached, holds a worker, and the hub's own Kustomizations wait behind them: raise the hub stack's fluxConcurrency to at least %d.\n",
			fluxcontrollers.KustomizeController, s.Workers, len(s.Clusters), s.HubSteps, need)
	}
	return nil
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
