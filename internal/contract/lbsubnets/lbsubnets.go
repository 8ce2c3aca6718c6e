// Package lbsubnets names the subnet tags the AWS Load Balancer Controller
// discovers subnets by (its docs' "Subnet auto-discovery"; v2.14.0
// pkg/networking/subnet_resolver.go:22-23): the hub's public and private
// subnets (components/managementcluster) and every spoke's (the
// composition function) carry them, so a Service of type LoadBalancer
// finds its subnets without naming them.
package lbsubnets

const (
	// Public marks a subnet for internet-facing load balancers.
	Public = "kubernetes.io/role/elb"
	// Internal marks a subnet for internal load balancers.
	Internal = "kubernetes.io/role/internal-elb"
)
