// Package sandbox runs the fleet on this machine, on the real controllers,
// for `fleet sandbox`: a hub brought up as `pulumi up -s mgmt` brings it up
// (the program's Kubernetes half through the real Pulumi engine, its AWS
// half under mocks), syncing the manifests tree of the user's checkout from
// a local Git server, with a stand-in AWS account; and, for each
// WorkloadCluster claim the hub holds, a second local cluster that plays
// the spoke's EKS cluster, which the hub's bootstrap reaches and whose own
// Flux runs the spoke's tools and apps.
//
// It is one background process (Serve, started by Up and stopped by Down)
// that holds every process, network namespace and bridge the sandbox made,
// and answers Push, State and Down on a Unix socket in the sandbox's
// directory.
//
// Its layers are packages of their own: site (a cluster on this machine:
// etcd, the Kubernetes control plane, kwok for the kubelets, the pod
// network; the Git server; the hub, what it reaches on the internet, and
// the spokes' EKS clusters), internet (the stand-in internet: the proxy,
// its registries and chart repositories, the package images), pki (the
// clusters' and the internet's certificate authorities), aws (the stand-in
// AWS account and the provider family's controllers), engine (the Pulumi engine driven by the
// Automation API), engineconfig (a stack's settings as the engine hands them
// to the program) and mocks (the program's AWS half under
// pulumi.WithMocks). The real-controller suite (test/e2e) runs on the same
// packages; its waits and checks stay in the suite.
//
// sandbox packages may import contract, iam, build, fleet, hub, functions,
// components and stacks; only scripts/fleet, internal/testsupport and tests
// import sandbox (internal/testsupport/layers enforces it).
package sandbox
