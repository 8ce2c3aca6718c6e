package fleetcmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

// Where a bootstrap Kustomization applies its objects, as `fleet render`
// labels them.
const (
	OnHub   = "hub"
	OnSpoke = "spoke"
)

func (a *app) renderCmd() *cobra.Command {
	bootstrap := true
	c := &cobra.Command{
		Use:   "render NAME",
		Short: "Print everything the hub creates for a cluster, as YAML",
		Long: `Renders the cluster's claim through the WorkloadCluster Composition with the
real composition functions (offline, Crossplane's render), with the hub's
cluster-info values (--cluster-info, default: example values), and prints every
composed resource: network, EKS cluster and node group, IAM roles, OIDC provider,
access entries, and the hub-side objects that bootstrap the spoke.

With --bootstrap (the default) it then prints what each composed Flux
Kustomization applies, built offline as kustomize-controller builds it (the
fleet repository's spoke-bootstrap/ folders, substituted from cluster-info and
the Composition's variables). Each object is preceded by a comment
"# <kustomization> -> hub" or "# <kustomization> -> spoke": spoke means the
Kustomization applies it onto the spoke through its kubeConfig.`,
		Example: `  fleet render payments
  fleet render payments --bootstrap=false
  fleet render payments --cluster-info cluster-info.yaml > payments.rendered.yaml`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.deps.Renderer == nil {
				return &exitError{code: ExitFailed, err: errors.New("render: the renderer (internal/proof/xrender) is not available in this build")}
			}
			t, err := a.openTree()
			if err != nil {
				return err
			}
			c, _, err := a.findClaim(t, args[0])
			if err != nil {
				return err
			}
			info, err := a.info()
			if err != nil {
				return err
			}
			objs, err := a.deps.Renderer.RenderClaim(cmd.Context(), RenderRequest{Tree: t.Root, ClaimPath: t.Path(c.Rel), Info: info})
			if err != nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("rendering %s: %w", c.Rel, err)}
			}
			sort.SliceStable(objs, func(i, j int) bool {
				ki, kj := objs[i].GetAPIVersion()+"/"+objs[i].GetKind(), objs[j].GetAPIVersion()+"/"+objs[j].GetKind()
				if ki != kj {
					return ki < kj
				}
				return objs[i].GetName() < objs[j].GetName()
			})
			for _, o := range objs {
				b, err := yaml.Marshal(o.Object)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "---\n%s", b)
			}
			fmt.Fprintf(a.stderr, "%d object(s) for cluster %s\n", len(objs), args[0])
			if !bootstrap {
				return nil
			}
			return a.renderBootstrap(cmd.Context(), t, objs, info)
		},
	}
	c.Flags().BoolVar(&bootstrap, "bootstrap", true, "also print the objects each composed bootstrap Kustomization applies, each marked \"# <kustomization> -> hub|spoke\"")
	return c
}

// renderBootstrap builds every Flux Kustomization among the composed
// objects the way the offline proof does (internal/proof/kbuild on a copy of the
// tree, substituteFrom the hub's cluster-info) and prints what it applies.
func (a *app) renderBootstrap(ctx context.Context, t *fleettree.Tree, composed []*unstructured.Unstructured, info clusterinfo.Values[string]) error {
	var kss []*kustomizev1.Kustomization
	for _, o := range composed {
		if o.GroupVersionKind() != kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind) {
			continue
		}
		ks := &kustomizev1.Kustomization{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ks); err != nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("bootstrap Kustomization %s: %w", o.GetName(), err)}
		}
		// The hub's GitRepository flux-system is the fleet repository
		// (made by Pulumi); anything else cannot be built offline.
		if ref := ks.Spec.SourceRef; ref.Kind != "GitRepository" || ref.Name != "flux-system" || (ref.Namespace != "" && ref.Namespace != ks.Namespace) {
			fmt.Fprintf(a.stderr, "warning: bootstrap Kustomization %s: source %s %s is not the fleet repository, not built\n", ks.Name, ref.Kind, ref.Name)
			continue
		}
		kss = append(kss, ks)
	}
	if len(kss) == 0 {
		return nil
	}
	// The source is the repository checkout: the tree sits where
	// GITOPS_SYSTEM_PATH places it. kbuild writes into the source
	// while building, so it builds a copy.
	work, err := os.MkdirTemp("", "fleet-render-*")
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	defer os.RemoveAll(work)
	if _, err := kbuild.CopyTree(t.Root, work, info.SystemPath); err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("copy tree: %w", err)}
	}
	vars := kbuild.NewVarClient(xrender.ClusterInfoConfigMap(info), xrender.RedactedHubKeys(info))
	cache := kbuild.NewCache()
	n := 0
	for _, ks := range kss {
		out, err := cache.Build(ctx, work, ks, vars)
		if err != nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("building bootstrap Kustomization %s (path %s): %w", ks.Name, ks.Spec.Path, err)}
		}
		where := OnHub
		if kbuild.TargetCluster(kbuild.Hub, ks) != kbuild.Hub {
			where = OnSpoke
		}
		if len(out) == 0 {
			// Say so, or the Kustomization seems forgotten (e.g. an
			// example spoke's deploy key folder before it is sealed).
			fmt.Fprintf(a.stdout, "---\n# %s -> %s: applies no objects\n", ks.Name, where)
		}
		for _, o := range out {
			b, err := yaml.Marshal(o.Object)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "---\n# %s -> %s\n%s", ks.Name, where, b)
			n++
		}
	}
	fmt.Fprintf(a.stderr, "%d bootstrap object(s) from %d Kustomization(s)\n", n, len(kss))
	return nil
}
