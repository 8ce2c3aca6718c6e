// Command workload-cluster is the hub's composition function for
// XWorkloadCluster; the logic lives in package compose.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/crossplane/function-sdk-go"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fn"
)

func main() {
	network := flag.String("network", "tcp", "network to listen on")
	address := flag.String("address", ":9443", "address to listen on")
	// Crossplane's function runtime passes the mTLS certificates in
	// TLS_SERVER_CERTS_DIR (as function-template-go reads it), not a flag.
	tlsDir := flag.String("tls-certs-dir", os.Getenv("TLS_SERVER_CERTS_DIR"), "directory of mTLS certificates (default $TLS_SERVER_CERTS_DIR; empty: insecure)")
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
