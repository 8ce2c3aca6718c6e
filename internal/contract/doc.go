// Package contract holds the facts every side of the fleet reads: the
// pinned versions, the names and variables of cluster-info and spoke-info,
// the service accounts IRSA roles trust, the sealing-key and deploy-key
// shapes, the subnet tags load balancers are placed by, the WorkloadCluster
// and AppInfrastructure APIs, what the fleet knows of a spoke account, and the rules on values both the hub's stack
// and a claim carry (public CIDRs, EKS zones).
//
// The Pulumi program, the composition function, the fleet CLI, the offline
// proof and the tests all import these packages, so a fact changes in one
// place. A contract package imports only other contract packages: it is the
// bottom of the dependency order (internal/testsupport/layers enforces it).
package contract
