package compose

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/deploykey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// Hub-side spoke bootstrap: the kubeconfig ConfigMap Flux reaches the spoke
// with (provider aws + cluster ARN: short-lived tokens from the hub's Flux
// IRSA role, nothing stored), one hub Kustomization per spoke-bootstrap step
// chained with dependsOn, and the Usages that make teardown run the chain in
// reverse.

// Objects and API versions of the bootstrap.
const (
	BootstrapNamespace = "flux-system" // the hub's Flux namespace
	KustomizationAPI   = "kustomize.toolkit.fluxcd.io/v1"
	UsageAPI           = protectionV1
	// KubeconfigKey is the composition-resource-name of the ConfigMap.
	KubeconfigKey = "kubeconfig"
	// StepKeyPrefix starts every bootstrap Kustomization's
	// composition-resource-name: bootstrap-<part>.
	StepKeyPrefix = "bootstrap-"
	// Composition-resource-names of objects this file reads back (k9c's).
	vpcKey     = "vpc"
	clusterKey = "cluster"
	// Metadata-name suffixes of cluster-scoped objects the bootstrap holds.
	nodeGroupPart   = "nodes"
	fluxAccessPart  = "flux"
	cantSeeKeyHint  = "fleet cluster add"
	deletionOrphan  = "Orphan"
	deletionWaitFor = "WaitForTermination"
)

// BootstrapName is the metadata name of a spoke's bootstrap object part
// (a step's Part, or KubeconfigKey): <spoke>-<part>.
func BootstrapName(spoke, part string) string { return spoke + "-" + part }

// Step is one hub Kustomization that bootstraps a spoke. Its metadata name
// is BootstrapName(spoke, Part); it depends on the step before it.
type Step struct {
	Part string
	// Path below GITOPS_SYSTEM_PATH; empty for the deploy-key step, which
	// applies gitops-workloads/clusters/<spoke>/flux-system.
	Path string
	// Remote steps apply onto the spoke (kubeConfig); local steps hold
	// HelmReleases that live on the hub and install onto the spoke.
	Remote bool
	// Release is the name, after "<spoke>-", of the HelmRelease a hub-side
	// step applies (in flux-system): it installs onto the spoke.
	Release string
	Timeout string
	// HubKeys steps also substitute the hub's sealing keys
	// (sealingkey.HubSecret).
	HubKeys bool
	// RetryInterval is how soon a failed reconcile is retried (default
	// defaultRetryInterval).
	RetryInterval  string
	DeletionPolicy string
	Wait           bool
	// HealthChecks name objects (on the target cluster) that must be
	// healthy; with Wait false they are the only ones checked.
	HealthChecks     []Object
	HealthCheckExprs []Object
}

func readyExpr(apiVersion, kind, failed string) Object {
	o := Object{"apiVersion": apiVersion, "kind": kind,
		"current": "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"}
	if failed != "" {
		o["failed"] = failed
	}
	return o
}

// hubStepTimeout is the timeout of the steps that run on the hub: a
// HelmRelease's own install timeout (helm-controller's default, 5m), so a
// health check gives up when the install it waits for does.
const hubStepTimeout = "5m"

// defaultRetryInterval is a step's retryInterval unless it sets its own.
const defaultRetryInterval = "1m"

// DeployKeyPart is the step that applies the spoke's sealed deploy key.
const DeployKeyPart = "deploy-key"

// SealingKeysPart is the step that applies the sealing keys on the spoke.
const SealingKeysPart = "sealing-keys"

// sealedSecretsCannotDecrypt is the Sealed Secrets controller's unseal
// error when no key it holds opens the secret (sealed-secrets
// pkg/crypto/crypto.go:84, HybridDecrypt); the controller writes it as the
// message of the SealedSecret's Synced=False condition
// (pkg/controller/controller.go:488-505).
const sealedSecretsCannotDecrypt = "no key could decrypt secret"

// failedDeployKey is how kustomize-controller reports a health check
// whose failed expression matched (fluxcd/pkg/ssa manager_wait.go:180,
// "<Kind>/<namespace>/<name> status: 'Failed'", in the Ready message).
var failedDeployKey = "SealedSecret/" + deploykey.SecretNamespace + "/" + deploykey.SecretName + " status: 'Failed'"

