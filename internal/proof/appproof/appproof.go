// Package appproof is the offline proof of the app path: every
// AppInfrastructure claim that a cluster's Flux would apply is rendered
// through the app-infra Composition found on that same cluster, with the
// real composition functions (internal/proof/xrender), until the status-driven
// patches settle; every composed resource must validate against its
// provider CRD, the names, boundary, trust and role policy must follow the
// rules of internal/contract/appinfra, and the app's ServiceAccount must carry the
// ARN of the role its claim produced.
package appproof

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/appinfra"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
)

// IRSAAnnotation is the ServiceAccount annotation EKS reads the role from.
const IRSAAnnotation = "eks.amazonaws.com/role-arn"

// maxRounds bounds the status feedback loop: the app-infra Composition
// needs three (table and dead-letter queue; then the queue with its redrive
// target; then the role policy with all three ARNs).
const maxRounds = 8

// RenderSteady renders claim and feeds the composite's status back, the
// way Crossplane persists an XR's status between reconciles, until the set
// of composed resources stops changing. xrender.Render alone observes the
// composed resources but not the composite's own status, which this
// Composition's Required patches read.
func RenderSteady(ctx context.Context, claim *unstructured.Unstructured, defs []*unstructured.Unstructured, info clusterinfo.Values[string]) (*xrender.Result, error) {
	res, err := xrender.Render(ctx, claim, defs, info)
	if err != nil {
		return nil, err
	}
	for round := 1; round < maxRounds; round++ {
		next, err := xrender.Render(ctx, res.Composite.DeepCopy(), defs, info)
		if err != nil {
			return nil, fmt.Errorf("render round %d: %w", round+1, err)
		}
		if sameComposed(res.Composed, next.Composed) {
			return next, nil
		}
		res = next
	}
	return nil, fmt.Errorf("claim %s/%s: composed resources still changing after %d rounds", claim.GetNamespace(), claim.GetName(), maxRounds)
}

func sameComposed(a, b []*unstructured.Unstructured) bool {
	if len(a) != len(b) {
		return false
	}
	idx := map[string]any{}
	for _, u := range a {
		idx[u.GetAnnotations()[appinfra.CompositionResourceNameKey]] = u.Object["spec"]
	}
	for _, u := range b {
		s, ok := idx[u.GetAnnotations()[appinfra.CompositionResourceNameKey]]
		if !ok || !reflect.DeepEqual(s, u.Object["spec"]) {
			return false
		}
	}
	return true
}

// Expectation derives what a claim's composed resources must be from the
// claim and the variables its cluster's Flux substitutes.
func Expectation(claim *unstructured.Unstructured, vars map[string]string) (appinfra.Expect, error) {
	var missing []string
	for _, v := range appinfra.Variables() {
		if vars[v] == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return appinfra.Expect{}, fmt.Errorf("the cluster's substitution variables lack %v (the app-infra API needs %v)", missing, appinfra.Variables())
	}
	sa, _, _ := unstructured.NestedString(claim.Object, "spec", "serviceAccountName")
	keep, _, _ := unstructured.NestedBool(claim.Object, "spec", "table", "deletionProtection")
	return appinfra.Expect{
		KeepTable: keep,
		ClaimName: claim.GetName(), Namespace: claim.GetNamespace(), ServiceAccount: sa,
		SpokeName: vars[spokeinfo.SpokeName], EKSClusterName: vars[spokeinfo.EKSClusterName], AppRolePrefix: vars[spokeinfo.AppRolePrefix],
		BoundaryARN: vars[spokeinfo.BoundaryARN], OIDCIssuer: vars[spokeinfo.OIDCIssuer],
		OIDCProvider: vars[spokeinfo.OIDCProviderARN],
		Partition:    vars[spokeinfo.Partition], Region: vars[spokeinfo.Region], AccountID: vars[spokeinfo.AccountID],
	}, nil
}

// Validate is an API-server-like check of one object (nil when admitted).
type Validate func(ctx context.Context, obj *unstructured.Unstructured) error

