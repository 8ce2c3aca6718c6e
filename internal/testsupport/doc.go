// Package testsupport holds what only tests and benchmarks use: mocks (the
// pulumi.WithMocks monitor the hub's tests share), benchtree (N-cluster
// trees for benchmarks), plant (edits planted in a copy of the tree, so a
// test can show a check catches them), fleetdocs (the IAM documents the
// fleet writes for the example hub), engineconfig (a stack's settings as
// the Pulumi engine hands them to the program) and layers (the import direction
// between internal/'s subsystems, checked by a test).
//
// testsupport may import anything; only tests, scripts/bench and other
// testsupport packages may import it.
package testsupport
