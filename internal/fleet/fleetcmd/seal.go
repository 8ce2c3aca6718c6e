package fleetcmd

import (
	"fmt"
	"os"

	ssv1alpha1 "github.com/bitnami-labs/sealed-secrets/pkg/apis/sealedsecrets/v1alpha1"
	"github.com/spf13/cobra"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/sealing"
)

func (a *app) sealCmd() *cobra.Command {
	var cert, format, scope, namespace string
	c := &cobra.Command{
		Use:   "seal [--cert FILE]",
		Short: "Seal a Secret read on stdin into a SealedSecret (like kubeseal --cert)",
		Long: `Reads one or more Secrets (YAML or JSON) on stdin and writes SealedSecrets on
stdout, with the code kubeseal runs (sealed-secrets v0.36.6): the output is what
'kubeseal --cert FILE' writes, and the environment's Sealed Secrets controller
unseals it. No cluster is contacted. The certificate is the public half of the
environment's sealing key (default: <tree>/` + fleettree.DefaultCertFile + `).`,
		Example: `  kubectl create secret generic db --from-literal=password=s3cr3t -n payments \
      --dry-run=client -o yaml | fleet seal --cert sealing-cert.pem --format yaml > db.sealed.yaml`,
		Args: maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var sc ssv1alpha1.SealingScope
			if err := sc.Set(scope); err != nil {
				return usageErr("--scope %q: allowed strict, namespace-wide, cluster-wide", scope)
			}
			if format != sealing.FormatJSON && format != sealing.FormatYAML {
				return usageErr("--format %q: allowed json, yaml", format)
			}
			if cert == "" {
				root, err := a.treeRoot()
				if err != nil {
					return fmt.Errorf("%w (or pass --cert FILE)", err)
				}
				cert = (&fleettree.Tree{Root: root}).Path(fleettree.DefaultCertFile)
			}
			key, err := sealing.LoadCert(cert)
			if err != nil {
				return err
			}
			in := cmd.InOrStdin()
			if in == nil {
				in = os.Stdin
			}
			return sealing.Seal(in, a.stdout, key, sealing.Options{Format: format, Scope: sc, Namespace: namespace})
		},
	}
	c.Flags().StringVar(&cert, "cert", "", "sealing certificate PEM (default: <tree>/"+fleettree.DefaultCertFile+")")
	c.Flags().StringVarP(&format, "format", "o", sealing.FormatJSON, "output format: json (kubeseal's default) or yaml")
	c.Flags().StringVar(&scope, "scope", "strict", "sealing scope: strict, namespace-wide or cluster-wide")
	c.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of a Secret that names none (default: default, as kubeseal without a kubeconfig)")
	return c
}
