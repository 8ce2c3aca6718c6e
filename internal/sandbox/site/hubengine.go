package site

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/components/managementcluster"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/hub"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// FluxArgs are the arguments the program gave FluxBootstrap in b's run
// (the Kubernetes half's inputs from the AWS half: cluster-info's
// variables, the Flux role, the deploy key), read back from the objects
// the mocks captured, and cfg's settings. The dependencies on AWS
// resources (ClusterReady, TeardownAfter) are left out: those resources
// are not in the engine's program.
func (b *HubBootstrap) FluxArgs(cfg map[string]string) (fluxbootstrap.Args, error) {
	var a fluxbootstrap.Args
	c, errs := stacks.FromValues(stacks.Values(cfg))
	if len(errs) > 0 {
		return a, stacks.Join("mgmt", errs)
	}
	one := func(kind, name string) (*unstructured.Unstructured, error) {
		for _, o := range b.Objects {
			if o.GetKind() == kind && o.GetName() == name {
				return o, nil
			}
		}
		return nil, fmt.Errorf("the program made no %s %s", kind, name)
	}
	info, err := b.ClusterInfo()
	if err != nil {
		return a, err
	}
	inputs := map[string]pulumi.StringInput{}
	for k, v := range info.Map() {
		inputs[k] = pulumi.String(v)
	}
	if a.ClusterInfo, err = clusterinfo.FromMap(inputs); err != nil {
		return a, err
	}
	secret, err := one("Secret", fluxbootstrap.SyncName)
	if err != nil {
		return a, err
	}
	values := map[string]string{}
	for _, k := range []string{fluxbootstrap.IdentityKey, fluxbootstrap.IdentityPubKey, fluxbootstrap.KnownHostsKey} {
		if values[k], err = secretValue(secret, k); err != nil {
			return a, err
		}
	}
	a.GitURL, a.GitBranch, a.GitPath = c.Git.URL, c.Git.Branch, c.Git.Path
	a.KnownHosts = pulumi.String(values[fluxbootstrap.KnownHostsKey])
	a.FluxRoleARN = pulumi.String(info.FluxRoleARN)
	a.DeployKey = fluxbootstrap.DeployKey{
		PrivateKeyOpenSSH: pulumi.String(values[fluxbootstrap.IdentityKey]),
		PublicKeyOpenSSH:  pulumi.String(values[fluxbootstrap.IdentityPubKey]),
	}
	a.Concurrency = c.FluxConcurrency
	return a, nil
}

// ClusterInfo is the cluster-info ConfigMap the program made, as values.
func (b *HubBootstrap) ClusterInfo() (clusterinfo.Values[string], error) {
	for _, o := range b.Objects {
		if o.GetKind() == "ConfigMap" && o.GetName() == clusterinfo.Name {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			return clusterinfo.FromMap(data)
		}
	}
	return clusterinfo.Values[string]{}, fmt.Errorf("the program made no ConfigMap %s", clusterinfo.Name)
}

// KubernetesProgram is the hub program's Kubernetes half as the engine
// runs it: the hub's Kubernetes provider (managementcluster.ProviderArgs,
// on kubeconfig, named by the cluster's ARN) and FluxBootstrap with args,
// under the resource names hub.Build gives them, exporting the deploy key.
func KubernetesProgram(args fluxbootstrap.Args, kubeconfig, clusterARN string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		p, err := kubernetes.NewProvider(ctx, hub.ClusterResource, managementcluster.ProviderArgs(pulumi.String(kubeconfig), pulumi.String(clusterARN)))
		if err != nil {
			return err
		}
		f, err := fluxbootstrap.New(ctx, hub.FluxResource, args, pulumi.Provider(p))
		if err != nil {
			return err
		}
		ctx.Export(hub.OutDeployPublicKey, f.DeployPublicKey)
		return nil
	}
}

// ClusterARN is the hub's EKS cluster ARN by cluster-info's variables.
func ClusterARN(info clusterinfo.Values[string]) string {
	return fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", info.Partition, info.Region, info.AccountID, info.HubName)
}

// CheckApplied compares what the mocks captured with what is on the
// cluster: every field of each captured object must be there with the same
// value (a Secret's stringData as its data). It returns every difference.
func CheckApplied(ctx context.Context, c *kube.Cluster, objs []*unstructured.Unstructured) error {
	var diffs []string
	for _, want := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: want.GetNamespace(), Name: want.GetName()}, got)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s %s/%s: %v", want.GetKind(), want.GetNamespace(), want.GetName(), err))
			continue
		}
		w := want.DeepCopy().Object
		if sd, ok := w["stringData"].(map[string]any); ok {
			data := map[string]any{}
			for k, v := range sd {
				data[k] = base64.StdEncoding.EncodeToString([]byte(fmt.Sprint(v)))
			}
			delete(w, "stringData")
			w["data"] = data
		}
		for _, d := range subsetDiff("", w, got.Object) {
			diffs = append(diffs, fmt.Sprintf("%s %s/%s: %s", want.GetKind(), want.GetNamespace(), want.GetName(), d))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return fmt.Errorf("the engine's objects differ from what the mocks captured:\n%s", strings.Join(diffs, "\n"))
	}
	return nil
}

// subsetDiff lists where want's fields differ from got's (got may have
// more: defaults, status, server-set metadata).
func subsetDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v, want an object", path, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, subsetDiff(path+"."+k, v, g[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %v, want %v", path, got, want)}
		}
		var out []string
		for i := range w {
			out = append(out, subsetDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if got == nil || fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: %v, want %v", path, got, want)}
		}
		return nil
	}
}

// Left lists the objects of objs still on the cluster.
func Left(ctx context.Context, c *kube.Cluster, objs []*unstructured.Unstructured) ([]string, error) {
	var left []string
	for _, o := range objs {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GroupVersionKind())
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}, u)
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		case err != nil:
			return nil, err
		default:
			left = append(left, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
		}
	}
	return left, nil
}