// sealedSecretInventoryID is the deploy key's id in a Kustomization
// inventory (namespace_name_group_kind).
var sealedSecretInventoryID = deploykey.SecretNamespace + "_" + deploykey.SecretName + "_bitnami.com_SealedSecret"

// BootstrapSteps returns the steps in apply order (teardown is the reverse).
// Remote steps Orphan on deletion (the cluster goes anyway), except
// workloads: it is deleted first and waited for, so the spoke's own
// Crossplane deletes the apps' AWS resources while the cluster still runs.
func BootstrapSteps() []Step {
	ref := func(apiVersion, kind string) Object {
		return Object{"apiVersion": apiVersion, "kind": kind, "name": deploykey.SecretName, "namespace": deploykey.SecretNamespace}
	}
	return []Step{
		// The sealing keys, from the hub: no spoke holds a credential
		// that reads them (sealingkey.HubSecret).
		{Part: SealingKeysPart, Path: "spoke-bootstrap/sealing-keys", Remote: true, HubKeys: true, Timeout: "10m", DeletionPolicy: deletionOrphan, Wait: true},
		// The hub-side steps (HelmReleases installing onto the spoke) time
		// out at hubStepTimeout: a health check that runs out is retried
		// a retryInterval later, so a slow first install costs at most
		// that minute, while a claim deleted during a health check waits
		// for it to end (kustomize-controller v1.9.3 cancels none for a
		// deletion), and the bound after break glass is a chain of them.
		{Part: "sealed-secrets", Path: "spoke-bootstrap/sealed-secrets", Release: "sealed-secrets", Timeout: hubStepTimeout, DeletionPolicy: deletionWaitFor, Wait: true},
		{Part: "flux-operator", Path: "spoke-bootstrap/flux-operator", Release: "flux-operator", Timeout: hubStepTimeout, DeletionPolicy: deletionWaitFor, Wait: true},
		{Part: "flux", Path: "spoke-bootstrap/flux", Remote: true, Timeout: "15m", DeletionPolicy: deletionOrphan, Wait: true,
			HealthCheckExprs: []Object{readyExpr("fluxcd.controlplane.io/v1", "FluxInstance", "")}},
		// With wait: true kustomize-controller checks only what
		// it applied, so an empty deploy-key folder went Ready. wait: false
		// with healthChecks checks the named objects even when the
		// inventory is empty: a spoke without its key stops here.
		{Part: DeployKeyPart, Remote: true, Timeout: "10m", DeletionPolicy: deletionOrphan, Wait: false,
			HealthChecks: []Object{ref("bitnami.com/v1alpha1", "SealedSecret"), ref("v1", "Secret")},
			HealthCheckExprs: []Object{{"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret",
				"current": "status.conditions.exists(c, c.type == 'Synced' && c.status == 'True')",
				"failed":  "status.conditions.exists(c, c.type == 'Synced' && c.status == 'False' && c.message.contains('" + sealedSecretsCannotDecrypt + "'))"}}},
		{Part: "sync", Path: "spoke-bootstrap/sync", Remote: true, Timeout: "30m", DeletionPolicy: deletionOrphan, Wait: true},
		// timeout bounds the wait for the spoke's own workloads
		// Kustomization (timeout 20m) to finish pruning at deletion.
		{Part: "workloads", Path: "spoke-bootstrap/workloads", Remote: true, Timeout: "25m", DeletionPolicy: deletionWaitFor, Wait: false},
	}
}

// BreakGlassParts are the steps whose finalizer needs the spoke's API
// (remote, and deletionPolicy prunes): when the spoke is unreachable their
// deletion retries forever (kustomize-controller v1.9.3 finalize returns
// GetClient/deleteObjects errors without a time limit; only the wait after
// a successful delete is bounded by spec.timeout). Suspending them makes
// the finalizer skip pruning (finalizerShouldDeleteResources).
func BreakGlassParts() []string {
	var out []string
	for _, s := range BootstrapSteps() {
		if s.Remote && s.DeletionPolicy != deletionOrphan {
			out = append(out, s.Part)
		}
	}
	return out
}

