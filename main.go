// Command eks-fleet is the hub's Pulumi program: `pulumi up -s <stack>`
// creates the management cluster, the sealing keys, the IRSA roles and the
// Flux bootstrap; `pulumi destroy` removes them, spokes first. A stack of
// kind spoke-account prepares another AWS account for the hub's spokes.
// Before either creates anything, the deploying account is read with the
// AWS SDK (awsreader) for what the fence needs to be the fleet's alone.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/hub"
	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight/awsreader"
)

func main() {
	pulumi.Run(hub.Program(awsreader.Reader{}))
}