// CheckClaim renders one claim with the definitions of its cluster and
// holds the result to the app path's rules. It returns the steady render.
func CheckClaim(ctx context.Context, claim *unstructured.Unstructured, defs []*unstructured.Unstructured,
	vars map[string]string, info clusterinfo.Values[string], validate Validate) (*xrender.Result, error) {
	where := fmt.Sprintf("%s %s/%s", claim.GetKind(), claim.GetNamespace(), claim.GetName())
	e, err := Expectation(claim, vars)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := appinfra.ValidateName(e.EKSClusterName, e.AppRolePrefix, claim.GetNamespace(), claim.GetName()); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	res, err := RenderSteady(ctx, claim, defs, info)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	st := func(k string) string {
		s, _, _ := unstructured.NestedString(res.Composite.Object, "status", k)
		return s
	}
	e.Own = appinfra.AppResources{TableARN: st("tableArn"), QueueARN: st("queueArn"), DeadLetterQueueARN: st("deadLetterQueueArn")}
	var errs []error
	if e.Own.TableARN == "" || e.Own.QueueARN == "" || e.Own.DeadLetterQueueARN == "" {
		errs = append(errs, fmt.Errorf("the composite never reported all ARNs (status %v); warnings: %v",
			res.Composite.Object["status"], res.Warnings))
	}
	if err := appinfra.CheckComposed(res.Composed, e); err != nil {
		errs = append(errs, err)
	}
	if validate != nil {
		for _, u := range res.Composed {
			if err := validate(ctx, u); err != nil {
				errs = append(errs, fmt.Errorf("composed %s %q: %w", u.GetKind(), u.GetAnnotations()[appinfra.CompositionResourceNameKey], err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("%s: %w", where, err)
	}
	return res, nil
}

// ClusterVars returns, per cluster of a walk, the data of the spoke-info
// ConfigMap in flux-system that the walk applied there (the spoke's
// variables; the hub has none).
func ClusterVars(built []kbuild.Built) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, b := range built {
		o := b.Object
		if o.GetAPIVersion() == "v1" && o.GetKind() == "ConfigMap" && o.GetName() == spokeinfo.Name && o.GetNamespace() == "flux-system" {
			// Values that are not strings (a substitution that turned an
			// account id into a number) still name the variable; the
			// schema check reports the ConfigMap itself.
			data, _, _ := unstructured.NestedMap(o.Object, "data")
			vars := map[string]string{}
			for k, v := range data {
				vars[k] = fmt.Sprint(v)
			}
			out[b.Cluster] = vars
		}
	}
	return out
}

// Report is what CheckBuilt found.
type Report struct {
	// Claims lists the claims rendered, as "cluster: namespace/name".
	Claims []string
	Errors []error
}

// CheckBuilt checks every AppInfrastructure claim among the objects of a
// walk: rendered with the XRD, Composition and Functions applied to the
// same cluster, and the ServiceAccount it trusts annotated with its role.
// vars gives each cluster's substitution variables (see ClusterVars).
func CheckBuilt(ctx context.Context, built []kbuild.Built, vars map[string]map[string]string,
	info clusterinfo.Values[string], validate Validate) Report {
	byCluster := map[string][]*unstructured.Unstructured{}
	for _, b := range built {
		byCluster[b.Cluster] = append(byCluster[b.Cluster], b.Object)
	}
	clusters := make([]string, 0, len(byCluster))
	for c := range byCluster {
		clusters = append(clusters, c)
	}
	sort.Strings(clusters)
	var r Report
	for _, cluster := range clusters {
		objs := byCluster[cluster]
		for _, claim := range objs {
			if claim.GetAPIVersion() != appinfra.APIVersion || claim.GetKind() != appinfra.ClaimKind {
				continue
			}
			id := cluster + ": " + claim.GetNamespace() + "/" + claim.GetName()
			r.Claims = append(r.Claims, id)
			// The spoke's own Crossplane makes the app's resources in
			// the spoke's account (spoke-info's, the hub's unless the
			// spoke is in a spoke account).
			in := info
			if a := vars[cluster][spokeinfo.AccountID]; a != "" {
				in.AccountID = a
			}
			res, err := CheckClaim(ctx, claim, objs, vars[cluster], in, validate)
			if err != nil {
				r.Errors = append(r.Errors, fmt.Errorf("%s: %w", cluster, err))
				continue
			}
			if err := checkServiceAccount(objs, claim, res); err != nil {
				r.Errors = append(r.Errors, fmt.Errorf("%s: %w", id, err))
			}
		}
	}
	return r
}

// checkServiceAccount: the ServiceAccount the claim's role trusts exists
// next to the claim and names the role the claim produced.
func checkServiceAccount(objs []*unstructured.Unstructured, claim *unstructured.Unstructured, res *xrender.Result) error {
	sa, _, _ := unstructured.NestedString(claim.Object, "spec", "serviceAccountName")
	roleARN, _, _ := unstructured.NestedString(res.Composite.Object, "status", "roleArn")
	for _, o := range objs {
		if o.GetAPIVersion() == "v1" && o.GetKind() == "ServiceAccount" && o.GetNamespace() == claim.GetNamespace() && o.GetName() == sa {
			if got := o.GetAnnotations()[IRSAAnnotation]; got != roleARN {
				return fmt.Errorf("ServiceAccount %s/%s: %s = %q, the claim's role is %q", o.GetNamespace(), sa, IRSAAnnotation, got, roleARN)
			}
			return nil
		}
	}
	return fmt.Errorf("the claim's role trusts ServiceAccount %s/%s, which nothing on the cluster creates", claim.GetNamespace(), sa)
}

// Walk builds the tree at tree (the repository's manifests/ directory) the
// way the fleet's Flux instances do: the hub from the root Kustomization
// Pulumi creates, each WorkloadCluster claim rendered so that the hub-side
// bootstrap Kustomizations it composes reach the spoke, and from there the
// spoke's own Kustomizations (spoke-tools, the workloads folder, the apps).
// The walk works on a copy; tree is not modified.
func Walk(ctx context.Context, tree string, info clusterinfo.Values[string]) (*kbuild.Walker, error) {
	work, err := os.MkdirTemp("", "appproof-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if err := kbuild.CopySource(tree, work); err != nil {
		return nil, fmt.Errorf("copy %s: %w", tree, err)
	}
	w := kbuild.NewWalker(work, info.GitURL)
	xrender.SeedHub(w, info)
	// What the hub's External Secrets writes for the spokes' sealing-keys
	// step; the app path reads no key.
	w.AddVars(kbuild.Hub, xrender.RedactedHubKeys(info))
	w.Run(ctx)
	var defs []*unstructured.Unstructured
	claimKinds := map[string]bool{}
	for _, b := range w.Results {
		if b.Cluster != kbuild.Hub {
			continue
		}
		defs = append(defs, b.Object)
		if b.Object.GetKind() == "CompositeResourceDefinition" {
			g, _, _ := unstructured.NestedString(b.Object.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(b.Object.Object, "spec", "claimNames", "kind")
			if k != "" {
				claimKinds[g+"/"+k] = true
			}
		}
	}
	var errs []error
	for _, b := range append([]kbuild.Built(nil), w.Results...) {
		if b.Cluster != kbuild.Hub || !claimKinds[b.Object.GroupVersionKind().Group+"/"+b.Object.GetKind()] {
			continue
		}
		res, err := RenderSteady(ctx, b.Object, defs, info)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.AddObjects(kbuild.Hub, "Composition for "+b.Object.GetNamespace()+"/"+b.Object.GetName(), res.Composed)
	}
	w.Run(ctx)
	for _, f := range w.Failures {
		errs = append(errs, fmt.Errorf("Kustomization %s (%s) did not build: %w", f.Kustomization, f.Path, f.Err))
	}
	return w, errors.Join(errs...)
}

// CheckTree walks tree (see Walk) and checks every AppInfrastructure claim
// the fleet would apply (see CheckBuilt). Walk errors come back in the
// report's Errors.
func CheckTree(ctx context.Context, tree string, info clusterinfo.Values[string], validate Validate) (Report, error) {
	w, err := Walk(ctx, tree, info)
	if w == nil {
		return Report{}, err
	}
	r := CheckBuilt(ctx, w.Results, ClusterVars(w.Results), info, validate)
	if err != nil {
		r.Errors = append([]error{err}, r.Errors...)
	}
	return r, nil
}