// BreakGlassReleases are the HelmReleases (names after "<spoke>-", in
// flux-system) of the hub-side steps: deleted while the spoke cannot be
// reached, each waits for an uninstall that cannot happen, and its step
// waits for it until its timeout (UnreachableTeardownBound). Suspended, a
// release is deleted without the uninstall (helm-controller v1.6.2
// internal/controller/helmrelease_controller.go:452-463, reconcileDelete),
// which also leaves its HelmChart (flux-system-<release name>: api
// v2/helmrelease_types.go:1580, GetHelmChartName; owned by labels only, so
// nothing garbage-collects it).
func BreakGlassReleases() []string {
	var out []string
	for _, s := range BootstrapSteps() {
		if s.Release != "" {
			out = append(out, s.Release)
		}
	}
	return out
}

// UnreachableTeardownBound is how long the rest of a spoke's bootstrap
// takes to go once the break-glass steps are suspended and the spoke is
// unreachable, if the hub-side releases (BreakGlassReleases) are not: the
// hub-side steps that wait (WaitForTermination) give up after their
// timeout, each once the steps holding it are gone (BootstrapUsages), so
// the bound is the longest such path; their HelmReleases are uninstalled
// without the spoke once the kubeconfig is gone (helm-controller v1.6.2
// skips the uninstall on NotFound); remote Orphan steps do not call the
// spoke.
func UnreachableTeardownBound() (time.Duration, error) {
	wait := map[string]time.Duration{}
	for _, s := range BootstrapSteps() {
		if s.Remote || s.DeletionPolicy == deletionOrphan {
			continue
		}
		d, err := time.ParseDuration(s.Timeout)
		if err != nil {
			return 0, fmt.Errorf("step %s timeout %q: %w", s.Part, s.Timeout, err)
		}
		wait["spoke-"+s.Part] = d
	}
	// holders[x]: the steps whose deletion x waits for.
	holders := map[string][]string{}
	for _, u := range BootstrapUsages("spoke") {
		holders[u.Of.Name] = append(holders[u.Of.Name], u.By.Name)
	}
	done := map[string]time.Duration{}
	var finish func(step string, depth int) (time.Duration, error)
	finish = func(step string, depth int) (time.Duration, error) {
		if d, ok := done[step]; ok {
			return d, nil
		}
		if depth > len(BootstrapSteps()) {
			return 0, fmt.Errorf("the bootstrap's holds form a cycle through %s", step)
		}
		var start time.Duration
		for _, by := range holders[step] {
			d, err := finish(by, depth+1)
			if err != nil {
				return 0, err
			}
			start = max(start, d)
		}
		done[step] = start + wait[step]
		return done[step], nil
	}
	var total time.Duration
	for _, s := range BootstrapSteps() {
		d, err := finish("spoke-"+s.Part, 0)
		if err != nil {
			return 0, err
		}
		total = max(total, d)
	}
	return total, nil
}

// BootstrapIn is what the bootstrap reads besides Params.
type BootstrapIn struct {
	// SystemPath is GITOPS_SYSTEM_PATH (the function input gitopsSystemPath).
	SystemPath string
	// Observed composed resources by composition-resource-name.
	Observed map[string]Object
}

// Notice is an XR condition the bootstrap reports; the adapter sets it,
// and one that needs the operator (Warn) is also a warning result (an event
// on the XR and the claim).
type Notice struct {
	Type            string
	Status, Warn    bool
	Reason, Message string
}

// DeployKeyCondition is the XR condition type that says whether the spoke's
// deploy key reached the spoke. It is set once the deploy-key
// step is observed.
const DeployKeyCondition = "DeployKeyReady"

