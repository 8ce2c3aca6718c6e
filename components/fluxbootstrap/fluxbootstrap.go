// Package fluxbootstrap is the FluxBootstrap component: Flux on the hub,
// installed by the Flux Operator chart and a FluxInstance, plus the objects
// Pulumi owns so that it controls their order: the Git deploy key Secret,
// the cluster-info ConfigMap, the GitRepository and the root Kustomization.
// It holds Kubernetes resources only (the deploy key is the caller's), so it
// runs as it ships on the Kubernetes provider alone: the real-controller
// suite runs it through the real Pulumi engine (test/e2e, docs/e2e.md).
//
// Destroy order. The root Kustomization is registered last and depends on
// everything its teardown needs, so `pulumi destroy` deletes it first:
//
//   - FluxInstance (and through it the operator's Helm release and the
//     namespace): the controllers must keep running while the root
//     Kustomization is finalized. Deleting a FluxInstance strips Flux's
//     finalizers, which is why the root Kustomization is not the
//     FluxInstance's spec.sync.
//   - GitRepository, the deploy key Secret and the cluster-info ConfigMap:
//     kustomize-controller needs the source and the variables to compute
//     what it prunes.
//   - TeardownAfter (given by the caller): the IRSA roles and policies of
//     Crossplane, External Secrets and Flux, the spoke permissions boundary,
//     the sealing secret and the node group. Crossplane deletes the spokes'
//     AWS resources with its role; the nodes run the controllers.
//
// With deletionPolicy WaitForTermination, kustomize-controller deletes what
// the root Kustomization applied (the child Kustomizations, the claims and
// so every spoke) and removes its finalizer only when all of it is gone;
// Pulumi's delete of the Kustomization waits for that (CustomTimeouts
// Delete), and only then removes the rest of the hub.
package fluxbootstrap

