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
	tlsDir := flag.String("tls-certs-dir", os.Getenv("TLS_SERVER_CERTS_DIR"), "directory of mTLS certificates (default $TLS_SERVER_CERTS_DIR)")
	insecure := flag.Bool("insecure", false, "serve without mTLS (local development and render only)")
	flag.Parse()
	opts := []function.ServeOption{function.Listen(*network, *address)}
	switch {
	case *insecure:
		opts = append(opts, function.Insecure(true))
	case *tlsDir != "":
		opts = append(opts, function.MTLSCertificates(*tlsDir))
	default:
		log.Fatal("no mTLS certificates: set TLS_SERVER_CERTS_DIR (Crossplane's function runtime does) or --tls-certs-dir, or pass --insecure to serve without TLS")
	}
	if err := function.Serve(&fn.Function{}, opts...); err != nil {
		log.Fatalf("serve workload-cluster function: %v", err)
	}
}
