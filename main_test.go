package main

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"
	"gopkg.in/yaml.v3"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/components/irsarole"
	"github.com/gitops-fleet/eks-fleet/components/managementcluster"
	"github.com/gitops-fleet/eks-fleet/components/sealingkeys"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/hub"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/engineconfig"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// stackConfig is an example stack file's settings as the engine passes
// them to the program (its merge with Pulumi.yaml's declared defaults).
func stackConfig(t *testing.T, file string) map[string]string {
	t.Helper()
	raw, err := engineconfig.FileValues("Pulumi.yaml", file)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// program is exactly what main runs, plus a handle on what it built.
func runProgram(t *testing.T, cfg map[string]string) (*mocks.Mocks, *hub.Hub, error) {
	t.Helper()
	m := mocks.New()
	var h *hub.Hub
	err := m.Run(cfg, func(ctx *pulumi.Context) error {
		c, err := stacks.Load(ctx)
		if err != nil {
			return err
		}
		h, err = hub.Build(ctx, c, m)
		return err
	})
	return m, h, err
}

func TestMainRunsHubProgram(t *testing.T) {
	// main must stay the thin wrapper the tests exercise: run hub.Program with
	// the mgmt stack and require the same resources as Load+Build.
	m := mocks.New()
	if err := m.Run(stackConfig(t, "Pulumi.mgmt.yaml"), hub.Program(m)); err != nil {
		t.Fatalf("hub.Program: %v", err)
	}
	m2, _, err := runProgram(t, stackConfig(t, "Pulumi.mgmt.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := m.SortedTypes(), m2.SortedTypes(); !slices.Equal(a, b) {
		t.Fatalf("hub.Program made %v, Load+Build made %v", a, b)
	}
}

// TestDeployKeyKeptFromEarlierRelease: FluxBootstrap made the deploy key as
// its child up to this release; a stack made then keeps its key (a new one
// would lock the hub's Flux out of Git until it is registered again).
func TestDeployKeyKeptFromEarlierRelease(t *testing.T) {
	const keyType = "tls:index/privateKey:PrivateKey"
	cfg := stackConfig(t, "Pulumi.mgmt.yaml")
	before, _, err := runProgram(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := before.One(keyType, hub.DeployKeyResource)
	comp := before.One(fluxbootstrap.Type, hub.FluxResource)
	if key == nil || comp == nil {
		t.Fatalf("no deploy key or FluxBootstrap registered")
	}
	if err := before.Relocate(key.URN, before.URN(comp.URN, keyType, hub.DeployKeyResource)); err != nil {
		t.Fatal(err)
	}
	key.ID = "earlier-key"
	key.State = key.State.Copy()
	key.State["privateKeyOpenssh"] = resource.NewSecretProperty(&resource.Secret{Element: resource.NewStringProperty("the earlier release's key")})

	after := mocks.New()
	after.Prior = before
	if err := after.Run(cfg, hub.Program(after)); err != nil {
		t.Fatal(err)
	}
	got := after.One(keyType, hub.DeployKeyResource)
	if got == nil || got.ID != "earlier-key" {
		t.Fatalf("deploy key %+v: the earlier release's key (at its old URN) was not kept", got)
	}
}

func TestWholeProgram(t *testing.T) {
	for _, file := range []string{"Pulumi.mgmt.yaml", "Pulumi.prod.yaml"} {
		t.Run(file, func(t *testing.T) {
			cfg := stackConfig(t, file)
			m, h, err := runProgram(t, cfg)
			if err != nil {
				t.Fatalf("program failed: %v", err)
			}
			c := h.Config
			checkParents(t, m)
			checkCounts(t, m, c)
			checkIRSA(t, m)
			checkFluxAnnotations(t, m, c)
			checkSealingKeyAccess(t, m, c)
			checkPolicies(t, m)
			checkClusterInfo(t, m, c)
			checkRootKustomization(t, m)
			checkPrivateKeys(t, m)
			checkOutputs(t, h, hubEgress(t, m, c))
		})
	}
}

// Every resource sits under the component that owns it; only components,
// the boundary policy, the deploy key and the AWS providers of the spoke
// regions sit at the root.
func checkParents(t *testing.T, m *mocks.Mocks) {
	t.Helper()
	components := map[string]string{}
	for _, r := range m.Resources() {
		if !r.Custom && !r.Remote {
			components[r.URN] = r.Type
		}
	}
	rootOK := map[string]bool{
		managementcluster.Type: true, sealingkeys.Type: true, irsarole.Type: true, fluxbootstrap.Type: true,
		"aws:iam/policy:Policy": true, // the spoke boundary
		// the AWS providers spoke regions' zones are read with: a provider
		// owns nothing and is read before any component exists
		"pulumi:providers:aws": true,
		// the hub Flux's deploy key (hub.NewDeployKey): FluxBootstrap
		// holds Kubernetes resources only
		"tls:index/privateKey:PrivateKey": true,
	}
	for _, r := range m.Resources() {
		if r.Type == "pulumi:pulumi:Stack" {
			continue
		}
		parentType := components[r.Parent]
		if parentType == "" {
			if !rootOK[r.Type] || (r.Type == "aws:iam/policy:Policy" && r.Name != hub.BoundaryResource) ||
				(r.Type == "tls:index/privateKey:PrivateKey" && r.Name != hub.DeployKeyResource) ||
				(r.Type == "pulumi:providers:aws" && !strings.HasPrefix(r.Name, hub.ZoneProviderResource)) {
				t.Errorf("%s %s has no component parent (parent %q)", r.Type, r.Name, r.Parent)
			}
			continue
		}
		want := map[string]string{
			"aws:ec2/vpc:Vpc": managementcluster.Type, "aws:ec2/subnet:Subnet": managementcluster.Type,
			"eks:index:Cluster": managementcluster.Type, "eks:index:ManagedNodeGroup": managementcluster.Type,
			"pulumi:providers:kubernetes":      managementcluster.Type,
			"aws:iam/role:Role":                "", // node role or IRSA role
			"tls:index/privateKey:PrivateKey":  "",
			"aws:secretsmanager/secret:Secret": sealingkeys.Type, "aws:secretsmanager/secretVersion:SecretVersion": sealingkeys.Type,
			"kubernetes:core/v1:ConfigMap": fluxbootstrap.Type, "kubernetes:core/v1:Secret": fluxbootstrap.Type,
			"kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization": fluxbootstrap.Type,
			"kubernetes:helm.sh/v3:Release":                           fluxbootstrap.Type,
		}[r.Type]
		if want != "" && parentType != want {
			t.Errorf("%s %s: parent is a %s, want %s", r.Type, r.Name, parentType, want)
		}
	}
}

func checkCounts(t *testing.T, m *mocks.Mocks, c stacks.Config) {
	t.Helper()
	keys := len(c.Sealing.KeyIDs)
	nats := managementcluster.NATCount(c.NATMode, c.AvailabilityZones)
	want := map[string]int{
		managementcluster.Type:                                    1,
		sealingkeys.Type:                                          1,
		irsarole.Type:                                             3,
		fluxbootstrap.Type:                                        1,
		"aws:ec2/vpc:Vpc":                                         1,
		"aws:ec2/subnet:Subnet":                                   2 * c.AvailabilityZones,
		"aws:ec2/natGateway:NatGateway":                           nats,
		"aws:ec2/eip:Eip":                                         nats,
		"eks:index:Cluster":                                       1,
		"eks:index:ManagedNodeGroup":                              1,
		"pulumi:providers:kubernetes":                             1,
		"tls:index/privateKey:PrivateKey":                         keys + 1, // + deploy key
		"tls:index/selfSignedCert:SelfSignedCert":                 keys,
		"aws:secretsmanager/secret:Secret":                        1,
		"aws:iam/policy:Policy":                                   4, // 3 IRSA + boundary
		"kubernetes:helm.sh/v3:Release":                           1,
		"kubernetes:fluxcd.controlplane.io/v1:FluxInstance":       1,
		"kubernetes:source.toolkit.fluxcd.io/v1:GitRepository":    1,
		"kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization": 1,
	}
	for typ, n := range want {
		if got := len(m.ByType(typ)); got != n {
			t.Errorf("%s: %d registered, want %d", typ, got, n)
		}
	}
}

// The IRSA roles trust exactly the service accounts the manifests create
// (the Flux role: both controllers that apply onto spokes), every trust
// statement conditions on :sub and :aud, exact names under StringEquals and
// prefixes under StringLike.
func checkIRSA(t *testing.T, m *mocks.Mocks) {
	t.Helper()
	want := map[string][]serviceaccounts.ServiceAccount{
		hub.CrossplaneResource: {serviceaccounts.HubCrossplaneAWS},
		hub.ESOResource:        {serviceaccounts.HubExternalSecrets},
		hub.FluxRoleResource:   {serviceaccounts.HubKustomizeController, serviceaccounts.HubHelmController},
	}
	issuer := strings.TrimPrefix(mocks.Issuer(), "https://")
	for name, sas := range want {
		role := m.One("aws:iam/role:Role", name)
		if role == nil {
			t.Fatalf("no IRSA role %s", name)
		}
		doc, err := policydoc.Parse(role.Inputs["assumeRolePolicy"].StringValue())
		if err != nil {
			t.Fatalf("%s trust policy: %v", name, err)
		}
		wantSubs := map[string]string{} // subject -> operator
		for _, sa := range sas {
			wantSubs[sa.Subject()] = "StringEquals"
			if sa.Prefix {
				wantSubs[sa.Subject()] = "StringLike"
			}
		}
		gotSubs := map[string]string{}
		for i, st := range doc.Statement {
			if st.Effect != policydoc.Allow || !slices.Equal(st.Action, []string{"sts:AssumeRoleWithWebIdentity"}) {
				t.Errorf("%s statement %d: %s %v", name, i, st.Effect, st.Action)
			}
			if got := st.Principal["Federated"]; got != "arn:aws:iam::"+mocks.AccountID+":oidc-provider/"+issuer {
				t.Errorf("%s statement %d: federated principal %v", name, i, got)
			}
			if got := st.Condition["StringEquals"][issuer+":aud"]; got != irsarole.Audience {
				t.Errorf("%s statement %d: aud = %v, want %s", name, i, got, irsarole.Audience)
			}
			subs := 0
			for op, keys := range st.Condition {
				v, ok := keys[issuer+":sub"]
				if !ok {
					continue
				}
				subs++
				var list []any
				switch x := v.(type) {
				case string:
					list = []any{x}
				case []any:
					list = x
				}
				for _, s := range list {
					gotSubs[s.(string)] = op
				}
			}
			if subs != 1 {
				t.Errorf("%s statement %d: %d operators on :sub, want 1 (IAM ANDs them)", name, i, subs)
			}
		}
		if !maps.Equal(gotSubs, wantSubs) {
			t.Errorf("%s trusts %v, want %v", name, gotSubs, wantSubs)
		}
	}
}

// The FluxInstance annotates every service account the Flux role trusts.
func checkFluxAnnotations(t *testing.T, m *mocks.Mocks, c stacks.Config) {
	t.Helper()
	inst := m.One("kubernetes:fluxcd.controlplane.io/v1:FluxInstance", hub.FluxResource+"-instance")
	if inst == nil {
		t.Fatal("no FluxInstance")
	}
	roleARN := "arn:aws:iam::" + mocks.AccountID + ":role/" + hubiam.FluxRoleName(c.HubName)
	var annotated []string
	for _, p := range inst.Inputs["spec"].ObjectValue()["kustomize"].ObjectValue()["patches"].ArrayValue() {
		po := p.ObjectValue()
		if strings.Contains(po["patch"].StringValue(), fluxbootstrap.RoleARNAnnotation+": "+roleARN+"\n") {
			annotated = append(annotated, po["target"].ObjectValue()["name"].StringValue())
		}
	}
	sort.Strings(annotated)
	if !slices.Equal(annotated, []string{"helm-controller", "kustomize-controller"}) {
		t.Errorf("FluxInstance annotates %v with %s, want helm-controller and kustomize-controller", annotated, roleARN)
	}
}

// The sealing key's policy delegates to the account's IAM, and the spoke
// boundary lets spoke roles (the <spoke>-eso role among them) decrypt the
// sealing secret with it only through Secrets Manager in the hub's region.
func checkSealingKeyAccess(t *testing.T, m *mocks.Mocks, c stacks.Config) {
	t.Helper()
	key := m.One("aws:kms/key:Key", hub.SealingResource)
	if key == nil {
		t.Fatal("no sealing KMS key")
	}
	doc, err := policydoc.Parse(key.Inputs["policy"].StringValue())
	if err != nil {
		t.Fatalf("sealing key policy: %v", err)
	}
	if len(doc.Statement) != 1 || doc.Statement[0].Principal["AWS"] != "arn:aws:iam::"+mocks.AccountID+":root" ||
		!slices.Equal(doc.Statement[0].Action, []string{"kms:*"}) || len(doc.Statement[0].Condition) != 0 {
		t.Errorf("sealing key policy does not only delegate to the account's IAM: %+v", doc.Statement)
	}
	keyARN := key.State["arn"].StringValue()
	parse := func(typ, name string) policydoc.Document {
		r := m.One(typ, name)
		if r == nil {
			t.Fatalf("no %s %s", typ, name)
		}
		d, err := policydoc.Parse(r.Inputs["policy"].StringValue())
		if err != nil {
			t.Fatalf("%s %s: %v", typ, name, err)
		}
		return d
	}
	// The hub's External Secrets decrypts it, through Secrets Manager only.
	eso := parse("aws:iam/policy:Policy", hub.ESOResource)
	found := false
	for _, st := range eso.Statement {
		if st.Effect == policydoc.Allow && slices.Contains(st.Action, "kms:Decrypt") && slices.Equal(st.Resource, []string{keyARN}) &&
			st.Condition["StringEquals"]["kms:ViaService"] == "secretsmanager."+c.Region+".amazonaws.com" {
			found = true
		}
	}
	if !found {
		t.Errorf("the hub's External Secrets policy does not allow kms:Decrypt on %s via Secrets Manager in %s: %+v", keyARN, c.Region, eso.Statement)
	}
	// No spoke role does: the hub hands the spokes the keys.
	for _, st := range parse("aws:iam/policy:Policy", hub.BoundaryResource).Statement {
		for _, a := range st.Action {
			if st.Effect == policydoc.Allow && (strings.HasPrefix(a, "kms:") || strings.HasPrefix(a, "secretsmanager:") || a == "*") {
				t.Errorf("the spoke boundary allows %s on %v", a, st.Resource)
			}
		}
	}
}

// No policy anywhere grants "*" on "*".
func checkPolicies(t *testing.T, m *mocks.Mocks) {
	t.Helper()
	n := 0
	for _, r := range m.Resources() {
		for _, k := range []string{"policy", "assumeRolePolicy"} {
			v, ok := r.Inputs[resource.PropertyKey(k)]
			if !ok || !strings.HasPrefix(r.Type, "aws:iam/") {
				continue
			}
			doc, err := policydoc.Parse(v.StringValue())
			if err != nil {
				t.Errorf("%s %s %s: %v", r.Type, r.Name, k, err)
				continue
			}
			n++
			for _, e := range policydoc.CheckLeastPrivilege(doc) {
				t.Errorf("%s %s %s: %v", r.Type, r.Name, k, e)
			}
		}
	}
	if n < 8 {
		t.Errorf("checked only %d policy documents", n)
	}
}

func checkClusterInfo(t *testing.T, m *mocks.Mocks, c stacks.Config) {
	t.Helper()
	cms := m.ByType("kubernetes:core/v1:ConfigMap")
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps", len(cms))
	}
	data := cms[0].Inputs["data"].ObjectValue()
	var keys []string
	for k, v := range data {
		keys = append(keys, string(k))
		if !v.IsString() || v.StringValue() == "" {
			t.Errorf("cluster-info %s is empty or not a string: %v", k, v)
		}
	}
	sort.Strings(keys)
	if !slices.Equal(keys, clusterinfo.Names()) {
		t.Errorf("cluster-info keys %v, want %v", keys, clusterinfo.Names())
	}
	checks := map[string]string{
		clusterinfo.HubName:           c.HubName,
		clusterinfo.Region:            c.Region,
		clusterinfo.SystemPath:        "manifests/gitops-system",
		clusterinfo.SpokeRolePrefix:   c.HubName + "-spoke-",
		clusterinfo.OIDCIssuer:        strings.TrimPrefix(mocks.Issuer(), "https://"),
		clusterinfo.GitURL:            c.Git.URL,
		clusterinfo.AccountID:         mocks.AccountID,
		clusterinfo.SpokeBoundaryARN:  "arn:aws:iam::" + mocks.AccountID + ":policy/" + hubiam.BoundaryPolicyName(c.HubName),
		clusterinfo.CrossplaneRoleARN: "arn:aws:iam::" + mocks.AccountID + ":role/" + hubiam.CrossplaneRoleName(c.HubName),
		clusterinfo.FunctionRegistry:  c.FunctionRegistry,
	}
	for k, want := range checks {
		if got := data[resource.PropertyKey(k)].StringValue(); got != want {
			t.Errorf("cluster-info %s = %q, want %q", k, got, want)
		}
	}

	// The key Secrets' names reach cluster-info only once the sealing
	// keys' SecretVersion is written (a rotation's new ExternalSecret
	// must not copy the old key).
	// (The engine records dependencies per input, so this holds for data
	// as a whole; internal/hub builds both key names with afterKeys.)
	version := m.One("aws:secretsmanager/secretVersion:SecretVersion", hub.SealingResource)
	if version == nil || !slices.Contains(cms[0].PropertyDeps["data"], version.URN) {
		t.Errorf("cluster-info does not wait for the sealing keys' SecretVersion (data depends on %v)", cms[0].PropertyDeps["data"])
	}

	// HUB_EGRESS_CIDRS is every NAT EIP's public IP as a /32, as a flow
	// sequence that Flux substitutes into a spoke's publicAccessCidrs list.
	egress := hubEgress(t, m, c)
	got := data[resource.PropertyKey(clusterinfo.HubEgressCIDRs)].StringValue()
	if want := clusterinfo.FormatCIDRs(egress); got != want {
		t.Errorf("cluster-info %s = %q, want %q", clusterinfo.HubEgressCIDRs, got, want)
	}
	var list []string
	if err := yaml.Unmarshal([]byte("publicAccessCidrs: "+got), &struct {
		L *[]string `yaml:"publicAccessCidrs"`
	}{&list}); err != nil || !slices.Equal(list, egress) {
		t.Errorf("publicAccessCidrs: %s reads as %v (%v), want the list %v", got, list, err, egress)
	}
}

// hubEgress returns the NAT EIPs' public IPs as /32s in zone order.
func hubEgress(t *testing.T, m *mocks.Mocks, c stacks.Config) []string {
	t.Helper()
	var out []string
	names, ids := m.Zones(c.Region)
	zones, err := managementcluster.StandardZones(c.Region, names, ids, c.AvailabilityZones)
	if err != nil {
		t.Fatal(err)
	}
	for _, az := range zones[:managementcluster.NATCount(c.NATMode, c.AvailabilityZones)] {
		eip := m.One("aws:ec2/eip:Eip", hub.ClusterResource+"-nat-"+az)
		if eip == nil || eip.State["publicIp"].StringValue() == "" {
			t.Fatalf("no NAT EIP with a public IP in %s", az)
		}
		out = append(out, eip.State["publicIp"].StringValue()+"/32")
	}
	if n := len(m.ByType("aws:ec2/eip:Eip")); n != len(out) {
		t.Fatalf("%d EIPs, want %d", n, len(out))
	}
	return out
}

// The root Kustomization waits on everything Flux and Crossplane need
// while they delete the spokes, so destroy removes it first.
func checkRootKustomization(t *testing.T, m *mocks.Mocks) {
	t.Helper()
	ks := m.ByType("kubernetes:kustomize.toolkit.fluxcd.io/v1:Kustomization")
	if len(ks) != 1 {
		t.Fatalf("%d Kustomizations", len(ks))
	}
	root := ks[0]
	spec := root.Inputs["spec"].ObjectValue()
	if got := spec["deletionPolicy"].StringValue(); got != "WaitForTermination" {
		t.Errorf("deletionPolicy %q", got)
	}
	if root.DeleteTimeout == "" {
		t.Error("root Kustomization has no delete timeout")
	}
	deps := map[string]bool{}
	for _, d := range root.Dependencies {
		deps[d] = true
	}
	mustDependOn := func(typ, name string) {
		r := m.One(typ, name)
		if r == nil {
			t.Errorf("no %s %s", typ, name)
			return
		}
		if !deps[r.URN] {
			t.Errorf("root Kustomization does not depend on %s %s", typ, name)
		}
	}
	for _, n := range []string{hub.CrossplaneResource, hub.ESOResource, hub.FluxRoleResource} {
		mustDependOn("aws:iam/role:Role", n)
		mustDependOn("aws:iam/policy:Policy", n)
		mustDependOn("aws:iam/rolePolicyAttachment:RolePolicyAttachment", n)
	}
	mustDependOn("aws:iam/policy:Policy", hub.BoundaryResource)
	mustDependOn("aws:secretsmanager/secret:Secret", hub.SealingResource)
	mustDependOn("aws:secretsmanager/secretVersion:SecretVersion", hub.SealingResource)
	mustDependOn("eks:index:ManagedNodeGroup", hub.ClusterResource+"-nodes")
	mustDependOn("kubernetes:fluxcd.controlplane.io/v1:FluxInstance", hub.FluxResource+"-instance")
	mustDependOn("kubernetes:source.toolkit.fluxcd.io/v1:GitRepository", hub.FluxResource+"-git")
	mustDependOn("kubernetes:core/v1:Secret", hub.FluxResource+"-git")
	mustDependOn("kubernetes:core/v1:ConfigMap", hub.FluxResource+"-cluster-info")
	// Created last: nothing the program made depends on it.
	for _, r := range m.Resources() {
		if slices.Contains(r.Dependencies, root.URN) {
			t.Errorf("%s %s depends on the root Kustomization", r.Type, r.Name)
		}
	}
}

// A private key appears only inside secret values.
func checkPrivateKeys(t *testing.T, m *mocks.Mocks) {
	t.Helper()
	found := 0
	for _, r := range m.All() {
		for what, pm := range map[string]resource.PropertyMap{"inputs": r.Inputs, "state": r.State} {
			walkPlain(resource.NewObjectProperty(pm), func(s string) {
				if strings.Contains(s, "PRIVATE KEY") {
					t.Errorf("%s %s %s: private key outside a secret", r.Type, r.Name, what)
				}
			}, func() { found++ })
		}
	}
	if found == 0 {
		t.Error("no secret values seen: the check would pass vacuously")
	}
}

// walkPlain calls plain for every string not inside a secret and secret
// for every secret.
func walkPlain(v resource.PropertyValue, plain func(string), secret func()) {
	switch {
	case v.IsSecret():
		secret()
	case v.IsString():
		plain(v.StringValue())
	case v.IsArray():
		for _, e := range v.ArrayValue() {
			walkPlain(e, plain, secret)
		}
	case v.IsObject():
		for _, e := range v.ObjectValue() {
			walkPlain(e, plain, secret)
		}
	case v.IsOutput():
		if v.OutputValue().Secret {
			secret()
			return
		}
		walkPlain(v.OutputValue().Element, plain, secret)
	}
}

func checkOutputs(t *testing.T, h *hub.Hub, egress []string) {
	t.Helper()
	want := []string{
		hub.OutClusterName, hub.OutKubeconfig, hub.OutOIDCProviderARN, hub.OutOIDCIssuer,
		hub.OutCrossplaneRoleARN, hub.OutESORoleARN, hub.OutFluxRoleARN, hub.OutBoundaryARN,
		hub.OutSealingSecretName, hub.OutSealingSecretARN, hub.OutSealingCertPEM,
		hub.OutDeployPublicKey, hub.OutNextSteps, hub.OutHubEgressCIDRs, hub.OutSpokeAddonVersions, hub.OutFleetAccountSCP,
	}
	var got []string
	for name := range h.Outputs {
		got = append(got, name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("stack outputs %v, want %v", got, want)
	}
	for name, o := range h.Outputs {
		r, err := internals.UnsafeAwaitOutput(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == hub.OutHubEgressCIDRs {
			if got, _ := r.Value.([]string); len(got) == 0 || !slices.Equal(got, egress) {
				t.Errorf("output %s = %v, want the NAT IPs as /32s %v", name, r.Value, egress)
			}
			continue
		}
		s, _ := r.Value.(string)
		if s == "" {
			t.Errorf("output %s is empty", name)
		}
		if strings.Contains(s, "PRIVATE KEY") {
			t.Errorf("output %s holds a private key", name)
		}
		switch name {
		case hub.OutKubeconfig:
			if !r.Secret {
				t.Error("kubeconfig output is not secret")
			}
			var kc map[string]any
			if err := json.Unmarshal([]byte(s), &kc); err != nil {
				t.Errorf("kubeconfig: %v", err)
			}
			if !strings.Contains(s, `"--region","`+h.Config.Region+`"`) {
				t.Errorf("kubeconfig lacks --region %s: %s", h.Config.Region, s)
			}
		case hub.OutSealingCertPEM, hub.OutDeployPublicKey:
			if r.Secret {
				t.Errorf("%s is public material but secret: kubeseal and the Git host need it in clear", name)
			}
		case hub.OutNextSteps:
			if !strings.Contains(s, hub.OutDeployPublicKey) || !strings.Contains(s, h.Config.Git.URL) {
				t.Errorf("next steps do not say how to add the deploy key: %s", s)
			}
		case hub.OutFleetAccountSCP:
			// the deployer the mocks' caller is
			if want := hubiam.FleetAccountSCP(h.Env, []string{"arn:aws:iam::" + mocks.AccountID + ":user/ci"}).MustJSON(); s != want {
				t.Errorf("SCP output %s, want %s", s, want)
			}
		}
	}
}

// A bad stack stops the program with every problem named and nothing
// registered.
func TestBadConfigRegistersNothing(t *testing.T) {
	base := stackConfig(t, "Pulumi.mgmt.yaml")
	cases := []struct {
		name, key, value string
		want             []string
	}{
		{"nat mode", "eks-fleet:natMode", "two", []string{"eks-fleet:natMode", `"two"`, "single, per-az"}},
		{"kubernetes", "eks-fleet:kubernetesVersion", "1.29", []string{"eks-fleet:kubernetesVersion", `"1.29"`, "1.34, 1.35, 1.36"}},
		{"hub name", "eks-fleet:hubName", "Mgmt_Hub", []string{"eks-fleet:hubName", `"Mgmt_Hub"`, "lower-case letters and digits"}},
		{"zones", "eks-fleet:availabilityZones", "4", []string{"eks-fleet:availabilityZones", `"4"`, "2 or 3"}},
		{"open endpoint", "eks-fleet:publicAccessCidrs", `["0.0.0.0/0"]`, []string{"eks-fleet:publicAccessCidrs", "0.0.0.0/0", "restricted"}},
		{"recovery", "eks-fleet:sealingSecretRecoveryWindowDays", "3", []string{"eks-fleet:sealingSecretRecoveryWindowDays", `"3"`, "7 to 30"}},
		{"git url", "eks-fleet:gitUrl", "git@github.com:org/repo.git", []string{"eks-fleet:gitUrl", "ssh://"}},
		{"region", "aws:region", "", []string{"aws:region"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := map[string]string{}
			for k, v := range base {
				cfg[k] = v
			}
			if tc.value == "" {
				delete(cfg, tc.key)
			} else {
				cfg[tc.key] = tc.value
			}
			m, _, err := runProgram(t, cfg)
			if err == nil {
				t.Fatal("program accepted the bad setting")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if n := len(m.All()); n != 0 {
				t.Errorf("%d resources registered before the error: %v", n, m.SortedTypes())
			}
		})
	}
	t.Run("every error at once", func(t *testing.T) {
		cfg := map[string]string{"eks-fleet:natMode": "x", "eks-fleet:nodeMinSize": "zero"}
		m, _, err := runProgram(t, cfg)
		if err == nil {
			t.Fatal("accepted")
		}
		for _, w := range []string{"aws:region", "eks-fleet:natMode", "eks-fleet:nodeMinSize", "eks-fleet:gitUrl", "eks-fleet:gitKnownHosts", "eks-fleet:publicAccessCidrs"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error lacks %s: %v", w, err)
			}
		}
		if n := len(m.All()); n != 0 {
			t.Errorf("%d resources registered", n)
		}
	})
}