// Bootstrap composes the kubeconfig, the bootstrap Kustomizations and the
// Usages among them. Until AWS reports the VPC ID, the cluster ARN and the
// OIDC issuer it composes nothing new (the Composition's Required policy);
// objects already observed keep their last values.
func Bootstrap(p Params, in BootstrapIn) (map[string]Object, []Notice, error) {
	if p.Spoke == "" || p.Input.HubName == "" {
		return nil, nil, fmt.Errorf("spoke name (claim label) and hub name (function input hubName) are required")
	}
	if in.SystemPath == "" {
		return nil, nil, fmt.Errorf("function input gitopsSystemPath is empty (Flux substitutes ${%s} from cluster-info)", clusterinfo.SystemPath)
	}
	name := func(part string) string { return BootstrapName(p.Spoke, part) }
	vars, ok := bootstrapVars(p, in.Observed)
	out := map[string]Object{}
	keep := func(key string) bool { _, seen := in.Observed[key]; return ok || seen }

	if keep(KubeconfigKey) {
		out[KubeconfigKey] = Object{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": Object{"name": name(KubeconfigKey), "namespace": BootstrapNamespace},
			"data":     vars.kubeconfigData()}
	}
	steps := BootstrapSteps()
	for i, s := range steps {
		key := StepKeyPrefix + s.Part
		if !keep(key) {
			continue
		}
		spec := Object{
			"interval": "10m", "retryInterval": cmp.Or(s.RetryInterval, defaultRetryInterval), "timeout": s.Timeout,
			"sourceRef": Object{"kind": "GitRepository", "name": "flux-system"},
			"prune":     true, "deletionPolicy": s.DeletionPolicy, "wait": s.Wait,
			"postBuild": Object{
				"substitute":     vars.substitute,
				"substituteFrom": []any{Object{"kind": "ConfigMap", "name": clusterinfo.Name}},
			},
		}
		if s.HubKeys {
			from := spec["postBuild"].(Object)
			from["substituteFrom"] = append(from["substituteFrom"].([]any), Object{"kind": "Secret", "name": sealingkey.HubSecret})
		}
		if s.Path != "" {
			spec["path"] = "./" + in.SystemPath + "/" + s.Path
		} else {
			spec["path"] = "./" + in.SystemPath + "/../gitops-workloads/clusters/" + p.Spoke + "/flux-system"
		}
		if s.Remote {
			spec["kubeConfig"] = Object{"configMapRef": Object{"name": name(KubeconfigKey)}}
		}
		if i > 0 {
			spec["dependsOn"] = []any{Object{"name": name(steps[i-1].Part)}}
		}
		if len(s.HealthChecks) > 0 {
			spec["healthChecks"] = toAny(s.HealthChecks)
		}
		if len(s.HealthCheckExprs) > 0 {
			spec["healthCheckExprs"] = toAny(s.HealthCheckExprs)
		}
		out[key] = Object{"apiVersion": KustomizationAPI, "kind": "Kustomization",
			"metadata": Object{"name": name(s.Part), "namespace": BootstrapNamespace},
			"spec":     spec}
	}
	for k, u := range bootstrapUsages(p.Spoke, steps) {
		out[k] = u
	}
	for k, o := range retiringSteps(p.Spoke, in.Observed) {
		out[k] = o
	}
	var notes []Notice
	if n, seen := deployKeyNotice(p.Spoke, in.Observed); seen {
		notes = append(notes, n)
	}
	return out, notes, nil
}

type bootVars struct {
	clusterARN string
	// address and caPEM are the spoke API server's endpoint and CA, set for
	// a spoke in another account only (remoteAccess).
	address, caPEM string
	substitute     Object
}

// kubeconfigData is the kubeconfig ConfigMap's data (fluxcd/pkg/apis/meta
// KubeConfigKey*). For a spoke in the hub's account, Flux's aws provider
// reads the endpoint and CA with eks:DescribeCluster under the hub's Flux
// role. For a spoke in another account it cannot (EKS serves a cluster
// only to its own account's principals), so the ConfigMap carries them:
// fluxcd/pkg/auth v0.54.1 aws/provider.go:351-377 calls DescribeCluster
// only when the address or the CA is missing, and the token it then
// presigns (GetCallerIdentity under the hub's Flux role, with the
// cluster's name) is accepted by the spoke's access entry for that role,
// whatever account the role is in.
func (v bootVars) kubeconfigData() Object {
	d := Object{meta.KubeConfigKeyProvider: "aws", meta.KubeConfigKeyCluster: v.clusterARN}
	if v.address != "" {
		d[meta.KubeConfigKeyAddress] = v.address
		d[meta.KubeConfigKeyCACert] = v.caPEM
	}
	return d
}

