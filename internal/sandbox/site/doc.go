// Package site brings up the fleet on this machine on the real controllers,
// for `fleet sandbox` and the real-controller suite (test/e2e): the hub as
// `pulumi up -s mgmt` makes it (StartHub: the program's Kubernetes half
// through the real Pulumi engine, package engine, with the inputs its AWS
// half gave it under pulumi.WithMocks, CaptureHub), and the clusters its
// spokes run on (EKS, Spoke), each a cluster of package kube. Every
// upstream program runs at the release internal/contract/versions pins,
// built by internal/build/binaries: Flux's source-, kustomize- and
// helm-controller, Crossplane core with its package manager and webhooks,
// this project's composition function and the pinned upstream functions,
// External Secrets and the Sealed Secrets controller.
//
// What cannot run here stands in, and each stand-in says which upstream
// behaviour it reproduces (file and line) and what it does not model:
//
//   - the internet (package internet): an HTTPS proxy with its own CA
//     answers the chart repositories, the OCI registries and AWS's
//     endpoints from local sources: charts and packages built from the
//     pinned upstream modules (ServeCharts, ServePackages say which the hub
//     reaches), and the AWS stand-in;
//   - a Git host: GitServer serves the checkout's manifests/ over SSH;
//   - the Flux Operator (FluxOperator, FluxInstallation): its module cannot
//     be built here, so its reconcile of a FluxInstance is played;
//   - a spoke's EKS cluster (EKS): a second cluster whose service-account
//     issuer is the one AWS reports for the claim's cluster, reached by the
//     hub's composed bootstrap through a kubeconfig Secret
//     (kubeconfigSubstitute, the one field substituted);
//   - AWS (package aws): see its documentation.
package site
