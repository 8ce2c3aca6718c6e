// Package mocks is the pulumi.WithMocks monitor the hub's tests share. It
// records every registration (type, name, parent, inputs, dependencies,
// custom timeouts), answers the AWS invokes the program makes, marks
// additional secret outputs secret as the engine does, and returns the
// pulumi-eks components' outputs the way the real remote components do: as
// resource references to child resources (eksCluster is a reference to an
// aws:eks/cluster:Cluster, core.oidcProvider to an
// aws:iam/openIdConnectProvider:OpenIdConnectProvider, nodeGroup to an
// aws:eks/nodeGroup:NodeGroup). Those children are registered by the mock
// itself, so a reference resolves exactly like one from the engine.
package mocks

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
)

// Fixed answers of the invokes.
const (
	Project   = "eks-fleet"
	Stack     = "test"
	AccountID = "111122223333"
	Region    = "eu-west-1"
	Partition = "aws"
	// OIDCID is the id in the mocked cluster's OIDC issuer.
	OIDCID = "EXAMPLED539D4633E53DE1B71EXAMPLE"
)

// AddonVersionDenied, followed by a message, is an AddonVersion answer
// that fails the look-up as AWS's AccessDenied does.
const AddonVersionDenied = "denied:"

// EIPBase is the public IP of the first Elastic IP the mocks allocate
// (TEST-NET-2); the n-th (from 0) gets its last octet plus n.
const EIPBase = "198.51.100.10"

// Issuer is the mocked cluster's OIDC issuer URL.
func Issuer() string { return "https://oidc.eks." + Region + ".amazonaws.com/id/" + OIDCID }

// Resource is one recorded registration.
type Resource struct {
	Type, Name, URN, ID, Parent, Provider string
	Custom, Remote                        bool
	// Synthetic marks children the mock registered for a remote component.
	Synthetic      bool
	Inputs         resource.PropertyMap
	State          resource.PropertyMap
	Dependencies   []string
	PropertyDeps   map[string][]string
	DeleteTimeout  string
	AdditionalSecs []string
	// Protect is the resource's protect option.
	Protect bool
	// ImportID is the resource's import option (the ID it adopts).
	ImportID string
	// Transforms counts the resource's transforms.
	Transforms int
	// Aliases are the URNs the resource's aliases name, resolved as the
	// engine resolves an alias spec (a field left out is the resource's
	// own; pulumi/pkg v3 resource/deploy/step_generator.go, generateAliases).
	Aliases []string
}

// Mocks implements pulumi.MockResourceMonitor.
type Mocks struct {
	Stack string
	// Account is the caller's account (getCallerIdentity) and every
	// mocked ARN's; empty: AccountID.
	Account string
	AZs     []string
	// AZIDs are the zone IDs of AZs, in order (default euw1-az<n>).
	AZIDs []string
	// CallerARN is what getCallerIdentity answers (default user/ci); the
	// session context's issuer is the role behind an assumed-role ARN.
	CallerARN string
	// DryRun runs the program as a preview: the monitor leaves outputs of
	// custom resources unknown, as the engine does.
	DryRun bool
	// Clusters are the EKS clusters that already exist, name to version
	// (what getClusters and getCluster answer).
	Clusters map[string]string
	// LogGroups are the CloudWatch log groups that already exist (what
	// getLogGroups answers, by name prefix).
	LogGroups []string
	// AddonVersion answers getAddonVersion for a provider region, add-on
	// and Kubernetes version ("" is EKS offering none, AddonVersionDenied
	// and a message an AccessDenied error); nil answers
	// clusterinfo.ExampleAddonVersion everywhere.
	AddonVersion func(region, addon, k8s string) string
	// RealKeys makes tls private keys and self-signed certificates real
	// (generated as pulumi-tls generates them) instead of placeholders, for
	// tests that use them (the real-controller suite).
	RealKeys bool
	// Prior is the previous update's registrations, as the engine keeps
	// them in the stack's state: a custom resource whose URN and inputs
	// are unchanged keeps the ID and outputs it had (its key pair, its
	// generated names) instead of new ones, as `pulumi up` after a config
	// change leaves what the change does not touch. That is the engine's
	// same step (pulumi/pkg/v3 v3.220.0 resource/deploy/step_generator.go:
	// 1725-1742, generateStepsFromDiff: no update step after the diff, so
	// NewSameStep carries the old state forward). Not modelled: the
	// provider's Diff itself (equal inputs count as no diff, which is what
	// the providers the program uses report for them), and an update in
	// place keeping its old ID (changed inputs get the ID a create gets
	// here: the resource's name, or what fill computes).
	Prior *Mocks
	// Holds is what the account holds for the program's pre-flight check
	// (Read, a preflight.Reader): its EKS OIDC providers and launch
	// templates. Only what a test puts here: what the program or Prior
	// registered is not added to it.
	Holds preflight.Inventory
	// ReadErr, when set, is Read's and Remains' error.
	ReadErr error
	// Left is what Remains lists: the account's resources tagged with
	// the key it is asked for, and its roles.
	Left   []preflight.SpokeResource
	reads  []preflight.Query
	ctx    *pulumi.Context
	mu     sync.Mutex
	res    []*Resource
	byURN  map[string]*Resource
	invoke []string
	// synthetic names the children registered for remote components.
	synthetic map[string]bool
	// eips counts Elastic IPs, each given the next EIPBase address.
	eips int
}