// remoteAccess reads the API server's endpoint and CA (PEM) from the
// observed cluster, else from the kubeconfig composed before (they never
// change once AWS reported them).
func remoteAccess(obs map[string]Object) (address, caPEM string) {
	address = str(obs[clusterKey], "status", "atProvider", "endpoint")
	if cas, _ := field(obs[clusterKey], "status", "atProvider", "certificateAuthority").([]any); len(cas) > 0 {
		if b, err := base64.StdEncoding.DecodeString(str(cas[0], "data")); err == nil {
			caPEM = string(b)
		}
	}
	if address == "" || caPEM == "" {
		address = str(obs[KubeconfigKey], "data", meta.KubeConfigKeyAddress)
		caPEM = str(obs[KubeconfigKey], "data", meta.KubeConfigKeyCACert)
	}
	return address, caPEM
}

// bootstrapVars are the postBuild.substitute values (internal/contract/spokeinfo).
// ok is false while AWS has not reported the VPC, the cluster ARN or the
// issuer; observed objects then keep what they were composed with.
func bootstrapVars(p Params, obs map[string]Object) (bootVars, bool) {
	vpcID := str(obs[vpcKey], "status", "atProvider", "id")
	arn := str(obs[clusterKey], "status", "atProvider", "arn")
	issuer := ""
	if ids, _ := field(obs[clusterKey], "status", "atProvider", "identity").([]any); len(ids) > 0 {
		if oidc, _ := field(ids[0], "oidc").([]any); len(oidc) > 0 {
			issuer = strings.TrimPrefix(str(oidc[0], "issuer"), "https://")
		}
	}
	// Fallback: what the first step was composed with (values never change
	// once AWS has reported them).
	prev, _ := field(obs[StepKeyPrefix+BootstrapSteps()[0].Part], "spec", "postBuild", "substitute").(map[string]any)
	if vpcID == "" {
		vpcID, _ = prev[spokeinfo.VPCID].(string)
	}
	if issuer == "" {
		issuer, _ = prev[spokeinfo.OIDCIssuer].(string)
	}
	if arn == "" {
		arn = str(obs[KubeconfigKey], "data", "cluster")
	}
	b := spokeinfo.Bootstrap[string]{
		ClusterName:       p.Spoke,
		EKSClusterName:    spokeiam.ClusterName(p.env(), p.Spoke),
		Region:            p.Spec.Region,
		VPCID:             vpcID,
		OIDCIssuer:        issuer,
		CrossplaneRoleARN: spokeiam.RoleARN(p.env(), p.Spoke, spokeiam.RoleCrossplane),
		LBCRoleARN:        spokeiam.RoleARN(p.env(), p.Spoke, spokeiam.RoleLBC),
		AppRolePrefix:     spokeiam.AppRolePrefix(p.env(), p.Spoke),
	}
	sub := Object{spokeinfo.Quote: spokeinfo.QuoteValue}
	for k, v := range b.Map() {
		sub[k] = v
	}
	if p.Spec.Account != "" {
		// spokeinfo.AccountNames: what the hub's cluster-info says of its
		// own account, said of the spoke's.
		sub[spokeinfo.AccountID] = p.Spec.Account
		sub[spokeinfo.BoundaryARN] = p.env().BoundaryARN()
	}
	v := bootVars{clusterARN: arn, substitute: sub}
	ok := vpcID != "" && issuer != "" && arn != ""
	if p.Spec.Account != "" {
		v.address, v.caPEM = remoteAccess(obs)
		ok = ok && v.address != "" && v.caPEM != ""
	}
	return v, ok
}

