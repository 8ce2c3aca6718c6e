// Package fluxcontrollers names the Flux controllers' Deployments and the
// flags the fleet sets on them, as the Flux Operator installs them
// (flux-operator v0.59.0 config/data/flux/v<version>/<component>.yaml): the
// hub's program patches them (components/fluxbootstrap) and `fleet status`
// reads them back (internal/fleet/fleetstatus).
package fluxcontrollers

// The controllers' Deployments, named as their components in a
// FluxInstance's spec.components.
const (
	SourceController       = "source-controller"
	KustomizeController    = "kustomize-controller"
	HelmController         = "helm-controller"
	NotificationController = "notification-controller"
)

// Container is the controller's container in each Deployment.
const Container = "manager"

// ConcurrentFlag is the worker count flag of source-, kustomize- and
// helm-controller. KustomizeControllerWorkers is kustomize-controller's
// when no argument sets it (kustomize-controller v1.9.3 main.go:113;
// helm-controller v1.6.2's is 4 too, main.go:120, source-controller
// v1.9.3's 2, main.go:127).
const (
	ConcurrentFlag             = "--concurrent"
	KustomizeControllerWorkers = 4
)