// New returns mocks for stack "test" in a region with four zones (us-east-1
// then still has three EKS accepts: its third is use1-az3).
func New() *Mocks {
	return &Mocks{Stack: Stack, CallerARN: "arn:aws:iam::" + AccountID + ":user/ci", AZs: []string{Region + "a", Region + "b", Region + "c", Region + "d"}, byURN: map[string]*Resource{}}
}

// Run runs program under the mocks with the given stack config (full keys).
func (m *Mocks) Run(config map[string]string, program pulumi.RunFunc) error {
	return pulumi.RunErr(func(ctx *pulumi.Context) error {
		m.mu.Lock()
		m.ctx = ctx
		m.mu.Unlock()
		return program(ctx)
	}, pulumi.WithMocks(Project, m.Stack, m), func(info *pulumi.RunInfo) {
		info.Config = config
		info.DryRun = m.DryRun
	})
}

// Read implements preflight.Reader: Holds, for the mocked account only.
func (m *Mocks) Read(_ context.Context, q preflight.Query) (preflight.Inventory, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.readable(q); err != nil {
		return preflight.Inventory{}, err
	}
	return m.Holds, nil
}

// Remains implements preflight.Reader: Left, for the mocked account only
// (whatever the key and prefix; a test puts there what the reader would
// list).
func (m *Mocks) Remains(_ context.Context, q preflight.Query, _, _ string) ([]preflight.SpokeResource, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.readable(q); err != nil {
		return nil, err
	}
	return slices.Clone(m.Left), nil
}

// readable records q and answers as the account readers do: ReadErr, or a
// refusal when q names another account than the mocked one. m.mu is held.
func (m *Mocks) readable(q preflight.Query) error {
	m.reads = append(m.reads, q)
	if m.ReadErr != nil {
		return m.ReadErr
	}
	if want := cmp.Or(m.Account, AccountID); q.AccountID != want {
		return fmt.Errorf("the mocked credentials reach account %s, the query names %s", want, q.AccountID)
	}
	return nil
}

// Reads returns the account checks' queries, in order.
func (m *Mocks) Reads() []preflight.Query {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reads)
}

// Resources returns the recorded registrations in order, without the
// mock's own children of remote components.
func (m *Mocks) Resources() []*Resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Resource
	for _, r := range m.res {
		if !r.Synthetic {
			out = append(out, r)
		}
	}
	return out
}

// All returns every recorded registration, synthetic ones included.
func (m *Mocks) All() []*Resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Resource(nil), m.res...)
}

