package fluxbootstrap

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/utilities"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ReleaseType is the Kubernetes provider's Helm release.
const ReleaseType = "kubernetes:helm.sh/v3:Release"

// Release is a Helm release of the Kubernetes provider, registered by its
// type token with the inputs and options the Go SDK's NewRelease gives it
// (pulumi-kubernetes sdk/v4 v4.23.0 go/kubernetes/helm/v3/release.go:375-392:
// compat "true", the SDK's version as the provider's). The SDK's helm/v3
// package is not imported because it also holds the v3 Chart component,
// which imports the package of every Kubernetes kind: 27 MB of generated
// Go compiled (and vetted) into every build of the program, against 6 MB
// for the kinds the program registers (TestProgramCompilesItsKindsOnly).
type Release struct {
	pulumi.CustomResourceState
}

// ReleaseArgs are the release's inputs the program sets (the provider's
// schema for kubernetes:helm.sh/v3:Release names them).
type ReleaseArgs struct {
	Name, Chart, Version, Namespace pulumi.StringInput
}

// newRelease registers a Release as the SDK's NewRelease does.
func newRelease(ctx *pulumi.Context, name string, args ReleaseArgs, opts ...pulumi.ResourceOption) (*Release, error) {
	var r Release
	props := pulumi.Map{
		"name":      args.Name,
		"chart":     args.Chart,
		"version":   args.Version,
		"namespace": args.Namespace,
		"compat":    pulumi.String("true"),
	}
	if err := ctx.RegisterResource(ReleaseType, name, props, &r, utilities.PkgResourceDefaultOpts(opts)...); err != nil {
		return nil, err
	}
	return &r, nil
}
