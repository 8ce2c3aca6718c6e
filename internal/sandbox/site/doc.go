// Package e2e runs the GitOps chain on the real upstream controllers, on
// loopback, for the suites under test/e2e: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler for each cluster (kwok plays
// the kubelets' node and pod status), Flux's source-, kustomize- and
// helm-controller, Crossplane core with its package manager and webhooks,
// this project's composition function and the pinned upstream functions,
// External Secrets and the Sealed Secrets controller, each built by
// internal/build/binaries at the release internal/contract/versions pins.
//
// What cannot run here stands in, and each stand-in says which upstream
// behaviour it reproduces (file and line) and what it does not model:
//
//   - the pods' containers (PodRunner): kwok reports pods Running without
//     running anything, so the pods whose images are upstream programs the
//     suite builds are run as local processes, with the container's own
//     arguments and environment and the pod's service-account identity;
//     listen addresses move to the pod's IP (kwok assigns pod IPs from a
//     loopback CIDR);
//   - the Service network (ServiceRouter): without kube-proxy, Endpoints
//     for Services backed by those processes are written by the suite, and
//     kube-apiserver reaches webhooks through them (aggregator routing);
//   - the internet (package internet): an HTTPS proxy with its own CA,
//     trusted by the processes it serves, answers the chart repositories,
//     the OCI registries and AWS's endpoints from local sources: charts and
//     packages built from the pinned upstream modules (ServeCharts,
//     ServePackages say which the hub reaches), and the AWS stand-in;
//   - a spoke's EKS cluster (EKS): a second local cluster whose
//     service-account issuer is the one AWS reports for the claim's
//     cluster, reached by the hub's composed bootstrap through a kubeconfig
//     Secret (kubeconfigSubstitute, the one field the suite substitutes),
//     with the Flux Operator played on it as on the hub;
//   - AWS (package aws): see its documentation;
//   - the Pulumi engine (CaptureHub, Hub.Up): the hub's program runs under
//     pulumi.WithMocks and its Kubernetes objects are applied as the
//     Kubernetes provider applies them; an update (`pulumi up` after a
//     config change) runs it again with the previous run as its state, so
//     resources whose inputs did not change keep their outputs (the key
//     pairs), and applies only the objects that changed.
package site