// ByType returns the registrations of a type.
func (m *Mocks) ByType(typ string) []*Resource {
	var out []*Resource
	for _, r := range m.Resources() {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// One returns the single registration of typ named name, or nil.
func (m *Mocks) One(typ, name string) *Resource {
	for _, r := range m.Resources() {
		if r.Type == typ && r.Name == name {
			return r
		}
	}
	return nil
}

// ByURN returns a registration by URN.
func (m *Mocks) ByURN(urn string) *Resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byURN[urn]
}

// Relocate moves the registration at urn to the URN to, where an earlier
// release's program registered it (an upgrade's prior state).
func (m *Mocks) Relocate(urn, to string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.byURN[urn]
	if !ok {
		return fmt.Errorf("no registration %s", urn)
	}
	delete(m.byURN, urn)
	r.URN = to
	m.byURN[to] = r
	return nil
}

// Invokes returns the invoke tokens called, in order.
func (m *Mocks) Invokes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.invoke...)
}

// URN computes a URN the way the mock monitor does.
func (m *Mocks) URN(parent, typ, name string) string {
	parentType := tokens.Type("")
	if p := resource.URN(parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	return string(resource.NewURN(tokens.QName(m.Stack), tokens.PackageName(Project), parentType, tokens.Type(typ), name))
}

// Call answers invokes.
func (m *Mocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	m.mu.Lock()
	m.invoke = append(m.invoke, args.Token)
	m.mu.Unlock()
	switch args.Token {
	case "aws:index/getCallerIdentity:getCallerIdentity":
		return resource.NewPropertyMapFromMap(map[string]any{
			"accountId": m.account(), "arn": m.CallerARN, "id": m.account(), "userId": "AIDAEXAMPLE",
		}), nil
	case "aws:eks/getClusters:getClusters":
		names := []any{}
		for n := range m.Clusters {
			names = append(names, n)
		}
		return resource.NewPropertyMapFromMap(map[string]any{"names": names, "id": Region}), nil
	case "aws:eks/getCluster:getCluster":
		name := args.Args["name"].StringValue()
		v, ok := m.Clusters[name]
		if !ok {
			return nil, fmt.Errorf("mocks: reading EKS Cluster (%s): couldn't find resource", name)
		}
		// Every cluster's issuer is the mocked one (Issuer).
		return resource.NewPropertyMapFromMap(map[string]any{"name": name, "version": v, "id": name,
			"identities": []any{map[string]any{"oidcs": []any{map[string]any{"issuer": Issuer()}}}}}), nil
	case "aws:iam/getSessionContext:getSessionContext":
		arn := args.Args["arn"].StringValue()
		issuer := arn
		// arn:aws:sts::<account>:assumed-role/<name>/<session> -> role/<name>
		// (the mock's roles have no path).
		if rest, ok := strings.CutPrefix(arn, "arn:aws:sts::"+m.account()+":assumed-role/"); ok {
			name, _, _ := strings.Cut(rest, "/")
			issuer = "arn:aws:iam::" + m.account() + ":role/" + name
		}
		return resource.NewPropertyMapFromMap(map[string]any{"arn": arn, "issuerArn": issuer, "id": arn}), nil
	case "aws:cloudwatch/getLogGroups:getLogGroups":
		prefix := ""
		if v, ok := args.Args["logGroupNamePrefix"]; ok && v.IsString() {
			prefix = v.StringValue()
		}
		names := []any{}
		for _, n := range m.LogGroups {
			if strings.HasPrefix(n, prefix) {
				names = append(names, n)
			}
		}
		return resource.NewPropertyMapFromMap(map[string]any{"logGroupNames": names, "arns": []any{}, "id": Region}), nil
	case "aws:index/getPartition:getPartition":
		return resource.NewPropertyMapFromMap(map[string]any{
			"partition": Partition, "dnsSuffix": "amazonaws.com", "id": Partition, "reverseDnsPrefix": "com.amazonaws",
		}), nil
	case "aws:eks/getAddonVersion:getAddonVersion":
		addon, k8s := args.Args["addonName"].StringValue(), args.Args["kubernetesVersion"].StringValue()
		answer := m.AddonVersion
		if answer == nil {
			answer = func(_, addon, k8s string) string { return clusterinfo.ExampleAddonVersion(addon, k8s) }
		}
		v := answer(m.providerRegion(args.Provider), addon, k8s)
		if v == "" {
			// As the provider reports an empty DescribeAddonVersions.
			return nil, fmt.Errorf("mocks: reading EKS Add-On version info (%s, %s): empty result", addon, k8s)
		}
		if denied, ok := strings.CutPrefix(v, AddonVersionDenied); ok {
			return nil, fmt.Errorf("mocks: reading EKS Add-On version info (%s, %s): operation error EKS: DescribeAddonVersions, AccessDeniedException: %s", addon, k8s, denied)
		}
		return resource.NewPropertyMapFromMap(map[string]any{
			"addonName": addon, "kubernetesVersion": k8s, "version": v, "id": addon,
		}), nil
	case "aws:index/getAvailabilityZones:getAvailabilityZones":
		ids := make([]any, len(m.AZs))
		names := make([]any, len(m.AZs))
		region := m.providerRegion(args.Provider)
		zoneNames, zoneIDs := m.Zones(region)
		for i := range zoneNames {
			names[i], ids[i] = zoneNames[i], zoneIDs[i]
		}
		return resource.NewPropertyMapFromMap(map[string]any{"names": names, "zoneIds": ids, "id": Region}), nil
	}
	return nil, fmt.Errorf("mocks: unexpected invoke %s", args.Token)
}

// account is the caller's account.
func (m *Mocks) account() string {
	if m.Account != "" {
		return m.Account
	}
	return AccountID
}

// providerRegion is the region an invoke reads: its explicit provider's
// ("<urn>::<id>"), else the stack's (aws:region).
func (m *Mocks) providerRegion(provider string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	region := ""
	if m.ctx != nil {
		region = config.Get(m.ctx, "aws:region")
	}
	if i := strings.LastIndex(provider, "::"); i > 0 {
		if p, ok := m.byURN[provider[:i]]; ok {
			region = str(p.Inputs, "region")
		}
	}
	return region
}

// Zones are the zone names and IDs getAvailabilityZones answers for region
// (the stack's when empty): AZs written for the region, and AZIDs or
// <region prefix>-az<n>.
func (m *Mocks) Zones(region string) (names, ids []string) {
	for i, az := range m.AZs {
		if region != "" {
			az = region + strings.TrimPrefix(az, Region)
		}
		names = append(names, az)
		id := fmt.Sprintf("%s-az%d", zoneIDPrefix(region), i+1)
		if i < len(m.AZIDs) {
			id = m.AZIDs[i]
		}
		ids = append(ids, id)
	}
	return names, ids
}

// zoneIDPrefix is AWS's zone ID prefix of a region: eu-west-1 -> euw1,
// us-east-1 -> use1, ap-southeast-2 -> apse2 (the mocks' own stack region
// gives euw1).
func zoneIDPrefix(region string) string {
	if region == "" {
		region = Region
	}
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return region
	}
	dir := map[string]string{"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
		"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw"}
	d, ok := dir[parts[1]]
	if !ok {
		d = parts[1]
	}
	return parts[0] + d + parts[len(parts)-1]
}

