package fleetcmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

// clusterBreakGlassCmd prints the commands that let the deletion of a spoke
// whose API is gone finish. kustomize-controller (v1.9.3
// finalize) retries pruning through an unreachable cluster without a time
// limit; a suspended Kustomization's finalizer skips pruning and removes
// itself. Only the remote steps that prune at deletion need it (the others
// Orphan, or run on the hub and are bounded by spec.timeout), so the list
// comes from the composition function's step table.
func (a *app) clusterBreakGlassCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "break-glass NAME",
		Short: "Print the commands that let a stuck spoke deletion finish when its API is unreachable",
		Long: `When a spoke's Kubernetes API cannot be reached (cluster deleted out of band,
Flux access removed, public CIDRs changed), the hub cannot prune what it applied
there and the claim's deletion waits forever at <spoke>-workloads; the Usages
then hold the node group, the cluster and the network. The printed commands
suspend those Kustomizations so that their finalizers skip pruning, and the
hub's HelmReleases that install onto the spoke so that they are deleted without
an uninstall (deleting the HelmCharts a suspended release leaves); Crossplane
then deletes the rest in order, without waiting for the spoke. Whatever ran on
the spoke is abandoned with it: check the apps' AWS resources (fleet status,
the AWS console) afterwards. Works when the claim file is already removed;
needs only the cluster's name.`,
		Example: `  fleet cluster break-glass payments
  fleet cluster break-glass payments | sh`,
		Args: exactArgs("NAME"),
		RunE: func(_ *cobra.Command, args []string) error { return a.clusterBreakGlass(args[0]) },
	}
}

func (a *app) clusterBreakGlass(name string) error {
	if !dnsLabelRE.MatchString(name) || len(name) > workloadcluster.MaxNameLength {
		return usageErr("NAME %q: a cluster name is a DNS label (lowercase letters, digits, '-') of at most %d characters", name, workloadcluster.MaxNameLength)
	}
	fmt.Fprintf(a.stdout, "# Break glass for spoke %s: only when its API is unreachable and its deletion is stuck.\n", name)
	fmt.Fprintf(a.stdout, "# Suspended, these Kustomizations skip pruning on the spoke and drop their finalizer,\n")
	fmt.Fprintf(a.stdout, "# and these HelmReleases are deleted without uninstalling from the spoke.\n")
	fmt.Fprintf(a.stdout, "# The %s ones exist only on a spoke still moving to the hub's sealing keys\n", strings.Join(retiredNames(name), " and "))
	fmt.Fprintf(a.stdout, "# (bootstrapped before function v0.2.0); elsewhere kubectl answers NotFound for them.\n")
	bound, err := compose.UnreachableTeardownBound()
	if err != nil {
		return err
	}
	for _, cmd := range BreakGlassCommands(name) {
		fmt.Fprintln(a.stdout, cmd)
	}
	fmt.Fprintf(a.stdout, "# Then nothing on the hub waits for the spoke: Crossplane deletes the node group, cluster and\n")
	fmt.Fprintf(a.stdout, "# network in order (one level of Usages per 30 s poll, plus AWS's delete times); without the\n")
	fmt.Fprintf(a.stdout, "# HelmRelease commands the hub-side steps give up within %s. Check the apps' AWS resources.\n", bound)
	return nil
}

// retiredNames are spoke name's retired objects break glass names.
func retiredNames(name string) []string {
	parts, releases := compose.RetiredBreakGlass()
	var out []string
	for _, n := range append(parts, releases...) {
		out = append(out, compose.BootstrapName(name, n))
	}
	return out
}

// BreakGlassCommands returns the kubectl commands for spoke name: a suspend
// per Kustomization whose finalizer needs the spoke, and per hub-side
// HelmRelease installing onto it, with the delete of the HelmChart that
// release would otherwise leave behind.
func BreakGlassCommands(name string) []string {
	suspend := func(resource, obj string) string {
		return strings.Join([]string{"kubectl", "--namespace", compose.BootstrapNamespace,
			"patch", resource, obj, "--type=merge", `--patch='{"spec":{"suspend":true}}'`}, " ")
	}
	retiredParts, retiredReleases := compose.RetiredBreakGlass()
	var out []string
	for _, part := range append(compose.BreakGlassParts(), retiredParts...) {
		out = append(out, suspend("kustomizations.kustomize.toolkit.fluxcd.io", compose.BootstrapName(name, part)))
	}
	for _, rel := range append(compose.BreakGlassReleases(), retiredReleases...) {
		hr := compose.BootstrapName(name, rel)
		out = append(out, suspend("helmreleases.helm.toolkit.fluxcd.io", hr),
			strings.Join([]string{"kubectl", "--namespace", compose.BootstrapNamespace, "delete",
				"helmcharts.source.toolkit.fluxcd.io", compose.BootstrapNamespace + "-" + hr, "--ignore-not-found"}, " "))
	}
	return out
}
