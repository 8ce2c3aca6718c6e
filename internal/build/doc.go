// Package build holds what is taken from or made for upstream releases:
// upstream (pinned Go modules as local directories, from the module proxy),
// xpkgbuild (this project's composition function as a Crossplane package)
// and tools/ (nested Go modules that pin the upstream binaries the proof
// runs).
//
// The offline proof, the fleet CLI and scripts/xpkg import these packages.
// They import only internal/contract (internal/testsupport/layers enforces
// it).
package build