// NewResource answers registrations.
func (m *Mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	rpc := args.RegisterRPC
	r := &Resource{Type: args.TypeToken, Name: args.Name, Custom: args.Custom, Inputs: args.Inputs, Provider: args.Provider, ImportID: args.ID}
	if rpc != nil {
		r.Parent = rpc.GetParent()
		r.Remote = rpc.GetRemote()
		r.Dependencies = rpc.GetDependencies()
		r.PropertyDeps = map[string][]string{}
		for k, v := range rpc.GetPropertyDependencies() {
			r.PropertyDeps[k] = v.GetUrns()
		}
		if t := rpc.GetCustomTimeouts(); t != nil {
			r.DeleteTimeout = t.GetDelete()
		}
		r.AdditionalSecs = rpc.GetAdditionalSecretOutputs()
		r.Protect = rpc.GetProtect()
		r.Transforms = len(rpc.GetTransforms())
	}
	r.URN = m.URN(r.Parent, r.Type, r.Name)
	if rpc != nil {
		r.Aliases = m.aliases(r, rpc.GetAliases())
	}

	state := args.Inputs.Copy()
	id := ""
	var err error
	switch {
	case r.Remote:
		state, err = m.remote(r)
		if err != nil {
			return "", nil, err
		}
		id = ""
	case r.Custom && m.unchanged(r) != nil:
		p := m.unchanged(r)
		id, state = p.ID, p.State.Copy()
	case r.Custom:
		id = r.Name + "-id"
		m.fill(r, state)
		if v, ok := state["id"]; ok && v.IsString() {
			id = v.StringValue()
			delete(state, "id")
		}
		// tls: outputs flow into secret inputs (the sealing secret's
		// value), and the SDK's mock monitor refuses an unknown inside a
		// secret; they stay known, everything else computed is unknown.
		if m.DryRun && !strings.HasPrefix(r.Type, "tls:") {
			// A preview of a create: what the provider computes is unknown.
			// The SDK's mock monitor drops unknowns, and in a preview the
			// SDK reads a missing output as unknown, so they are left out.
			// Children of remote components keep their id so references
			// to them resolve. Secret outputs stay known: the SDK's mock
			// monitor cannot carry an unknown secret ("malformed RPC
			// secret").
			for k := range state {
				if _, in := args.Inputs[k]; !in && !slices.Contains(r.AdditionalSecs, string(k)) {
					delete(state, k)
				}
			}
			m.mu.Lock()
			if !m.synthetic[r.Name] {
				id = ""
			}
			m.mu.Unlock()
		}
	}
	// The engine marks these outputs secret; so does the mock.
	for _, k := range r.AdditionalSecs {
		if v, ok := state[resource.PropertyKey(k)]; ok && !v.IsSecret() && !v.IsComputed() {
			state[resource.PropertyKey(k)] = resource.MakeSecret(v)
		}
	}
	r.ID, r.State = id, state
	m.mu.Lock()
	m.res = append(m.res, r)
	m.byURN[r.URN] = r
	if m.synthetic[r.Name] {
		r.Synthetic = true
	}
	m.mu.Unlock()
	return id, state, nil
}