import (
	"fmt"
	"strings"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fluxcontrollers"
	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// Type is the component's Pulumi type token.
const Type = "eks-fleet:index:FluxBootstrap"

// Names and versions of what the component creates.
const (
	Namespace          = "flux-system"
	OperatorChart      = "oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator"
	OperatorRelease    = "flux-operator"
	InstanceName       = "flux"
	InstanceAPIVersion = "fluxcd.controlplane.io/v1"
	Registry           = "ghcr.io/fluxcd"
	// SyncName names the GitRepository, the root Kustomization and the
	// deploy key Secret (Flux's own convention).
	SyncName                = "flux-system"
	GitRepositoryAPIVersion = "source.toolkit.fluxcd.io/v1"
	KustomizationAPIVersion = "kustomize.toolkit.fluxcd.io/v1"
	DeletionPolicy          = "WaitForTermination"
	RoleARNAnnotation       = "eks.amazonaws.com/role-arn"
	WaitForAnnotation       = "pulumi.com/waitFor"
	// KustomizationTimeout bounds the root's wait for what it applied to
	// go: above workload-clusters' timeout (every spoke's teardown), below
	// DefaultRootDeleteTimeout (Pulumi's wait). test/teardown_test.go
	// checks the chain.
	KustomizationTimeout     = "100m"
	KustomizationInterval    = "10m"
	GitRepositoryInterval    = "1m"
	DeployKeyAlgorithm       = "ED25519"
	IdentityKey              = "identity"
	IdentityPubKey           = "identity.pub"
	KnownHostsKey            = "known_hosts"
	DefaultRootDeleteTimeout = 2 * time.Hour
)

// ConcurrentControllers are the hub controllers whose worker count follows
// Args.Concurrency (each has a --concurrent flag; upstream's default is 4
// for kustomize- and helm-controller, 2 for source-controller).
// kustomize-controller waits for health checks and for
// WaitForTermination inside Reconcile, holding a worker per spoke step
// (at the stock 4 workers a commit queues behind every spoke); helm-controller installs the spoke bootstrap's releases;
// source-controller serves every spoke's artifacts.
var ConcurrentControllers = []string{fluxcontrollers.SourceController, fluxcontrollers.KustomizeController, fluxcontrollers.HelmController}

// ClusterSize is the flux-operator's sizing profile of the hub's
// controllers. "large" (flux-operator internal/builder/profiles.go,
// profileClusterSizeLarge) raises kustomize- and helm-controller to 3Gi
// and source-controller to 2Gi, with Helm chart caching; the stock 1Gi
// would not hold Concurrency workers building, health-checking and
// rendering for every spoke at once after a commit. Its own --concurrent
// is overridden by ConcurrencyPatch, which the operator applies after the
// profile.
const ClusterSize = "large"

// RequeueDependency is how soon kustomize-controller looks again at a
// Kustomization whose dependsOn is not ready (upstream default 30s). A
// dependency counts as ready only once it has applied the source's new
// revision, so every commit walks the hub chain again (sources ->
// crossplane -> crossplane-packages -> crossplane-config -> platform-apis
// -> workload-clusters): at 30s per hop a merged claim change waited about
// 3 minutes before it was applied (measured by the real-controller suite);
// at 5s it waits for the health checks only.
const RequeueDependency = "5s"

// RequeueDependencyPatch sets --requeue-dependency on kustomize-controller
// (a FluxInstance kustomize.patches entry).
func RequeueDependencyPatch() pulumi.Map {
	return argPatch(fluxcontrollers.KustomizeController, "--requeue-dependency="+RequeueDependency)
}

// CancelHealthCheckFeatureGate makes kustomize-controller end a health
// check as soon as its Kustomization is queued again (off by default,
// kustomize-controller v1.9.3 internal/features/features.go:50-57,96):
// on a new source revision, a spec change, and its deletion, which adds
// one to metadata.generation (k8s.io/apiserver v0.35.4
// pkg/registry/generic/registry/store.go:1019-1020) and so passes the
// controller's GenerationChangedPredicate
// (internal/controller/kustomization_manager.go:139-155). The cancelled
// reconcile requeues at once (kustomization_controller.go:278-293) and the
// next one finalizes. Without it a deleted step waited for the health
// check it was in to run out: a hub-side step checking a spoke that went
// away held the claim's deletion for the step's timeout (30 minutes for
// -sync), after break glass too, since suspending a step does not end a
// reconcile either (found by the suite's landing run at 8df5160).
const CancelHealthCheckFeatureGate = "CancelHealthCheckOnNewRevision=true"

// CancelHealthCheckPatch sets CancelHealthCheckFeatureGate on
// kustomize-controller (a FluxInstance kustomize.patches entry). Another
// --feature-gates flag adds to the gates set before it, not replaces them
// (fluxcd/pkg/runtime v0.110.1 features/features.go binds it to
// k8s.io/component-base v0.36.2 cli/flag/map_string_bool.go:54-61), as the
// operator's own feature-gate patches rely on (flux-operator v0.59.0
// internal/builder/profiles.go:352-370).
func CancelHealthCheckPatch() pulumi.Map {
	return argPatch(fluxcontrollers.KustomizeController, "--feature-gates="+CancelHealthCheckFeatureGate)
}

// ConcurrencyPatch sets --concurrent on the ConcurrentControllers (a
// FluxInstance kustomize.patches entry; the flux-operator applies it to
// the controllers' Deployments).
func ConcurrencyPatch(n int) pulumi.Map {
	return argPatch("("+strings.Join(ConcurrentControllers, "|")+")", fmt.Sprintf("%s=%d", fluxcontrollers.ConcurrentFlag, n))
}

// argPatch is a FluxInstance kustomize.patches entry that appends arg to
// the first container's args of the Deployments deployments (a name or a
// regular expression, as the operator matches a patch's target) names.
func argPatch(deployments, arg string) pulumi.Map {
	return pulumi.Map{
		"target": pulumi.Map{"kind": pulumi.String("Deployment"), "name": pulumi.String(deployments)},
		"patch":  pulumi.String("- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: " + arg + "\n"),
	}
}

// Components are the Flux controllers the hub runs.
var Components = []string{fluxcontrollers.SourceController, fluxcontrollers.KustomizeController, fluxcontrollers.HelmController, fluxcontrollers.NotificationController}

// Args configures a FluxBootstrap. Children use the Kubernetes provider
// passed with pulumi.Providers / pulumi.Provider on the component.
type Args struct {
	GitURL     string
	GitBranch  string
	GitPath    string // ./manifests/gitops-system/clusters/mgmt
	KnownHosts pulumi.StringInput
	// DeployKey is the Git deploy key Flux reads the repository with. The
	// caller makes it (the hub program: a tls PrivateKey), so that this
	// component holds Kubernetes resources only and runs as it ships on
	// the Kubernetes provider alone.
	DeployKey DeployKey
	// FluxRoleARN is the IRSA role of the Flux controllers that apply onto
	// spokes (serviceaccounts.HubFluxControllers: kustomize-controller and
	// helm-controller).
	FluxRoleARN pulumi.StringInput
	// ClusterInfo fills the cluster-info ConfigMap, every field set.
	ClusterInfo clusterinfo.Values[pulumi.StringInput]
	// ClusterReady is what must exist before anything runs on the cluster
	// (the node group).
	ClusterReady []pulumi.Resource
	// TeardownAfter must outlive the root Kustomization: Flux needs it while
	// it deletes the spokes.
	TeardownAfter []pulumi.Resource
	// Concurrency is --concurrent of the ConcurrentControllers (stack
	// setting fluxConcurrency), at least 1.
	Concurrency int
	// RootDeleteTimeout bounds Pulumi's wait for the root Kustomization's
	// deletion (default 2h).
	RootDeleteTimeout time.Duration
}

// DeployKey is an SSH key pair in OpenSSH encoding; the private half is
// kept secret (pulumi.ToSecret) whatever the caller passes.
type DeployKey struct {
	PrivateKeyOpenSSH pulumi.StringInput
	PublicKeyOpenSSH  pulumi.StringInput
}

// FluxBootstrap is Flux on the hub and its root sync.
type FluxBootstrap struct {
	pulumi.ResourceState

	Namespace     *corev1.Namespace
	Operator      *Release
	Instance      *apiextensions.CustomResource
	GitSecret     *corev1.Secret
	ClusterInfo   *corev1.ConfigMap
	GitRepository *apiextensions.CustomResource
	Root          *apiextensions.CustomResource

	DeployPublicKey pulumi.StringOutput `pulumi:"deployPublicKey"`
}

// RoleARNPatch annotates one controller's service account with its IRSA
// role (a FluxInstance kustomize.patches entry).
func RoleARNPatch(sa serviceaccounts.ServiceAccount, roleARN pulumi.StringInput) pulumi.Map {
	return pulumi.Map{
		"target": pulumi.Map{
			"kind": pulumi.String("ServiceAccount"),
			"name": pulumi.String(sa.Name),
		},
		"patch": pulumi.Sprintf("- op: add\n  path: /metadata/annotations\n  value:\n    %s: %s\n", RoleARNAnnotation, roleARN),
	}
}

// RoleARNPatches annotates every controller in
// serviceaccounts.HubFluxControllers with the Flux IRSA role, one patch
// per service account: kustomize-controller applies the spokes'
// Kustomizations and helm-controller the spoke bootstrap's HelmReleases,
// both through kubeConfig.configMapRef with provider aws.
func RoleARNPatches(roleARN pulumi.StringInput) pulumi.Array {
	var patches pulumi.Array
	for _, sa := range serviceaccounts.HubFluxControllers() {
		patches = append(patches, RoleARNPatch(sa, roleARN))
	}
	return patches
}

// New registers a FluxBootstrap.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*FluxBootstrap, error) {
	if args.GitURL == "" || args.GitBranch == "" || args.GitPath == "" || args.KnownHosts == nil || args.FluxRoleARN == nil ||
		args.DeployKey.PrivateKeyOpenSSH == nil || args.DeployKey.PublicKeyOpenSSH == nil {
		return nil, fmt.Errorf("fluxbootstrap %s: GitURL, GitBranch, GitPath, KnownHosts, FluxRoleARN and DeployKey are required", name)
	}
	if args.Concurrency < 1 {
		return nil, fmt.Errorf("fluxbootstrap %s: Concurrency %d: want at least 1 worker per controller", name, args.Concurrency)
	}
	data := args.ClusterInfo.Map()
	for k, v := range data {
		if v == nil {
			return nil, fmt.Errorf("fluxbootstrap %s: cluster-info variable %s is not set", name, k)
		}
	}
	if args.RootDeleteTimeout == 0 {
		args.RootDeleteTimeout = DefaultRootDeleteTimeout
	}
	c := &FluxBootstrap{}
	if err := ctx.RegisterComponentResource(Type, name, c, opts...); err != nil {
		return nil, fmt.Errorf("register FluxBootstrap %s: %w", name, err)
	}
	parent := pulumi.Parent(c)
	wrap := func(what string, err error) error { return fmt.Errorf("fluxbootstrap %s: %s: %w", name, what, err) }
	meta := func(n string, annotations map[string]string) *metav1.ObjectMetaArgs {
		m := &metav1.ObjectMetaArgs{Name: pulumi.String(n), Namespace: pulumi.String(Namespace)}
		if len(annotations) > 0 {
			m.Annotations = pulumi.ToStringMap(annotations)
		}
		return m
	}

	ns, err := corev1.NewNamespace(ctx, name, &corev1.NamespaceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(Namespace)},
	}, parent, pulumi.DependsOn(args.ClusterReady))
	if err != nil {
		return nil, wrap("namespace", err)
	}
	operator, err := newRelease(ctx, name+"-operator", ReleaseArgs{
		Name:      pulumi.String(OperatorRelease),
		Chart:     pulumi.String(OperatorChart),
		Version:   pulumi.String(versions.FluxOperator),
		Namespace: ns.Metadata.Name().Elem(),
	}, parent, pulumi.DependsOn([]pulumi.Resource{ns}))
	if err != nil {
		return nil, wrap("flux-operator release", err)
	}
	instance, err := apiextensions.NewCustomResource(ctx, name+"-instance", &apiextensions.CustomResourceArgs{
		ApiVersion: pulumi.String(InstanceAPIVersion),
		Kind:       pulumi.String("FluxInstance"),
		// Wait until the controllers run: everything below needs them.
		Metadata: meta(InstanceName, map[string]string{WaitForAnnotation: "condition=Ready"}),
		OtherFields: kubernetes.UntypedArgs{"spec": pulumi.Map{
			"distribution": pulumi.Map{
				"version":  pulumi.String(versions.Flux),
				"registry": pulumi.String(Registry),
			},
			"components": pulumi.ToStringArray(Components),
			"cluster": pulumi.Map{
				"type":          pulumi.String("aws"),
				"size":          pulumi.String(ClusterSize),
				"multitenant":   pulumi.Bool(false),
				"networkPolicy": pulumi.Bool(true),
				"domain":        pulumi.String("cluster.local"),
			},
			"kustomize": pulumi.Map{
				"patches": append(RoleARNPatches(args.FluxRoleARN), ConcurrencyPatch(args.Concurrency), RequeueDependencyPatch(), CancelHealthCheckPatch()),
			},
		}},
	}, parent, pulumi.DependsOn([]pulumi.Resource{operator}))
	if err != nil {
		return nil, wrap("FluxInstance", err)
	}

	secret, err := corev1.NewSecret(ctx, name+"-git", &corev1.SecretArgs{
		Metadata: meta(SyncName, nil),
		Type:     pulumi.String("Opaque"),
		StringData: pulumi.StringMap{
			IdentityKey:    pulumi.ToSecret(args.DeployKey.PrivateKeyOpenSSH).(pulumi.StringOutput),
			IdentityPubKey: args.DeployKey.PublicKeyOpenSSH,
			KnownHostsKey:  args.KnownHosts,
		},
	}, parent, pulumi.DependsOn([]pulumi.Resource{ns}))
	if err != nil {
		return nil, wrap("git secret", err)
	}
	// Flux's watch label: kustomize-controller reconciles every
	// Kustomization that substitutes from cluster-info (the hub's and each
	// spoke's hub-side bootstrap steps) as soon as `pulumi up` changes it,
	// not at its next interval (kustomize-controller v1.9
	// internal/controller/kustomization_manager.go, requestsForConfigDependency).
	// A sealing-key rotation so reaches every cluster's controller at once.
	cm, err := corev1.NewConfigMap(ctx, name+"-cluster-info", &corev1.ConfigMapArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(clusterinfo.Name), Namespace: pulumi.String(clusterinfo.Namespace),
			Labels: pulumi.StringMap{fluxmeta.LabelKeyWatch: pulumi.String(fluxmeta.LabelValueWatchEnabled)}},
		Data: pulumi.StringMap(data),
	}, parent, pulumi.DependsOn([]pulumi.Resource{ns}))
	if err != nil {
		return nil, wrap("cluster-info", err)
	}
	repo, err := apiextensions.NewCustomResource(ctx, name+"-git", &apiextensions.CustomResourceArgs{
		ApiVersion: pulumi.String(GitRepositoryAPIVersion),
		Kind:       pulumi.String("GitRepository"),
		Metadata:   meta(SyncName, nil),
		OtherFields: kubernetes.UntypedArgs{"spec": pulumi.Map{
			"interval":  pulumi.String(GitRepositoryInterval),
			"url":       pulumi.String(args.GitURL),
			"ref":       pulumi.Map{"branch": pulumi.String(args.GitBranch)},
			"secretRef": pulumi.Map{"name": pulumi.String(SyncName)},
		}},
	}, parent, pulumi.DependsOn([]pulumi.Resource{instance, secret}))
	if err != nil {
		return nil, wrap("GitRepository", err)
	}

	// The root Kustomization: created last, deleted first (see the package
	// documentation for each edge).
	rootDeps := []pulumi.Resource{instance, repo, secret, cm}
	rootDeps = append(rootDeps, args.TeardownAfter...)
	root, err := apiextensions.NewCustomResource(ctx, name+"-root", &apiextensions.CustomResourceArgs{
		ApiVersion: pulumi.String(KustomizationAPIVersion),
		Kind:       pulumi.String("Kustomization"),
		Metadata:   meta(SyncName, nil),
		OtherFields: kubernetes.UntypedArgs{"spec": pulumi.Map{
			"interval":       pulumi.String(KustomizationInterval),
			"retryInterval":  pulumi.String("1m"),
			"timeout":        pulumi.String(KustomizationTimeout),
			"path":           pulumi.String(args.GitPath),
			"prune":          pulumi.Bool(true),
			"wait":           pulumi.Bool(true),
			"deletionPolicy": pulumi.String(DeletionPolicy),
			"sourceRef": pulumi.Map{
				"kind": pulumi.String("GitRepository"),
				"name": pulumi.String(SyncName),
			},
			"postBuild": pulumi.Map{
				"substituteFrom": pulumi.Array{pulumi.Map{
					"kind": pulumi.String("ConfigMap"),
					"name": pulumi.String(clusterinfo.Name),
				}},
			},
		}},
	}, parent, pulumi.DependsOn(rootDeps), pulumi.Timeouts(&pulumi.CustomTimeouts{
		Create: "30m",
		Update: "30m",
		Delete: args.RootDeleteTimeout.String(),
	}))
	if err != nil {
		return nil, wrap("root Kustomization", err)
	}

	c.Namespace, c.Operator, c.Instance = ns, operator, instance
	c.GitSecret, c.ClusterInfo, c.GitRepository, c.Root = secret, cm, repo, root
	c.DeployPublicKey = args.DeployKey.PublicKeyOpenSSH.ToStringOutput()
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"deployPublicKey": c.DeployPublicKey,
	}); err != nil {
		return nil, wrap("outputs", err)
	}
	return c, nil
}
