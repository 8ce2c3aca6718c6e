package binaries

import (
	"fmt"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// kubeLDFlags stamp the Kubernetes release into the binaries, as upstream's
// release build does (hack/lib/version.sh): without them the API server
// reports v0.0.0-master and discovery clients refuse it.
func kubeLDFlags() string {
	major, minor, _ := strings.Cut(versions.KubernetesRelease, ".")
	minor, _, _ = strings.Cut(minor, ".")
	// In a fixed order: the flags are part of the binary's cache key.
	var b strings.Builder
	for _, kv := range [][2]string{
		{"gitVersion", "v" + versions.KubernetesRelease},
		{"gitMajor", major},
		{"gitMinor", minor},
		{"gitTreeState", "clean"},
		{"buildDate", "1970-01-01T00:00:00Z"},
	} {
		fmt.Fprintf(&b, " -X k8s.io/component-base/version.%s=%s", kv[0], kv[1])
	}
	return strings.TrimSpace(b.String())
}

// The upstream programs the tests run. Each tool module pins the release
// internal/contract/versions names (TestToolModulesPinVersions).
var (
	KubeAPIServer         = Tool{Name: "kube-apiserver", Module: "kubernetes", Package: "k8s.io/kubernetes/cmd/kube-apiserver", LDFlags: kubeLDFlags()}
	KubeControllerManager = Tool{Name: "kube-controller-manager", Module: "kubernetes", Package: "k8s.io/kubernetes/cmd/kube-controller-manager", LDFlags: kubeLDFlags(), After: []string{"kube-apiserver"}}
	KubeScheduler         = Tool{Name: "kube-scheduler", Module: "kubernetes", Package: "k8s.io/kubernetes/cmd/kube-scheduler", LDFlags: kubeLDFlags(), After: []string{"kube-apiserver"}}
	Etcd                  = Tool{Name: "etcd", Module: "etcd", Package: "go.etcd.io/etcd/server/v3"}
	Kwok                  = Tool{Name: "kwok", Module: "kwok", Package: "sigs.k8s.io/kwok/cmd/kwok", After: []string{"pulumi-resource-kubernetes"}}
	SourceController      = Tool{Name: "source-controller", Module: "source-controller", Package: "github.com/fluxcd/source-controller"}
	KustomizeController   = Tool{Name: "kustomize-controller", Module: "kustomize-controller", Package: "github.com/fluxcd/kustomize-controller", After: []string{"source-controller"}}
	HelmController        = Tool{Name: "helm-controller", Module: "helm-controller", Package: "github.com/fluxcd/helm-controller", After: []string{"kustomize-controller"}}
	// Crossplane's release stamps its version (crossplane-runtime
	// pkg/version); without it every package's crossplane.version
	// constraint fails ("invalid semantic version").
	Crossplane = Tool{Name: "crossplane", Module: "crossplane", Package: "github.com/crossplane/crossplane/v2/cmd/crossplane",
		LDFlags: "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=v" + versions.Crossplane,
		After:   []string{"crossplane-render-server"}}
	// RenderServer serves Crossplane's `internal render` command to many
	// requests from one process (tools/crossplane/renderserver).
	RenderServer  = Tool{Name: "crossplane-render-server", Module: "crossplane", Package: "github.com/gitops-fleet/eks-fleet/internal/build/tools/crossplane/renderserver"}
	SealedSecrets = Tool{Name: "sealed-secrets-controller", Module: "sealed-secrets", Package: "github.com/bitnami-labs/sealed-secrets/cmd/controller", After: []string{"crossplane-render-server"}}
	// ExternalSecrets registers only the providers and generators the
	// fleet's manifests use (tools/external-secrets/overlay;
	// TestExternalSecretsRegistersWhatTheFleetUses).
	ExternalSecrets = Tool{Name: "external-secrets", Module: "external-secrets", Package: "github.com/external-secrets/external-secrets",
		Overlay: []Overlay{
			{Module: "github.com/external-secrets/external-secrets", Path: "pkg/provider/register/register.go", File: "overlay/provider/register/register.go"},
			{Module: "github.com/external-secrets/external-secrets", Path: "pkg/generator/register/register.go", File: "overlay/generator/register/register.go"},
		},
		After: []string{"function-patch-and-transform"}}
	PatchAndTransform = Tool{Name: "function-patch-and-transform", Module: "functions/patch-and-transform", Package: "github.com/crossplane-contrib/function-patch-and-transform"}
	AutoReady         = Tool{Name: "function-auto-ready", Module: "functions/auto-ready", Package: "github.com/crossplane/function-auto-ready", After: []string{"crossplane-render-server"}}
	// Pulumi is the Pulumi CLI, the engine (pkg/v3 stamps its version).
	Pulumi = Tool{Name: "pulumi", Module: "pulumi", Package: "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
		LDFlags: "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v" + versions.PulumiCLI,
		After:   []string{"pulumi-resource-kubernetes"}}
	// PulumiKubernetes is the Kubernetes provider plugin, named as the
	// engine looks for it (pulumi-resource-<package>); the version it
	// reports is stamped as upstream's Makefile does. It serves none of
	// the provider's component resources (yaml/v2 ConfigFile and
	// ConfigGroup, helm.sh/v4 Chart, kustomize/v2 Directory; the map of
	// their factories in pkg/provider/provider_construct.go is cut), which
	// the fleet's programs do not use (TestPulumiKubernetesServesThePrograms):
	// ConfigGroup's registration of every Kubernetes kind compiles the whole
	// Go SDK: 296 CPU-seconds for the plugin's cold build without them,
	// 768 with them (docs/e2e.md, Figures).
	PulumiKubernetes = Tool{Name: "pulumi-resource-kubernetes", Module: "pulumi",
		Package: "github.com/gitops-fleet/eks-fleet/internal/build/tools/pulumi",
		LDFlags: "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=" + versions.PulumiKubernetesProvider,
		Embed: []ModuleFile{
			{Module: "github.com/pulumi/pulumi-kubernetes/provider/v4", Path: "cmd/pulumi-resource-kubernetes/schema.json", As: "schema.json"},
			{Module: "github.com/pulumi/pulumi-kubernetes/provider/v4", Path: "cmd/pulumi-resource-kubernetes/terraform-mapping.json", As: "terraform-mapping.json"},
		},
		Overlay: []Overlay{
			{Module: "github.com/pulumi/pulumi-kubernetes/provider/v4", Path: "pkg/provider/provider_construct.go", Map: "resourceProviders"},
		}}
)

// All lists every tool, longest cold build first (seconds on the 2-core
// CI machine, one build at a time, 28 Nov 2026), so that builds run side by
// side (BuildAll) end together rather than behind one long build. A tool
// that reuses another's compiled packages (After) comes after it, where
// the other is likely built by the time a build slot frees: tool modules
// that share packages require the same versions of them
// (TestAfterSharesModules), and the second build then compiles only what
// it has of its own (1 Dec: External Secrets 26 s after
// function-patch-and-transform in one build cache, 120 s alone).
func All() []Tool {
	return []Tool{
		PulumiKubernetes,      // 193 on 1 Dec, without its component resources (503 with them)
		KubeAPIServer,         // 325
		Pulumi,                // 75, after PulumiKubernetes (the engine they share); early, since a unit test (components/deleteguard) runs it
		SourceController,      // 246
		RenderServer,          // 216
		PatchAndTransform,     // 168 (96 on 1 Dec, the machine otherwise idle)
		KustomizeController,   // 166 alone; after SourceController
		Kwok,                  // 124 alone; after PulumiKubernetes
		HelmController,        // 93 alone; after KustomizeController
		Crossplane,            // 81, after RenderServer (one module)
		ExternalSecrets,       // 120 alone on 30 Nov (its AWS provider only); 26 after PatchAndTransform
		AutoReady,             // 84 alone; after RenderServer
		SealedSecrets,         // 70 alone; after RenderServer
		KubeControllerManager, // 80, after KubeAPIServer
		Etcd,                  // 60
		KubeScheduler,         // 8, after KubeAPIServer
	}
}
