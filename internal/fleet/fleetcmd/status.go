package fleetcmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetstatus"
)

// hubClient builds a dynamic client from a kubeconfig (default loading
// rules: $KUBECONFIG, ~/.kube/config).
func hubClient(kubeconfig string) (dynamic.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return dynamic.NewForConfig(cfg)
}

func (a *app) statusCmd() *cobra.Command {
	var kubeconfig string
	c := &cobra.Command{
		Use:   "status [--kubeconfig F]",
		Short: "Show the live state of the fleet from the hub",
		Long: `Lists, from the hub cluster, every WorkloadCluster claim (Ready, Synced,
Kubernetes version, region, age) and each spoke's bootstrap Kustomizations
(flux-system/<spoke>-*) with their Ready condition. Exit code 1 when anything is
not Ready. It warns when the hub's kustomize-controller runs fewer workers (the
hub stack's fluxConcurrency) than there are spokes and hub Kustomizations: a
spoke being deleted, or one whose API server cannot be reached, holds a worker,
and the hub's own Kustomizations then wait behind them.`,
		Example: `  aws eks update-kubeconfig --name mgmt --kubeconfig hub.kubeconfig
  fleet status --kubeconfig hub.kubeconfig`,
		Args: maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := a.deps.Dynamic(kubeconfig)
			if err != nil {
				return err
			}
			st, err := fleetstatus.Read(cmd.Context(), cl, a.deps.Now())
			if err != nil {
				return err
			}
			if err := st.Print(a.stdout); err != nil {
				return err
			}
			if !st.Healthy() {
				return &exitError{code: ExitFailed, silent: true, err: fmt.Errorf("not every cluster is Ready")}
			}
			return nil
		},
	}
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub (default: $KUBECONFIG or ~/.kube/config)")
	return c
}