// unchanged is r's registration in Prior when its inputs are the same.
// aliases resolves alias specs to URNs.
func (m *Mocks) aliases(r *Resource, specs []*pulumirpc.Alias) []string {
	var out []string
	for _, a := range specs {
		if u := a.GetUrn(); u != "" {
			out = append(out, u)
			continue
		}
		spec := a.GetSpec()
		if spec == nil {
			continue
		}
		name, typ, parent := cmp.Or(spec.GetName(), r.Name), cmp.Or(spec.GetType(), r.Type), r.Parent
		switch {
		case spec.GetNoParent():
			parent = ""
		case spec.GetParentUrn() != "":
			parent = spec.GetParentUrn()
		}
		out = append(out, m.URN(parent, typ, name))
	}
	return out
}

func (m *Mocks) unchanged(r *Resource) *Resource {
	if m.Prior == nil {
		return nil
	}
	p := m.Prior.ByURN(r.URN)
	for _, a := range r.Aliases {
		if p != nil {
			break
		}
		p = m.Prior.ByURN(a)
	}
	if p == nil || p.Type != r.Type || !p.Inputs.DeepEquals(r.Inputs) {
		return nil
	}
	return p
}

func str(m resource.PropertyMap, k string) string {
	v, ok := m[resource.PropertyKey(k)]
	if !ok {
		return ""
	}
	if v.IsSecret() {
		v = v.SecretValue().Element
	}
	if v.IsString() {
		return v.StringValue()
	}
	return ""
}

