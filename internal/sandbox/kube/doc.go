// Package kube runs one Kubernetes cluster on this machine at the pinned
// releases (internal/build/binaries): etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler (StartCluster), with kwok
// playing one node's kubelet status, on a pod network of its own (Network:
// a Linux bridge, one network namespace per pod).
//
// What a container runtime would do stands in, and says which upstream
// behaviour it reproduces and what it does not model:
//
//   - the pods' containers (PodRunner): kwok reports pods Running without
//     running anything, so the pods whose images are upstream programs
//     (Image) run as local processes (Proc) in the pod's network namespace,
//     with the container's command, arguments, environment, volumes and the
//     pod's service-account token;
//   - the Service network: no cluster DNS and no kube-proxy run, so a
//     Service name resolves through each pod's hosts file to the first
//     ready endpoint kube-controller-manager lists for it (ServiceHosts),
//     and kube-apiserver reaches webhooks and conversion through the
//     Services' endpoints (--enable-aggregator-routing).
//
// Package site builds the hub and the spokes' EKS clusters on it.
package kube
