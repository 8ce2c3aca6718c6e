// Package iam holds the fleet's AWS IAM documents: hubiam (the hub's IRSA
// roles and the spokes' permissions boundary, plus the generic policy
// document model), spokeiam (the roles the hub composes for each spoke) and
// iamsim (a real IAM policy evaluator the tests run the documents through).
//
// The Pulumi program, the composition function and the fleet CLI import
// these packages. They import only internal/contract and each other, never
// the proof, the CLI or the hub's wiring (internal/testsupport/layers
// enforces it).
package iam