// fill adds the outputs a provider computes.
func (m *Mocks) fill(r *Resource, s resource.PropertyMap) {
	name := str(s, "name")
	if name == "" {
		name = r.Name
		if strings.HasPrefix(r.Type, "aws:") {
			s["name"] = resource.NewProperty(name)
		}
	}
	set := func(k, v string) { s[resource.PropertyKey(k)] = resource.NewProperty(v) }
	switch r.Type {
	case "aws:iam/role:Role":
		set("arn", fmt.Sprintf("arn:aws:iam::%s:role/%s", m.account(), name))
		set("id", name)
	case "aws:iam/policy:Policy":
		set("arn", fmt.Sprintf("arn:aws:iam::%s:policy/%s", m.account(), name))
	case "aws:secretsmanager/secret:Secret":
		arn := fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-AbCdEf", Region, m.account(), name)
		set("arn", arn)
		set("id", arn)
	case "aws:kms/key:Key":
		set("keyId", r.Name+"-1234abcd")
		set("arn", fmt.Sprintf("arn:aws:kms:%s:%s:key/%s-1234abcd", Region, m.account(), r.Name))
	case "tls:index/privateKey:PrivateKey":
		if m.RealKeys {
			out, err := realPrivateKey(s)
			if err != nil {
				panic(err)
			}
			for k, v := range out {
				set(k, v)
			}
			break
		}
		alg := str(s, "algorithm")
		set("privateKeyPem", fmt.Sprintf("-----BEGIN %s PRIVATE KEY-----\n%s\n-----END %s PRIVATE KEY-----\n", alg, r.Name, alg))
		set("privateKeyPemPkcs8", fmt.Sprintf("-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n", r.Name))
		set("privateKeyOpenssh", fmt.Sprintf("-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n-----END OPENSSH PRIVATE KEY-----\n", r.Name))
		set("publicKeyOpenssh", fmt.Sprintf("ssh-%s AAAA%s\n", strings.ToLower(alg), r.Name))
		set("publicKeyPem", fmt.Sprintf("-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n", r.Name))
	case "aws:ec2/eip:Eip":
		m.mu.Lock()
		n := m.eips
		m.eips++
		m.mu.Unlock()
		base := netip.MustParseAddr(EIPBase).As4()
		base[3] += byte(n)
		set("publicIp", netip.AddrFrom4(base).String())
		set("allocationId", "eipalloc-"+r.Name)
	case "random:index/randomId:RandomId":
		// byteLength bytes, as the provider would render them.
		n := 3
		if v, ok := s["byteLength"]; ok && v.IsNumber() {
			n = int(v.NumberValue())
		}
		set("hex", strings.Repeat("a1b2c3d4", n)[:2*n])
		set("b64Url", "obLD")
	case "tls:index/selfSignedCert:SelfSignedCert":
		if m.RealKeys {
			c, err := realSelfSignedCert(s)
			if err != nil {
				panic(err)
			}
			set("certPem", c)
			break
		}
		set("certPem", fmt.Sprintf("-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n", r.Name))
	default:
		if _, ok := s["arn"]; !ok && strings.HasPrefix(r.Type, "aws:") {
			parts := strings.Split(r.Type, ":")
			svc := strings.Split(parts[1], "/")[0]
			set("arn", fmt.Sprintf("arn:aws:%s:%s:%s:%s/%s", svc, Region, m.account(), strings.ToLower(parts[2]), name))
		}
	}
}

