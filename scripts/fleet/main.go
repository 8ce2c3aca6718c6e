// Command fleet edits and checks the GitOps tree of an EKS fleet; see
// `fleet --help`. All logic lives in internal/fleetcmd.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/gitops-fleet/eks-fleet/internal/fleetcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := fleetcmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
