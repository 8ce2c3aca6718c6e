package fleetcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

func (a *app) clusterUpgradeCmd() *cobra.Command {
	var version string
	var dryRun bool
	c := &cobra.Command{
		Use:   "upgrade NAME --version V",
		Short: "Move a cluster to the next Kubernetes minor version",
		Long: `Sets spec.kubernetesVersion of the cluster's claim to V. EKS moves one minor
version at a time and never down, so V must be the next minor version and allowed by
the policy.

After the merge, the composition function sets spec.kubernetesVersion on both the EKS
Cluster and the managed NodeGroup. The control plane upgrades first: EKS refuses a
node group version newer than its control plane, so the NodeGroup's update fails
and Crossplane retries it until the control plane reports the new version; then
the node group rolls its nodes (respecting PodDisruptionBudgets). Upgrade again
only when 'fleet status' shows the cluster Ready and Synced.`,
		Example: `  fleet cluster upgrade payments --version 1.36
  fleet cluster upgrade payments --version 1.36 --dry-run`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == "" {
				return usageErr("--version is required: the target Kubernetes version, one of %s", strings.Join(versions.Kubernetes(), ", "))
			}
			return a.clusterUpgrade(cmd.Context(), args[0], version, dryRun)
		},
	}
	c.Flags().StringVar(&version, "version", "", "target Kubernetes version (the next minor: "+strings.Join(versions.Kubernetes(), ", ")+")")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "check and print, write nothing")
	return c
}

func (a *app) clusterUpgrade(ctx context.Context, name, to string, dryRun bool) error {
	a.warmProof(ctx)
	t, err := a.openTree()
	if err != nil {
		return err
	}
	pol, err := a.loadPolicy(t)
	if err != nil {
		return err
	}
	c, claims, err := a.findClaim(t, name)
	if err != nil {
		return err
	}
	from := c.Claim.Spec.KubernetesVersion
	if err := versions.CheckUpgrade(from, to); err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("cluster %s: --version %s: %w", name, to, err)}
	}
	if !slices.Contains(pol.Versions(), to) {
		return &exitError{code: ExitFailed, err: fmt.Errorf("cluster %s: --version %s is not allowed by the fleet policy: allowed %s", name, to, strings.Join(pol.Versions(), ", "))}
	}
	b, err := os.ReadFile(t.Path(c.Rel))
	if err != nil {
		return err
	}
	nb, err := setClaimVersion(b, name, to)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Rel, err)
	}
	next := *c.Claim
	next.Spec.KubernetesVersion = to
	if vs := pol.CheckClaim(&next); len(vs) > 0 {
		return violationsErr("cluster upgrade "+name, vs)
	}
	ch := treeedit.New()
	ch.Write(c.Rel, nb)
	if err := a.checkStaged(ctx, t, claims, ch, name); err != nil {
		return err
	}
	if dryRun {
		fmt.Fprintf(a.stdout, "dry run: cluster %s would go from %s to %s (%s)\n", name, from, to, c.Rel)
		return nil
	}
	if err := ch.Apply(t.Root); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	fmt.Fprintf(a.stdout, "cluster %s: Kubernetes %s -> %s in %s\ncontrol plane first, then the node group (see fleet cluster upgrade --help)\n", name, from, to, c.Rel)
	return nil
}

// setClaimVersion edits spec.kubernetesVersion of the named claim in a
// YAML stream, keeping comments and every other document as they are.
func setClaimVersion(b []byte, name, version string) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []*yaml.Node
	found := false
	for {
		var d yaml.Node
		if err := dec.Decode(&d); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, err
		}
		if len(d.Content) == 1 && mapGet(d.Content[0], "kind") != nil && mapGet(d.Content[0], "kind").Value == workloadcluster.ClaimKind {
			md := mapGet(d.Content[0], "metadata")
			if md != nil && mapGet(md, "name") != nil && mapGet(md, "name").Value == name {
				spec := mapGet(d.Content[0], "spec")
				if spec == nil {
					return nil, fmt.Errorf("claim %s has no spec", name)
				}
				v := mapGet(spec, "kubernetesVersion")
				if v == nil {
					spec.Content = append(spec.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "kubernetesVersion"}, &yaml.Node{Kind: yaml.ScalarNode})
					v = spec.Content[len(spec.Content)-1]
				}
				v.Value, v.Tag, v.Style = version, "!!str", yaml.DoubleQuotedStyle
				found = true
			}
		}
		docs = append(docs, &d)
	}
	if !found {
		return nil, fmt.Errorf("no WorkloadCluster %q", name)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