// remote answers the pulumi-eks components with references to children
// the mock registers under its own names.
func (m *Mocks) remote(r *Resource) (resource.PropertyMap, error) {
	switch r.Type {
	case "eks:index:Cluster":
		clusterName := str(r.Inputs, "name")
		var c awseks.Cluster
		cref, err := m.child("aws:eks/cluster:Cluster", r.Name+"-eksCluster", pulumi.Map{
			"name":                 pulumi.String(clusterName),
			"version":              pulumi.String(str(r.Inputs, "version")),
			"endpoint":             pulumi.String("https://" + OIDCID + ".gr7." + Region + ".eks.amazonaws.com"),
			"certificateAuthority": pulumi.Map{"data": pulumi.String("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t")},
			"identities":           pulumi.Array{pulumi.Map{"oidcs": pulumi.Array{pulumi.Map{"issuer": pulumi.String(Issuer())}}}},
			"arn":                  pulumi.String(fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", Region, m.account(), clusterName)),
			"vpcConfig":            pulumi.Map{"clusterSecurityGroupId": pulumi.String("sg-cluster")},
		}, &c)
		if err != nil {
			return nil, err
		}
		var o iam.OpenIdConnectProvider
		issuerHost := strings.TrimPrefix(Issuer(), "https://")
		oref, err := m.child("aws:iam/openIdConnectProvider:OpenIdConnectProvider", r.Name+"-oidcProvider", pulumi.Map{
			"url": pulumi.String(Issuer()),
			"arn": pulumi.String(fmt.Sprintf("arn:aws:iam::%s:oidc-provider/%s", m.account(), issuerHost)),
		}, &o)
		if err != nil {
			return nil, err
		}
		kubeconfig := map[string]any{"apiVersion": "v1", "kind": "Config"}
		return resource.PropertyMap{
			"eksCluster": cref,
			"core": resource.NewObjectProperty(resource.PropertyMap{
				"cluster":      cref,
				"oidcProvider": oref,
				"endpoint":     resource.NewProperty("https://" + OIDCID + ".gr7." + Region + ".eks.amazonaws.com"),
				"vpcId":        r.Inputs["vpcId"],
				"subnetIds":    resource.NewArrayProperty(nil),
				"tags":         r.Inputs["tags"],
			}),
			"kubeconfig":     resource.NewObjectProperty(resource.NewPropertyMapFromMap(kubeconfig)),
			"kubeconfigJson": resource.NewProperty(`{"apiVersion":"v1","kind":"Config"}`),
		}, nil
	case "eks:index:ManagedNodeGroup":
		var ng awseks.NodeGroup
		ref, err := m.child("aws:eks/nodeGroup:NodeGroup", r.Name+"-nodeGroup", pulumi.Map{
			"nodeGroupName": pulumi.String(str(r.Inputs, "nodeGroupName")),
			"amiType":       pulumi.String(str(r.Inputs, "amiType")),
		}, &ng)
		if err != nil {
			return nil, err
		}
		return resource.PropertyMap{"nodeGroup": ref}, nil
	}
	return nil, fmt.Errorf("mocks: unexpected remote component %s", r.Type)
}

// child registers a custom resource for a remote component and returns a
// resource reference to it once the monitor knows it.
func (m *Mocks) child(typ, name string, props pulumi.Map, res pulumi.CustomResource) (resource.PropertyValue, error) {
	m.mu.Lock()
	ctx := m.ctx
	if m.synthetic == nil {
		m.synthetic = map[string]bool{}
	}
	m.synthetic[name] = true
	m.mu.Unlock()
	if ctx == nil {
		return resource.PropertyValue{}, fmt.Errorf("mocks: remote component before Run")
	}
	if err := ctx.RegisterResource(typ, name, props, res); err != nil {
		return resource.PropertyValue{}, err
	}
	u, err := internals.UnsafeAwaitOutput(context.Background(), res.URN())
	if err != nil {
		return resource.PropertyValue{}, err
	}
	id, err := internals.UnsafeAwaitOutput(context.Background(), res.ID())
	if err != nil {
		return resource.PropertyValue{}, err
	}
	return resource.MakeCustomResourceReference(resource.URN(u.Value.(pulumi.URN)), resource.ID(id.Value.(pulumi.ID)), ""), nil
}

// SortedTypes lists the types of the recorded resources with counts.
func (m *Mocks) SortedTypes() []string {
	count := map[string]int{}
	for _, r := range m.Resources() {
		count[r.Type]++
	}
	var out []string
	for t, n := range count {
		out = append(out, fmt.Sprintf("%s=%d", t, n))
	}
	sort.Strings(out)
	return out
}
