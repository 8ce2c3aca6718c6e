package fleetcmd

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

func (a *app) clusterCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cluster",
		Short: "Ask for, upgrade and remove workload clusters",
		Long: `A workload (spoke) cluster is one WorkloadCluster claim file in
gitops-system/workload-clusters/ plus its folder in gitops-workloads/clusters/.
After the merge, the hub's Flux applies the claim and Crossplane builds the cluster.`,
		Example: `  fleet cluster add payments --region eu-west-1
  fleet cluster upgrade payments --version 1.36
  fleet cluster remove payments`,
		Args: maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.clusterAddCmd(), a.clusterUpgradeCmd(), a.clusterRemoveCmd(), a.clusterBreakGlassCmd())
	return c
}

// violationsErr turns policy violations into one error naming each.
func violationsErr(what string, vs []policy.Violation) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problem(s), nothing written:", what, len(vs))
	for _, v := range vs {
		b.WriteString("\n  - " + v.Error())
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("%s", b.String())}
}

func (a *app) loadPolicy(t *fleettree.Tree) (*policy.Policy, error) {
	b, err := t.ReadFile(policy.RelPath)
	if err != nil {
		return nil, fmt.Errorf("reading fleet policy: %w", err)
	}
	return policy.Parse(b, t.Path(policy.RelPath))
}

func (a *app) findClaim(t *fleettree.Tree, name string) (fleettree.ClaimFile, []fleettree.ClaimFile, error) {
	claims, err := t.Claims()
	if err != nil {
		return fleettree.ClaimFile{}, nil, err
	}
	c, ok := fleettree.FindClaim(claims, name)
	if !ok {
		var names []string
		for _, c := range claims {
			names = append(names, c.Claim.Metadata.Name)
		}
		sort.Strings(names)
		return c, nil, &exitError{code: ExitFailed, err: fmt.Errorf("cluster %q: no claim in %s (clusters: %s)", name, fleettree.ClaimsDir, strings.Join(names, ", "))}
	}
	return c, claims, nil
}

func mustRead(p string) []byte {
	b, _ := os.ReadFile(p)
	return b
}
