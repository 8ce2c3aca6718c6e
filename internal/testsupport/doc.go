// Package testsupport holds what only tests and benchmarks use: benchtree
// (N-cluster trees for benchmarks), plant (edits planted in a copy of the
// tree, so a test can show a check catches them), fleetdocs (the IAM
// documents the fleet writes for the example hub), layers (the import
// direction between internal/'s subsystems, checked by a test) and check
// (the real-controller suite's reads, waits and failure summaries of a
// running site; test/e2e holds the scenarios). The
// environment the real-controller suite runs on is a product package,
// internal/sandbox, which `fleet sandbox` runs too.
//
// testsupport may import anything; only tests, scripts/bench and other
// testsupport packages may import it.
package testsupport
