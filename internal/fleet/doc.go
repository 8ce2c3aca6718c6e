// Package fleet is the `fleet` command line every team uses and the Git
// changes it makes: fleetcmd (the cobra commands), fleettree (where things
// live in the manifests tree), fleetvalidate (the pull-request gate),
// fleetstatus (the live fleet read from the hub), policy (what a request may
// ask for and still be auto-approved), accounts (the hub's ProviderConfig of
// each spoke account the policy lists), treeedit and kustfile (atomic tree
// edits), cidralloc (VPC CIDRs for new spokes) and sealing (kubeseal's
// sealing, offline).
//
// Only scripts/fleet and tests import the CLI. fleet packages may import
// contract, iam, build, proof, functions, components and stacks; nothing
// below them imports fleet (internal/testsupport/layers enforces it).
package fleet
