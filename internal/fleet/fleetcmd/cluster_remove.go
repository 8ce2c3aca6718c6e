package fleetcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/awsgroups"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

func (a *app) clusterRemoveCmd() *cobra.Command {
	var dryRun bool
	c := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a cluster: its claim, its listing and its workloads folder",
		Long: `Deletes the cluster's claim file, its entry in the claims kustomization and its
folder in the workloads tree, and lists the AWS resources Crossplane will delete
after the merge (from the rendered Composition when the renderer is available).
Teardown is ordered by the Composition: the spoke's workloads and bootstrap objects
first, then the node group and cluster, then the network. If the spoke's API cannot be
reached, the deletion waits at <spoke>-workloads: see fleet cluster break-glass.`,
		Example: `  fleet cluster remove payments --dry-run
  fleet cluster remove payments`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.clusterRemove(cmd.Context(), args[0], dryRun) },
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed and deleted, write nothing")
	return c
}

func (a *app) clusterRemove(ctx context.Context, name string, dryRun bool) error {
	t, err := a.openTree()
	if err != nil {
		return err
	}
	c, claims, err := a.findClaim(t, name)
	if err != nil {
		return err
	}
	info, err := a.info()
	if err != nil {
		return err
	}
	// What AWS loses, before the claim file is gone. Only this cluster's
	// claim builds (requestPrune leaves the others out).
	var deleted []string
	if a.deps.Renderer != nil {
		objs, err := a.deps.Renderer.RenderClaim(ctx, RenderRequest{Tree: t.Root, ClaimPath: t.Path(c.Rel), Info: info,
			Prune: requestPrune(t, claims, nil, []string{name})})
		if err != nil {
			return fmt.Errorf("rendering %s to list its resources: %w", c.Rel, err)
		}
		for _, o := range objs {
			if d, ok := awsDeletion(o); ok {
				deleted = append(deleted, d)
			}
		}
		sort.Strings(deleted)
	} else {
		deleted = genericResources(c.Claim, info.HubName)
	}
	ch := treeedit.New()
	if len(bytes.TrimSpace(mustRead(t.Path(c.Rel)))) > 0 {
		ch.Remove(c.Rel)
	}
	kpath := fleettree.ClaimsDir + "/" + fleettree.Kustomization
	if kb, err := os.ReadFile(t.Path(kpath)); err == nil {
		nb, _, err := kustfile.Remove(kb, strings.TrimPrefix(c.Rel, fleettree.ClaimsDir+"/"))
		if err != nil {
			return fmt.Errorf("%s: %w", kpath, err)
		}
		ch.Write(kpath, nb)
	}
	ch.RemoveAll(fleettree.WorkloadsRel(name))
	if dryRun {
		fmt.Fprintf(a.stdout, "dry run: would remove\n")
	} else {
		if err := ch.Apply(t.Root); err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		fmt.Fprintf(a.stdout, "removed\n")
	}
	fmt.Fprintf(a.stdout, "  %s\n  %s (entry %s)\n  %s/\n", c.Rel, kpath, strings.TrimPrefix(c.Rel, fleettree.ClaimsDir+"/"), fleettree.WorkloadsRel(name))
	fmt.Fprintf(a.stdout, "\nAfter the merge Crossplane deletes these AWS resources of cluster %s-%s (account %s, region %s):\n", info.HubName, name, info.AccountID, c.Claim.Spec.Region)
	for _, d := range deleted {
		fmt.Fprintf(a.stdout, "  %s\n", d)
	}
	if a.deps.Renderer == nil {
		fmt.Fprintf(a.stdout, "(list derived from the claim: the renderer is not available to list the exact composed resources)\n")
	}
	return nil
}

// awsDeletion describes what deleting a composed managed resource does in
// AWS: nothing for a resource that manages nothing (managementPolicies: [],
// e.g. a paused NAT slot), "kept" for one that may not delete or is
// orphaned, else it is deleted.
func awsDeletion(o *unstructured.Unstructured) (string, bool) {
	gv := o.GroupVersionKind()
	svc, _, ok := awsgroups.Service(gv.Group)
	if !ok {
		return "", false
	}
	desc := fmt.Sprintf("%s.%s %s", gv.Kind, svc, o.GetName())
	mp, found, _ := unstructured.NestedStringSlice(o.Object, "spec", "managementPolicies")
	if found && len(mp) == 0 {
		return "", false
	}
	dp, _, _ := unstructured.NestedString(o.Object, "spec", "deletionPolicy")
	if dp == "Orphan" || (found && !slices.Contains(mp, "*") && !slices.Contains(mp, "Delete")) {
		return desc + " (kept in AWS: not deleted by Crossplane)", true
	}
	return desc, true
}

// genericResources describes what the WorkloadCluster Composition makes
// for a claim, when the renderer cannot say it exactly.
func genericResources(c *workloadcluster.Claim, hub string) []string {
	s := c.Spec
	nats := 1
	if s.NATMode == workloadcluster.NATPerAZ {
		nats = s.AvailabilityZones
	}
	return []string{
		fmt.Sprintf("EKS cluster %s-%s (Kubernetes %s), its managed node group and access entries", hub, c.Metadata.Name, s.KubernetesVersion),
		fmt.Sprintf("VPC %s with %d public and %d private subnets, internet gateway, route tables", s.VPCCIDR, s.AvailabilityZones, s.AvailabilityZones),
		fmt.Sprintf("%d NAT gateway(s) and Elastic IP(s)", nats),
		"the spoke's OIDC provider and IAM roles (cluster, node, crossplane, eso, lbc)",
	}
}
