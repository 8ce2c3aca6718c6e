package proof

import (
	"path"
	"strings"

	xpextv1alpha1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-fleet/eks-fleet/internal/contract/awsgroups"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
)

// providerAWSPrefix names the provider-upjet-aws family's service packages:
// provider-aws-<service> serves <service>.aws.upbound.io and
// <service>.aws.m.upbound.io (provider-upjet-aws
// cluster/images/provider-aws/Makefile builds one package per service).
const providerAWSPrefix = "provider-aws-"

// installedProviders is what a cluster's Crossplane serves: the services
// of the provider-upjet-aws packages its Provider objects install, and the
// managed resource activation policies that switch their kinds on (the
// chart's provider.defaultActivations, which becomes the default
// ManagedResourceActivationPolicy, and any policy in the tree).
type installedProviders struct {
	services    map[string]bool
	activations []xpextv1alpha1.ActivationPolicy
}

// installedOn reads the Provider objects, the crossplane HelmRelease's
// values and the ManagedResourceActivationPolicies built for cluster.
func (r *run) installedOn(cluster string) installedProviders {
	in := installedProviders{services: map[string]bool{}}
	chartSetsActivations := false
	for _, b := range r.w.Results {
		if b.Cluster != cluster {
			continue
		}
		o := b.Object
		gvk := o.GroupVersionKind()
		switch {
		case gvk.Group == "pkg.crossplane.io" && gvk.Kind == "Provider":
			pkg, _, _ := unstructured.NestedString(o.Object, "spec", "package")
			repo, _, _ := strings.Cut(path.Base(pkg), ":")
			repo, _, _ = strings.Cut(repo, "@")
			if svc, ok := strings.CutPrefix(repo, providerAWSPrefix); ok {
				in.services[svc] = true
			}
		case gvk.Group == "helm.toolkit.fluxcd.io" && gvk.Kind == "HelmRelease":
			chart, _, _ := unstructured.NestedString(o.Object, "spec", "chart", "spec", "chart")
			if chart != "crossplane" {
				continue
			}
			acts, ok, _ := unstructured.NestedStringSlice(o.Object, "spec", "values", "provider", "defaultActivations")
			if ok {
				chartSetsActivations = true
				for _, a := range acts {
					in.activations = append(in.activations, xpextv1alpha1.ActivationPolicy(a))
				}
			}
		case gvk.Group == "apiextensions.crossplane.io" && gvk.Kind == "ManagedResourceActivationPolicy":
			acts, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "activate")
			for _, a := range acts {
				in.activations = append(in.activations, xpextv1alpha1.ActivationPolicy(a))
			}
		}
	}
	if !chartSetsActivations {
		// The chart's default (crossplane cluster/charts/crossplane
		// values.yaml: provider.defaultActivations: ["*"]), also when the
		// tree does not install Crossplane itself.
		in.activations = append(in.activations, "*")
	}
	return in
}

// serves says why a composed object of group and plural would not be
// served: no installed package serves its group, or no activation policy
// activates its ManagedResourceDefinition (<plural>.<group>). Only the
// provider-upjet-aws groups are judged; "" means served (or not judged).
func (in installedProviders) serves(group, plural string) string {
	svc, _, ok := awsgroups.Service(group)
	if !ok {
		return ""
	}
	if !in.services[svc] {
		return "no installed Provider serves it (install " + providerAWSPrefix + svc + ")"
	}
	mrd := plural + "." + group
	for _, a := range in.activations {
		if a.Match(mrd) {
			return ""
		}
	}
	return "no ManagedResourceActivationPolicy activates " + mrd + " (add it to the crossplane HelmRelease's provider.defaultActivations)"
}

// checkServed: every managed resource a claim composes is of a kind the
// hub's Crossplane serves, so its provider creates it; on AWS an unserved
// kind never becomes Ready and holds everything that waits for it.
func (r *run) checkServed() {
	in := r.installedOn(kbuild.Hub)
	for _, rc := range r.rendered {
		file := r.fileOf(kbuild.Built{Object: rc.claim})
		for _, o := range rc.kinds {
			gvk := o.GroupVersionKind()
			crd, _, ok := r.v.CRD(gvk.Group, gvk.Kind)
			if !ok {
				continue // the schema check reports unknown kinds
			}
			if why := in.serves(gvk.Group, crd.Spec.Names.Plural); why != "" {
				r.add(CheckRender, file, objectName(o, kbuild.Hub)+" (composed for "+rc.claim.GetName()+")", "%s %s is not served on the hub: %s", gvk.Kind, gvk.Group, why)
			}
		}
	}
}

// oneOfEachKind keeps the first composed object of each kind.
func oneOfEachKind(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	seen := map[schema.GroupVersionKind]bool{}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if gvk := o.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			out = append(out, o)
		}
	}
	return out
}
