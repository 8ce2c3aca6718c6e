package fluxbootstrap

import (
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-tls/sdk/v5/go/tls"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
)

const roleARN = "arn:aws:iam::111122223333:role/mgmt-flux"

func info() clusterinfo.Values[pulumi.StringInput] {
	ex := clusterinfo.Example()
	var v clusterinfo.Values[pulumi.StringInput]
	v.AccountID, v.Region, v.Partition, v.HubName = pulumi.String(ex.AccountID), pulumi.String(ex.Region), pulumi.String(ex.Partition), pulumi.String(ex.HubName)
	v.HubVPCCIDR, v.OIDCProviderARN, v.OIDCIssuer = pulumi.String(ex.HubVPCCIDR), pulumi.String(ex.OIDCProviderARN), pulumi.String(ex.OIDCIssuer)
	v.HubEgressCIDRs = pulumi.String(ex.HubEgressCIDRs)
	v.CrossplaneRoleARN, v.ExternalSecretsRoleARN, v.FluxRoleARN = pulumi.String(ex.CrossplaneRoleARN), pulumi.String(ex.ExternalSecretsRoleARN), pulumi.String(ex.FluxRoleARN)
	v.SpokeRolePrefix, v.SpokeBoundaryARN = pulumi.String(ex.SpokeRolePrefix), pulumi.String(ex.SpokeBoundaryARN)
	v.SealingSecretName, v.SealingSecretARN, v.SealingKMSKeyARN = pulumi.String(ex.SealingSecretName), pulumi.String(ex.SealingSecretARN), pulumi.String(ex.SealingKMSKeyARN)
	v.SealingActiveKeySecret, v.SealingPreviousKeySecret = pulumi.String(ex.SealingActiveKeySecret), pulumi.String(ex.SealingPreviousKeySecret)
	v.GitURL, v.GitBranch, v.SystemPath = pulumi.String(ex.GitURL), pulumi.String(ex.GitBranch), pulumi.String(ex.SystemPath)
	v.FluxVersion, v.FluxOperatorVersion = pulumi.String(ex.FluxVersion), pulumi.String(ex.FluxOperatorVersion)
	v.LogRetentionDays, v.FunctionRegistry = pulumi.String(ex.LogRetentionDays), pulumi.String(ex.FunctionRegistry)
	v.SpokeZoneIDs = pulumi.String(ex.SpokeZoneIDs)
	v.SpokeAddonVersions = pulumi.String(ex.SpokeAddonVersions)
	v.SpokeAddonWaves = pulumi.String(ex.SpokeAddonWaves)
	v.SpokeAccounts = pulumi.String(ex.SpokeAccounts)
	return v
}

type fixture struct {
	m                       *mocks.Mocks
	ready, teardown1, tear2 string
	provider                string
	// deployKey is the caller's key pair (OpenSSH), as the mocks made it.
	deployKey *mocks.Resource
}