// Steps of spokes bootstrapped before the hub handed them the sealing keys:
// the spoke's own External Secrets (a hub-side HelmRelease) read the keys
// with the spoke's -eso role, and its ExternalSecrets (a remote step) wrote
// them under the hub's Secret names.
const (
	retiredESOPart   = "eso-controller"
	retiredStorePart = "secret-store"
	// retiredESORelease is the HelmRelease eso-controller applied on the
	// hub, installing External Secrets onto the spoke.
	retiredESORelease = "external-secrets"
)

// RetiredParts are the retired steps, in the order they were applied.
func RetiredParts() []string { return []string{retiredESOPart, retiredStorePart} }

// RetiredBreakGlass are what break glass must also release on a spoke
// whose retired steps are still kept (retiringSteps; a spoke bootstrapped
// before function v0.2.0 that became unreachable before its sealing-keys
// step was Ready): the remote step secret-store, kept with deletionPolicy
// Delete, whose finalizer needs the spoke, and eso-controller's hub-side
// HelmRelease (names after "<spoke>-"). Elsewhere they do not exist, and
// the commands for them find nothing.
func RetiredBreakGlass() (parts, releases []string) {
	return []string{retiredStorePart}, []string{retiredESORelease}
}

// retiringSteps keeps a spoke's retired steps, as they were observed, until
// the keys cannot be lost with them, and retires them in an order that
// leaves nothing behind on the spoke:
//  1. both stay until the sealing-keys step is Ready: the keys are on the
//     spoke under names of their own (sealingkey.SpokeSecretName), which the
//     garbage collector does not delete with the ExternalSecrets that own
//     the old names;
//  2. secret-store goes first, pruning (deletionPolicy Delete, set while it
//     is kept) its ExternalSecrets and store while External Secrets still
//     runs to remove their finalizers. It applied the Namespace
//     sealed-secrets too, which the sealing-keys step has re-applied with
//     its own owner labels, so the prune skips it (kustomize-controller
//     v1.9.3 internal/controller/kustomization_controller.go:1407-1416,
//     deleteObjects: Inclusions are the deleted Kustomization's owner
//     labels);
//  3. eso-controller goes once secret-store is gone: its HelmRelease
//     uninstalls External Secrets from the spoke (WaitForTermination).
//
// A kept step still reads a path the tree no longer has, so it fails to
// build and applies nothing; its inventory is what its deletion prunes. It
// keeps the kubeconfig (a Usage, as the first step's) while it exists.
func retiringSteps(spoke string, obs map[string]Object) map[string]Object {
	out := map[string]Object{}
	keysReady := ConditionTrue(obs[StepKeyPrefix+SealingKeysPart], "Ready")
	kept := func(part, deletionPolicy string) bool {
		o, seen := obs[StepKeyPrefix+part]
		if !seen {
			return false
		}
		// Kept as observed: reading it as a Step it no longer is would
		// change what its deletion does.
		spec, _ := field(o, "spec").(map[string]any)
		spec = runtime.DeepCopyJSON(spec)
		if deletionPolicy != "" {
			spec["deletionPolicy"] = deletionPolicy
		}
		out[StepKeyPrefix+part] = Object{"apiVersion": KustomizationAPI, "kind": "Kustomization",
			"metadata": Object{"name": BootstrapName(spoke, part), "namespace": BootstrapNamespace},
			"spec":     spec}
		return true
	}
	if !keysReady {
		kept(retiredStorePart, "Delete")
	}
	// External Secrets stays exactly as long as the store step exists.
	_, storeSeen := obs[StepKeyPrefix+retiredStorePart]
	if storeSeen && kept(retiredESOPart, "") {
		u := Usage{Key: "usage-" + KubeconfigKey + "-by-" + retiredESOPart, Name: spoke + "-uses-" + KubeconfigKey + "-by-" + retiredESOPart,
			Of: Ref{APIVersion: "v1", Kind: "ConfigMap", Name: BootstrapName(spoke, KubeconfigKey)},
			By: Ref{APIVersion: KustomizationAPI, Kind: "Kustomization", Name: BootstrapName(spoke, retiredESOPart)}}
		for k, o := range usageObjects([]Usage{u}) {
			out[k] = o
		}
	}
	return out
}

