// Package deleteguard is the DeleteGuard component: it stands before a set
// of resources on `pulumi destroy` (or when they leave the program) and
// lets the engine delete them only while its check passes. It depends on
// each guarded resource, so the engine deletes it before any of them and
// none of them while its delete is refused; the refusal is a before-delete
// resource hook (Pulumi 3.182+), so the engine runs it with the program
// (`pulumi destroy --run-program`; without the flag the engine refuses to
// destroy a stack holding delete hooks, naming them).
package deleteguard

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Type is the component's Pulumi type token.
const Type = "eks-fleet:index:DeleteGuard"

// Args configures a DeleteGuard.
type Args struct {
	// Guarded are the resources it stands before, custom resources only:
	// a dependency on a component stands for its custom children, so one
	// would guard only those (the engine test saw a guard on components
	// without children let them go).
	Guarded []pulumi.Resource
	// Check returns why the guarded resources may not be deleted now, or
	// nil.
	Check func(ctx context.Context) error
}

// DeleteGuard is the component; it creates nothing.
type DeleteGuard struct {
	pulumi.ResourceState

	// Check is Args.Check, as the hook runs it.
	Check func(ctx context.Context) error
	// Hook is the before-delete hook (nil under pulumi.WithMocks, whose
	// monitor implements no hooks: sdk v3.220.0 go/pulumi/mocks.go,
	// RegisterResourceHook panics "not implemented").
	Hook *pulumi.ResourceHook
}

// HookName is the name of guard name's hook in the engine's state and
// messages.
func HookName(name string) string { return name + "-before-delete" }

// New registers a DeleteGuard.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*DeleteGuard, error) {
	if args.Check == nil {
		return nil, fmt.Errorf("deleteguard %s: no Check", name)
	}
	if len(args.Guarded) == 0 {
		return nil, fmt.Errorf("deleteguard %s: guards nothing", name)
	}
	for i, r := range args.Guarded {
		if _, ok := r.(pulumi.CustomResource); !ok {
			return nil, fmt.Errorf("deleteguard %s: Guarded[%d] is not a custom resource", name, i)
		}
	}
	g := &DeleteGuard{Check: args.Check}
	opts = append(opts, pulumi.DependsOn(args.Guarded))
	if !ctx.RunningWithMocks() {
		hook, err := ctx.RegisterResourceHook(HookName(name), func(*pulumi.ResourceHookArgs) error {
			return args.Check(ctx.Context())
		}, nil)
		if err != nil {
			return nil, fmt.Errorf("deleteguard %s: hook: %w", name, err)
		}
		g.Hook = hook
		opts = append(opts, pulumi.ResourceHooks(&pulumi.ResourceHookBinding{BeforeDelete: []*pulumi.ResourceHook{hook}}))
	}
	if err := ctx.RegisterComponentResource(Type, name, g, opts...); err != nil {
		return nil, fmt.Errorf("register DeleteGuard %s: %w", name, err)
	}
	if err := ctx.RegisterResourceOutputs(g, pulumi.Map{}); err != nil {
		return nil, fmt.Errorf("deleteguard %s: outputs: %w", name, err)
	}
	return g, nil
}
