package proof

import (
	"context"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
)

// A request's proof reads the tree with a change pending and leaves out
// what its scope does not reach (Options.Overlay, Removed, Prune): see
// kbuild.CopyTreeScoped, which copies the build source that way, and
// kbuild.CheckScoped, after which Run proves again unpruned when a pruned
// listing might not build resource by resource.

// Warm starts, in the background, the set-up every proof of the process
// shares (the index of the pinned upstream CRDs), so that a command can
// overlap it with its own work before it calls Run; Run waits for it.
func Warm(ctx context.Context) {
	go func() { _, _ = upstream.CRDs(context.WithoutCancel(ctx)) }()
}