// Usage names one hold: Of may not be deleted while By exists.
type Usage struct {
	Key, Name string
	Of, By    Ref
}

// Ref is a held or holding object.
type Ref struct {
	APIVersion, Kind, Name string
	// ClusterScoped objects are named with namespace "" from a namespaced
	// Usage (Crossplane v2.2.1 finder.go derefs an unset namespace to the
	// Usage's own).
	ClusterScoped bool
}

// BootstrapUsages returns the holds among the bootstrap objects and on what
// they need. Teardown runs in three waves, each one Usage poll after the
// one before (Crossplane re-checks a held object's users every 30 s:
// crossplane v2.4.0 internal/controller/protection/usage/reconciler.go:58,
// waitPollInterval), where a chain of every step held by the next took a
// poll per step:
//  1. workloads, which holds every other step: the spoke's own Flux prunes
//     the apps, and its Crossplane deletes their AWS resources, while
//     everything else still runs;
//  2. every other step but the first, which is held by each of them that
//     still calls the spoke when deleted (not Orphan);
//  3. the first step, which holds the kubeconfig, the node group and the
//     hub's Flux access to the spoke (its EKS add-ons are held with the
//     node group, Holds).
func BootstrapUsages(spoke string) []Usage {
	steps := BootstrapSteps()
	ks := func(part string) Ref {
		return Ref{APIVersion: KustomizationAPI, Kind: "Kustomization", Name: BootstrapName(spoke, part)}
	}
	hold := func(of, by string) Usage {
		return Usage{Key: "usage-" + of + "-by-" + by, Name: spoke + "-uses-" + of + "-by-" + by, Of: ks(of), By: ks(by)}
	}
	first, last := steps[0].Part, steps[len(steps)-1].Part
	var out []Usage
	for _, s := range steps[1 : len(steps)-1] {
		out = append(out, hold(s.Part, last))
	}
	for _, s := range steps[1 : len(steps)-1] {
		if s.DeletionPolicy != deletionOrphan {
			out = append(out, hold(first, s.Part))
		}
	}
	for _, h := range []struct {
		part string
		of   Ref
	}{
		{KubeconfigKey, Ref{APIVersion: "v1", Kind: "ConfigMap", Name: spoke + "-" + KubeconfigKey}},
		{nodeGroupPart, Ref{APIVersion: eksV2, Kind: "NodeGroup", Name: spoke + "-" + nodeGroupPart, ClusterScoped: true}},
		{"flux-access", Ref{APIVersion: eksV1, Kind: "AccessPolicyAssociation", Name: spoke + "-" + fluxAccessPart, ClusterScoped: true}},
	} {
		out = append(out, Usage{Key: "usage-" + h.part + "-by-" + first, Name: spoke + "-uses-" + h.part + "-by-" + first, Of: h.of, By: ks(first)})
	}
	return out
}

func bootstrapUsages(spoke string, _ []Step) map[string]Object {
	return usageObjects(BootstrapUsages(spoke))
}

// usageObjects composes Usages in the bootstrap's namespace.
func usageObjects(us []Usage) map[string]Object {
	out := map[string]Object{}
	for _, u := range us {
		// Explicit, as for every namespaced Usage's of (usages.go): "" for a
		// cluster-scoped object, else the Usage's own namespace (the default
		// Crossplane would use anyway).
		of := Object{"name": u.Of.Name, "namespace": BootstrapNamespace}
		if u.Of.ClusterScoped {
			of["namespace"] = ""
		}
		out[u.Key] = Object{"apiVersion": UsageAPI, "kind": "Usage",
			"metadata": Object{"name": u.Name, "namespace": BootstrapNamespace},
			"spec": Object{
				"replayDeletion": true,
				"of":             Object{"apiVersion": u.Of.APIVersion, "kind": u.Of.Kind, "resourceRef": of},
				"by":             Object{"apiVersion": u.By.APIVersion, "kind": u.By.Kind, "resourceRef": Object{"name": u.By.Name}},
			}}
	}
	return out
}

