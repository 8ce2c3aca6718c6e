// Command workload-cluster is the hub's composition function for
// XWorkloadCluster; the logic lives in package compose.
package main

import (
	"flag"
	"log"

	"github.com/crossplane/function-sdk-go"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fn"
)

func main() {
	network := flag.String("network", "tcp", "network to listen on")
	address := flag.String("address", ":9443", "address to listen on")
	tlsDir := flag.String("tls-certs-dir", "", "directory of mTLS certificates (empty: insecure)")
	flag.Parse()
	opts := []function.ServeOption{function.Listen(*network, *address)}
	if *tlsDir != "" {
		opts = append(opts, function.MTLSCertificates(*tlsDir))
	} else {
		opts = append(opts, function.Insecure(true))
	}
	if err := function.Serve(&fn.Function{}, opts...); err != nil {
		log.Fatalf("serve workload-cluster function: %v", err)
	}
}