func run(t *testing.T, mutate func(*Args)) (*fixture, error) {
	t.Helper()
	f := &fixture{m: mocks.New()}
	err := f.m.Run(nil, func(ctx *pulumi.Context) error {
		p, err := kubernetes.NewProvider(ctx, "k8s", &kubernetes.ProviderArgs{Kubeconfig: pulumi.String("{}")})
		if err != nil {
			return err
		}
		// Stand-ins for the node group and the IRSA role / sealing secret.
		ready, err := tls.NewPrivateKey(ctx, "ready", &tls.PrivateKeyArgs{Algorithm: pulumi.String("ED25519")})
		if err != nil {
			return err
		}
		td1, err := tls.NewPrivateKey(ctx, "teardown-1", &tls.PrivateKeyArgs{Algorithm: pulumi.String("ED25519")})
		if err != nil {
			return err
		}
		td2, err := tls.NewPrivateKey(ctx, "teardown-2", &tls.PrivateKeyArgs{Algorithm: pulumi.String("ED25519")})
		if err != nil {
			return err
		}
		deploy, err := tls.NewPrivateKey(ctx, "deploy", &tls.PrivateKeyArgs{Algorithm: pulumi.String(DeployKeyAlgorithm)})
		if err != nil {
			return err
		}
		a := Args{
			DeployKey: DeployKey{PrivateKeyOpenSSH: deploy.PrivateKeyOpenssh, PublicKeyOpenSSH: deploy.PublicKeyOpenssh},
			GitURL:    "ssh://git@github.com/example-org/eks-fleet.git", GitBranch: "main",
			GitPath: "./manifests/gitops-system/clusters/mgmt", KnownHosts: pulumi.String("github.com ssh-ed25519 AAAA"),
			FluxRoleARN: pulumi.String(roleARN), ClusterInfo: info(),
			ClusterReady: []pulumi.Resource{ready}, TeardownAfter: []pulumi.Resource{td1, td2},
			Concurrency: 37,
		}
		if mutate != nil {
			mutate(&a)
		}
		_, err = New(ctx, "flux", a, pulumi.Provider(p))
		return err
	})
	if err != nil {
		return f, err
	}
	urn := func(typ, name string) string {
		r := f.m.One(typ, name)
		if r == nil {
			t.Fatalf("no %s %s", typ, name)
		}
		return r.URN
	}
	f.ready = urn("tls:index/privateKey:PrivateKey", "ready")
	f.teardown1 = urn("tls:index/privateKey:PrivateKey", "teardown-1")
	f.tear2 = urn("tls:index/privateKey:PrivateKey", "teardown-2")
	f.provider = urn("pulumi:providers:kubernetes", "k8s")
	f.deployKey = f.m.One("tls:index/privateKey:PrivateKey", "deploy")
	return f, nil
}

