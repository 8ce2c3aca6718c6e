package proof

// A request's proof reads the tree with a change pending and leaves out
// what its scope does not reach (Options.Overlay, Removed, Prune): see
// kbuild.CopyTreeScoped, which copies the build source that way, and
// kbuild.CheckScoped, after which Run proves again unpruned when a pruned
// listing might not build resource by resource.