// deployKeyNotice reports a missing or unreadable deploy key on a running hub: the deploy-key step
// was observed, is not Ready and applied no SealedSecret flux-system. seen
// is false until the step is observed.
func deployKeyNotice(spoke string, obs map[string]Object) (n Notice, seen bool) {
	o, seen := obs[StepKeyPrefix+DeployKeyPart]
	if !seen {
		return Notice{}, false
	}
	if ConditionTrue(o, "Ready") {
		return Notice{Type: DeployKeyCondition, Status: true, Reason: "Available"}, true
	}
	if strings.Contains(conditionMessage(o, "Ready"), failedDeployKey) {
		return Notice{
			Type:   DeployKeyCondition,
			Warn:   true,
			Reason: "CannotDecrypt",
			Message: fmt.Sprintf("spoke %s: the spoke's Sealed Secrets cannot decrypt gitops-workloads/clusters/%s/flux-system's SealedSecret %s/%s: "+
				"it was sealed for another environment's certificate; reseal it with `fleet seal` against this hub's certificate and merge",
				spoke, spoke, deploykey.SecretNamespace, deploykey.SecretName),
		}, true
	}
	entries, _ := field(o, "status", "inventory", "entries").([]any)
	for _, e := range entries {
		if str(e, "id") == sealedSecretInventoryID {
			return Notice{Type: DeployKeyCondition, Reason: "Unsealing",
				Message: fmt.Sprintf("%s-%s applied the deploy key; waiting for the spoke's Sealed Secrets to unseal it", spoke, DeployKeyPart)}, true
		}
	}
	return Notice{
		Type:   DeployKeyCondition,
		Warn:   true,
		Reason: "DeployKeyMissing",
		Message: fmt.Sprintf("spoke %s: gitops-workloads/clusters/%s/flux-system holds no SealedSecret %s/%s, so bootstrap stops at %s-%s; "+
			"run `%s %s` (or `fleet seal`) and merge", spoke, spoke, deploykey.SecretNamespace, deploykey.SecretName, spoke, DeployKeyPart, cantSeeKeyHint, spoke),
	}, true
}

// ConditionTrue reports whether an observed object has condition typ True.
func ConditionTrue(o any, typ string) bool {
	status, _, _, _ := condition(o, typ)
	return status == "True"
}

// conditionMessage is the message of an observed object's condition typ.
func conditionMessage(o any, typ string) string {
	_, _, msg, _ := condition(o, typ)
	return msg
}

// BootstrapReady is the readiness of a bootstrap object from what is
// observed: a ConfigMap has no conditions and is ready once it exists;
// everything else when its Ready condition is True. A Kustomization that
// has applied a revision stays ready (sticky, turn-4 review R4) while it
// reconciles again, Ready Unknown/Progressing (kustomize-controller v1.9.3
// internal/controller/kustomization_controller.go:325 marks every
// reconcile so), and while it waits for a dependency to apply a new
// revision, Ready False/DependencyNotReady (:258), and when a new
// revision or spec ends its health check, Ready False/HealthCheckCanceled
// (:278-293, with the CancelHealthCheckOnNewRevision feature gate every
// Flux of the fleet runs, components/fluxbootstrap): what it applied is
// in place and none is a fault, so the claim does not flap on every
// reconcile and commit. Any other False (its own apply or health check
// failed) is not ready.
func BootstrapReady(o Object) bool {
	if o == nil {
		return false
	}
	if o["kind"] == "ConfigMap" {
		return true
	}
	status, reason, _, found := condition(o, meta.ReadyCondition)
	if status == string(metav1.ConditionTrue) {
		return true
	}
	if o["kind"] != "Kustomization" || str(o, "status", "lastAppliedRevision") == "" || !found {
		return false
	}
	return status == string(metav1.ConditionUnknown) && reason == meta.ProgressingReason ||
		status == string(metav1.ConditionFalse) && (reason == meta.DependencyNotReadyReason || reason == meta.HealthCheckCanceledReason)
}

func field(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func str(o any, path ...string) string {
	s, _ := field(o, path...).(string)
	return s
}