func TestFluxBootstrap(t *testing.T) {
	f, err := run(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := f.m
	comp := m.One(Type, "flux")
	get := func(typ, name string) *mocks.Resource {
		t.Helper()
		r := m.One(typ, name)
		if r == nil {
			t.Fatalf("no %s %s", typ, name)
		}
		if r.Parent != comp.URN {
			t.Errorf("%s %s not parented to FluxBootstrap", typ, name)
		}
		if strings.HasPrefix(typ, "kubernetes:") && !strings.HasPrefix(r.Provider, f.provider+"::") {
			t.Errorf("%s %s uses provider %q, want the cluster's", typ, name, r.Provider)
		}
		return r
	}
	ns := get("kubernetes:core/v1:Namespace", "flux")
	if !slices.Contains(ns.Dependencies, f.ready) {
		t.Error("namespace does not wait for the node group")
	}
	rel := get(ReleaseType, "flux-operator")
	// What the Go SDK's NewRelease sends (release.go): compat set by it.
	if want := (resource.PropertyMap{
		"name": resource.NewProperty(OperatorRelease), "chart": resource.NewProperty(OperatorChart),
		"version": resource.NewProperty(versions.FluxOperator), "namespace": resource.NewProperty(Namespace),
		"compat": resource.NewProperty("true"),
	}); !rel.Inputs.DeepEquals(want) {
		t.Errorf("release inputs %v, want %v", rel.Inputs, want)
	}

	inst := get("kubernetes:fluxcd.controlplane.io/v1:FluxInstance", "flux-instance")
	md := inst.Inputs["metadata"].ObjectValue()
	if md["name"].StringValue() != "flux" || md["annotations"].ObjectValue()[WaitForAnnotation].StringValue() != "condition=Ready" {
		t.Errorf("FluxInstance metadata %v", md)
	}
	spec := inst.Inputs["spec"].ObjectValue()
	dist := spec["distribution"].ObjectValue()
	if dist["version"].StringValue() != versions.Flux || dist["registry"].StringValue() != "ghcr.io/fluxcd" {
		t.Errorf("distribution %v", dist)
	}
	var comps []string
	for _, c := range spec["components"].ArrayValue() {
		comps = append(comps, c.StringValue())
	}
	if !slices.Equal(comps, []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"}) {
		t.Errorf("components %v", comps)
	}
	if spec["cluster"].ObjectValue()["type"].StringValue() != "aws" {
		t.Error("cluster type not aws")
	}
	// Tens of workers per controller need the large profile's memory.
	if got := spec["cluster"].ObjectValue()["size"]; !got.IsString() || got.StringValue() != "large" {
		t.Errorf("cluster size %v, want large (3Gi for kustomize- and helm-controller)", got)
	}
	// Both controllers that apply onto spokes carry the Flux role: the
	// spokes' Kustomizations (kustomize-controller) and the spoke
	// bootstrap's HelmReleases (helm-controller).
	annotated := map[string]string{}
	var concurrency []string
	for _, p := range spec["kustomize"].ObjectValue()["patches"].ArrayValue() {
		target := p.ObjectValue()["target"].ObjectValue()
		if target["kind"].StringValue() == "Deployment" {
			concurrency = append(concurrency, target["name"].StringValue()+": "+p.ObjectValue()["patch"].StringValue())
			continue
		}
		if target["kind"].StringValue() != "ServiceAccount" {
			t.Errorf("patch target %v is not a ServiceAccount", target)
			continue
		}
		var ops []struct {
			Op    string            `json:"op"`
			Path  string            `json:"path"`
			Value map[string]string `json:"value"`
		}
		if err := yaml.UnmarshalStrict([]byte(p.ObjectValue()["patch"].StringValue()), &ops); err != nil {
			t.Fatalf("patch of %v is not a JSON6902 patch setting annotations: %v", target, err)
		}
		if len(ops) != 1 || ops[0].Op != "add" || ops[0].Path != "/metadata/annotations" {
			t.Errorf("patch of %v: %+v, want one add of /metadata/annotations", target, ops)
			continue
		}
		annotated[target["name"].StringValue()] = ops[0].Value[RoleARNAnnotation]
	}
	if want := map[string]string{"kustomize-controller": roleARN, "helm-controller": roleARN}; !maps.Equal(annotated, want) {
		t.Errorf("role-arn annotations by service account %v, want %v", annotated, want)
	}
	// Every controller that waits or serves spokes gets the configured
	// worker count, as one JSON6902 append to the container's args, and
	// kustomize-controller looks again at a waiting dependsOn after
	// RequeueDependency and ends a health check when its Kustomization is
	// queued again (a deleted hub-side step waited out its timeout).
	if want := []string{
		"(source-controller|kustomize-controller|helm-controller): - op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --concurrent=37\n",
		"kustomize-controller: - op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --requeue-dependency=5s\n",
		"kustomize-controller: - op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --feature-gates=CancelHealthCheckOnNewRevision=true\n",
	}; !slices.Equal(concurrency, want) {
		t.Errorf("controller argument patches %q, want %q", concurrency, want)
	}
	for _, c := range ConcurrentControllers {
		if !slices.Contains(comps, c) {
			t.Errorf("concurrency patch targets %s, which is not an installed component", c)
		}
	}
	for _, sa := range serviceaccounts.HubFluxControllers() {
		if !slices.Contains(comps, sa.Name) || sa.Namespace != Namespace {
			t.Errorf("%s is not a service account of an installed component in %s", sa.Subject(), Namespace)
		}
	}
	if !slices.Contains(inst.Dependencies, rel.URN) {
		t.Error("FluxInstance does not wait for the operator")
	}

	sec := get("kubernetes:core/v1:Secret", "flux-git")
	sd := sec.Inputs["stringData"]
	wholeSecret := sd.IsSecret()
	if wholeSecret {
		sd = sd.SecretValue().Element
	}
	data := sd.ObjectValue()
	var keys []string
	for k := range data {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	if !slices.Equal(keys, []string{IdentityKey, IdentityPubKey, KnownHostsKey}) {
		t.Errorf("secret keys %v", keys)
	}
	id := data[IdentityKey]
	if id.IsSecret() {
		wholeSecret = true
		id = id.SecretValue().Element
	}
	if !wholeSecret || !strings.Contains(id.StringValue(), "OPENSSH PRIVATE KEY") {
		t.Errorf("identity %v", data[IdentityKey])
	}
	if md := sec.Inputs["metadata"].ObjectValue(); md["name"].StringValue() != SyncName || md["namespace"].StringValue() != Namespace {
		t.Errorf("secret metadata %v", md)
	}
	wantKey := f.deployKey.State["privateKeyOpenssh"]
	if wantKey.IsSecret() {
		wantKey = wantKey.SecretValue().Element
	}
	if got := id.StringValue(); !wantKey.IsString() || got != wantKey.StringValue() {
		t.Errorf("identity is not the caller's deploy key")
	}
	if got, want := data[IdentityPubKey], f.deployKey.State["publicKeyOpenssh"]; !got.IsString() || got.StringValue() != want.StringValue() {
		t.Errorf("identity.pub %v, want the caller's public key", got)
	}
	// Only Kubernetes resources: the component runs on the Kubernetes
	// provider alone (the real-controller suite runs it through the
	// Pulumi engine, where no TLS provider is to be had).
	for _, r := range m.Resources() {
		if r.Parent == comp.URN && !strings.HasPrefix(r.Type, "kubernetes:") {
			t.Errorf("%s %s: a FluxBootstrap child outside the Kubernetes provider", r.Type, r.Name)
		}
	}

	cm := get("kubernetes:core/v1:ConfigMap", "flux-cluster-info")
	var cmKeys []string
	for k := range cm.Inputs["data"].ObjectValue() {
		cmKeys = append(cmKeys, string(k))
	}
	sort.Strings(cmKeys)
	if !slices.Equal(cmKeys, clusterinfo.Names()) {
		t.Errorf("cluster-info keys %v, want %v", cmKeys, clusterinfo.Names())
	}
	if md := cm.Inputs["metadata"].ObjectValue(); md["name"].StringValue() != clusterinfo.Name || md["namespace"].StringValue() != clusterinfo.Namespace {
		t.Errorf("cluster-info metadata %v", md)
	}
	// Without Flux's watch label a `pulumi up` change (a sealing-key
	// rotation) reaches the Kustomizations only at their next interval.
	if l := cm.Inputs["metadata"].ObjectValue()["labels"]; !l.IsObject() || l.ObjectValue()["reconcile.fluxcd.io/watch"].StringValue() != "Enabled" {
		t.Errorf("cluster-info labels %v, want reconcile.fluxcd.io/watch: Enabled", l)
	}

	repo := get("kubernetes:source.toolkit.fluxcd.io/v1:GitRepository", "flux-git")
	rs := repo.Inputs["spec"].ObjectValue()
	if rs["url"].StringValue() != "ssh://git@github.com/example-org/eks-fleet.git" || rs["ref"].ObjectValue()["branch"].StringValue() != "main" ||
		rs["secretRef"].ObjectValue()["name"].StringValue() != SyncName {
		t.Errorf("GitRepository spec %v", rs)
	}

	root := get("kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization", "flux-root")
	ks := root.Inputs["spec"].ObjectValue()
	want := map[string]any{
		"path": "./manifests/gitops-system/clusters/mgmt", "prune": true, "wait": true,
		"deletionPolicy": "WaitForTermination", "timeout": KustomizationTimeout,
	}
	for k, v := range want {
		if got := ks[resource.PropertyKey(k)].V; got != v {
			t.Errorf("root spec.%s = %v, want %v", k, got, v)
		}
	}
	sf := ks["postBuild"].ObjectValue()["substituteFrom"].ArrayValue()
	if len(sf) != 1 || sf[0].ObjectValue()["kind"].StringValue() != "ConfigMap" || sf[0].ObjectValue()["name"].StringValue() != clusterinfo.Name {
		t.Errorf("substituteFrom %v", sf)
	}
	if src := ks["sourceRef"].ObjectValue(); src["kind"].StringValue() != "GitRepository" || src["name"].StringValue() != SyncName {
		t.Errorf("sourceRef %v", src)
	}
	for what, u := range map[string]string{
		"FluxInstance": inst.URN, "GitRepository": repo.URN, "Secret": sec.URN, "cluster-info": cm.URN,
		"TeardownAfter[0]": f.teardown1, "TeardownAfter[1]": f.tear2,
	} {
		if !slices.Contains(root.Dependencies, u) {
			t.Errorf("root Kustomization does not depend on %s", what)
		}
	}
	if root.DeleteTimeout != DefaultRootDeleteTimeout.String() {
		t.Errorf("delete timeout %q", root.DeleteTimeout)
	}
	for _, r := range m.Resources() {
		if slices.Contains(r.Dependencies, root.URN) {
			t.Errorf("%s %s depends on the root Kustomization", r.Type, r.Name)
		}
	}
}

func TestFluxBootstrapNeedsEveryClusterInfoVariable(t *testing.T) {
	f, err := run(t, func(a *Args) { a.ClusterInfo.SealingKMSKeyARN = nil })
	if err == nil || !strings.Contains(err.Error(), clusterinfo.SealingKMSKeyARN) {
		t.Fatalf("err %v", err)
	}
	if f.m.One(Type, "flux") != nil {
		t.Error("component registered despite the missing variable")
	}
}

func TestFluxBootstrapNeedsTheDeployKey(t *testing.T) {
	f, err := run(t, func(a *Args) { a.DeployKey.PrivateKeyOpenSSH = nil })
	if err == nil || !strings.Contains(err.Error(), "DeployKey") {
		t.Fatalf("err %v, want DeployKey named", err)
	}
	if f.m.One(Type, "flux") != nil {
		t.Error("component registered without a deploy key")
	}
}

// TestSpokeKustomizeControllerPatches: the spokes' FluxInstance (a
// manifest the hub applies) patches kustomize-controller as the hub's
// does: the hub's workloads step deletes the spoke's own workloads
// Kustomization and waits for it, so a health check there must end on
// deletion too.
func TestSpokeKustomizeControllerPatches(t *testing.T) {
	b, err := os.ReadFile("../../manifests/gitops-system/spoke-bootstrap/flux/flux-instance.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var fi struct {
		Spec struct {
			Kustomize struct {
				Patches []struct {
					Target map[string]string `json:"target"`
					Patch  string            `json:"patch"`
				} `json:"patches"`
			} `json:"kustomize"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &fi); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range fi.Spec.Kustomize.Patches {
		if p.Target["kind"] == "Deployment" && p.Target["name"] == "kustomize-controller" {
			got = append(got, p.Patch)
		}
	}
	want := []string{
		"- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --requeue-dependency=" + RequeueDependency + "\n",
		"- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --feature-gates=" + CancelHealthCheckFeatureGate + "\n",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the spokes' FluxInstance patches kustomize-controller with %q, want %q", got, want)
	}
}

// TestProgramCompilesItsKindsOnly: the program (main.go) compiles the
// Kubernetes Go SDK's packages of the kinds it registers and no other
// (Release says why the SDK's helm/v3 package is left out: its Chart
// imports every kind's package).
func TestProgramCompilesItsKindsOnly(t *testing.T) {
	const sdk = "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	out, err := exec.Command("go", "list", "-deps", "github.com/gitops-fleet/eks-fleet").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var got []string
	for _, p := range strings.Fields(string(out)) {
		if p == sdk || strings.HasPrefix(p, sdk+"/") {
			got = append(got, strings.TrimPrefix(strings.TrimPrefix(p, sdk), "/"))
		}
	}
	sort.Strings(got)
	want := []string{
		"",              // the provider resource, UntypedArgs
		"apiextensions", // CustomResource: the FluxInstance, GitRepository, Kustomization
		"core/v1",       // Namespace, Secret, ConfigMap
		"meta/v1",       // ObjectMeta
		"storage/v1",    // pulumi-eks's cluster component
		"utilities",     // the SDK's resource options (Release)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the program compiles the SDK packages %q, want %q", got, want)
	}
}
