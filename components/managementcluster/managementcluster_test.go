package managementcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
)

func args(zones int, nat string) Args {
	return Args{
		ClusterName: "mgmt", Region: mocks.Region, Partition: "aws", VPCCIDR: "10.0.0.0/16",
		AvailabilityZones: zones, NATMode: nat, KubernetesVersion: "1.35",
		InstanceTypes: []string{"m6i.large"}, AMIType: "AL2023_x86_64_STANDARD",
		MinSize: 2, DesiredSize: 2, MaxSize: 4,
		PublicAccessCIDRs:  []string{"203.0.113.0/24"},
		AdminPrincipalARNs: []string{"arn:aws:iam::111122223333:role/platform-admin", "arn:aws:iam::111122223333:user/alice"},
		Tags:               map[string]string{"owner": "platform"},
	}
}

func build(t *testing.T, a Args) (*mocks.Mocks, *ManagementCluster) {
	t.Helper()
	m := mocks.New()
	var mc *ManagementCluster
	err := m.Run(nil, func(ctx *pulumi.Context) (err error) {
		mc, err = New(ctx, "hub", a)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, mc
}

func await(t *testing.T, o pulumi.Output) internals.UnsafeAwaitOutputResult {
	t.Helper()
	r, err := internals.UnsafeAwaitOutput(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNetworkPerNATMode(t *testing.T) {
	for _, zones := range []int{2, 3} {
		for _, nat := range []string{NATSingle, NATPerAZ} {
			t.Run(fmt.Sprintf("%d-%s", zones, nat), func(t *testing.T) {
				m, mc := build(t, args(zones, nat))
				comp := m.One(Type, "hub")
				for _, r := range m.Resources() {
					if r != comp && r.Parent != comp.URN {
						t.Errorf("%s %s not parented to the component", r.Type, r.Name)
					}
				}
				var pub, priv int
				for _, s := range m.ByType("aws:ec2/subnet:Subnet") {
					tags := s.Inputs["tags"].ObjectValue()
					switch {
					case strings.Contains(s.Name, "-public-"):
						pub++
						if tags[PublicELBTag].StringValue() != "1" || tags[InternalELBTag].HasValue() {
							t.Errorf("public subnet %s tags %v", s.Name, tags)
						}
					case strings.Contains(s.Name, "-private-"):
						priv++
						if tags[InternalELBTag].StringValue() != "1" || tags[PublicELBTag].HasValue() {
							t.Errorf("private subnet %s tags %v", s.Name, tags)
						}
					}
					if tags["owner"].StringValue() != "platform" {
						t.Errorf("subnet %s lacks the stack tags", s.Name)
					}
				}
				if pub != zones || priv != zones {
					t.Errorf("%d public, %d private subnets, want %d each", pub, priv, zones)
				}
				nats := m.ByType("aws:ec2/natGateway:NatGateway")
				if want := map[string]int{NATSingle: 1, NATPerAZ: zones}[nat]; len(nats) != want || len(m.ByType("aws:ec2/eip:Eip")) != want {
					t.Errorf("%d NAT gateways, want %d", len(nats), want)
				}
				natIDs := map[string]bool{}
				for _, r := range m.ByType("aws:ec2/route:Route") {
					if v := r.Inputs["natGatewayId"]; v.HasValue() {
						natIDs[v.StringValue()] = true
					}
				}
				if len(natIDs) != len(nats) {
					t.Errorf("private routes use %d NAT gateways, want %d", len(natIDs), len(nats))
				}
				if n := len(m.ByType("aws:ec2/routeTableAssociation:RouteTableAssociation")); n != 2*zones {
					t.Errorf("%d route table associations", n)
				}
				if len(m.ByType("aws:ec2/internetGateway:InternetGateway")) != 1 {
					t.Error("no internet gateway")
				}

				// The hub's egress is every NAT EIP's public IP as a /32,
				// in zone order.
				var want []string
				for _, az := range m.AZs[:len(nats)] {
					eip := m.One("aws:ec2/eip:Eip", "hub-nat-"+az)
					if eip == nil || eip.State["publicIp"].StringValue() == "" {
						t.Fatalf("no NAT EIP with a public IP in %s: %+v", az, eip)
					}
					want = append(want, eip.State["publicIp"].StringValue()+"/32")
				}
				cidrs, _ := await(t, mc.EgressCIDRs).Value.([]string)
				if !slices.Equal(cidrs, want) {
					t.Errorf("EgressCIDRs = %v, want %v", cidrs, want)
				}
			})
		}
	}
}

func TestCluster(t *testing.T) {
	m, mc := build(t, args(3, NATSingle))
	c := m.One("eks:index:Cluster", "hub")
	if c == nil || !c.Remote {
		t.Fatalf("pulumi-eks Cluster not registered as a remote component: %+v", c)
	}
	in := c.Inputs
	checks := map[string]any{
		"name": "mgmt", "version": "1.35", "authenticationMode": "API",
		"skipDefaultNodeGroup": true, "createOidcProvider": true,
		"endpointPrivateAccess": true, "endpointPublicAccess": true, "useDefaultVpcCni": true,
	}
	for k, want := range checks {
		if got := in[resource.PropertyKey(k)].V; got != want {
			t.Errorf("cluster %s = %v, want %v", k, got, want)
		}
	}
	var logs, cidrs []string
	for _, v := range in["enabledClusterLogTypes"].ArrayValue() {
		logs = append(logs, v.StringValue())
	}
	for _, v := range in["publicAccessCidrs"].ArrayValue() {
		cidrs = append(cidrs, v.StringValue())
	}
	if !slices.Equal(logs, LogTypes) || !slices.Equal(cidrs, []string{"203.0.113.0/24"}) {
		t.Errorf("logs %v cidrs %v", logs, cidrs)
	}
	if !strings.Contains(in["encryptionConfigKeyArn"].StringValue(), ":key/") {
		t.Errorf("no KMS secrets encryption: %v", in["encryptionConfigKeyArn"])
	}
	entries := in["accessEntries"].ObjectValue()
	if len(entries) != 2 {
		t.Fatalf("access entries %v", entries)
	}
	for _, e := range entries {
		pol := e.ObjectValue()["accessPolicies"].ObjectValue()["cluster-admin"].ObjectValue()
		if pol["policyArn"].StringValue() != "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy" ||
			pol["accessScope"].ObjectValue()["type"].StringValue() != "cluster" {
			t.Errorf("access entry %v", e)
		}
	}

	ng := m.One("eks:index:ManagedNodeGroup", "hub-nodes")
	if ng == nil || ng.Inputs["amiType"].StringValue() != "AL2023_x86_64_STANDARD" {
		t.Fatalf("node group %+v", ng)
	}
	if got := ng.Inputs["cluster"]; !got.IsResourceReference() || string(got.ResourceReferenceValue().URN) != c.URN {
		t.Errorf("node group cluster = %v", got)
	}
	// IMDSv2 with one hop: pods cannot reach the node role.
	lt := m.One("aws:ec2/launchTemplate:LaunchTemplate", "hub-nodes")
	if lt == nil {
		t.Fatal("no node launch template")
	}
	md := lt.Inputs["metadataOptions"].ObjectValue()
	if md["httpTokens"].StringValue() != "required" || md["httpPutResponseHopLimit"].NumberValue() != 1 || md["httpEndpoint"].StringValue() != "enabled" {
		t.Errorf("launch template metadata options %v, want IMDSv2 only, hop limit 1", md)
	}
	if lt.Inputs["name"].HasValue() {
		t.Error("launch template has a fixed name")
	}
	ltRef := ng.Inputs["launchTemplate"].ObjectValue()
	if !ltRef["id"].HasValue() || !ltRef["version"].HasValue() {
		t.Errorf("node group launch template %v", ltRef)
	}
	sc := ng.Inputs["scalingConfig"].ObjectValue()
	if sc["minSize"].NumberValue() != 2 || sc["desiredSize"].NumberValue() != 2 || sc["maxSize"].NumberValue() != 4 {
		t.Errorf("scaling %v", sc)
	}
	for _, r := range m.ByType("aws:ec2/route:Route") {
		if r.Inputs["natGatewayId"].HasValue() && !slices.Contains(ng.Dependencies, r.URN) {
			t.Errorf("node group does not wait for private route %s", r.Name)
		}
	}
	if n := len(m.ByType("aws:iam/rolePolicyAttachment:RolePolicyAttachment")); n != len(NodePolicies) {
		t.Errorf("%d node role attachments", n)
	}

	// Outputs come through the resource references the component returns.
	issuer := await(t, mc.OIDCIssuer)
	if issuer.Value != strings.TrimPrefix(mocks.Issuer(), "https://") {
		t.Errorf("issuer %v", issuer.Value)
	}
	if arn := await(t, mc.OIDCProviderArn); !strings.HasSuffix(arn.Value.(string), ":oidc-provider/"+issuer.Value.(string)) {
		t.Errorf("OIDC provider ARN %v", arn.Value)
	}
	if name := await(t, mc.ClusterName); name.Value != "mgmt" {
		t.Errorf("cluster name %v", name.Value)
	}
	kc := await(t, mc.Kubeconfig)
	if !kc.Secret {
		t.Error("kubeconfig not secret")
	}
	var cfg struct {
		Users []struct {
			User struct {
				Exec struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"exec"`
			} `json:"user"`
		} `json:"users"`
		Clusters []struct {
			Cluster map[string]string `json:"cluster"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(kc.Value.(string)), &cfg); err != nil {
		t.Fatal(err)
	}
	exec := cfg.Users[0].User.Exec
	if exec.Command != "aws" || !slices.Equal(exec.Args, []string{"eks", "get-token", "--cluster-name", "mgmt", "--region", mocks.Region, "--output", "json"}) {
		t.Errorf("exec %+v", exec)
	}
	if !strings.HasPrefix(cfg.Clusters[0].Cluster["server"], "https://") || cfg.Clusters[0].Cluster["certificate-authority-data"] == "" {
		t.Errorf("cluster entry %v", cfg.Clusters[0])
	}

	p := m.One("pulumi:providers:kubernetes", "hub")
	if p == nil || p.Inputs["clusterIdentifier"].StringValue() != "arn:aws:eks:"+mocks.Region+":"+mocks.AccountID+":cluster/mgmt" {
		t.Fatalf("provider clusterIdentifier %v", p)
	}
	// Server-side apply, and ConfigMaps and Secrets updated in place: by
	// default the provider replaces them on any data change, and with a
	// fixed name it deletes first, so a sealing-key rotation's `pulumi up`
	// deleted cluster-info under every Kustomization that substitutes from
	// it (found by the real engine, test/e2e rotation).
	for _, k := range []string{"enableServerSideApply", "enableConfigMapMutable", "enableSecretMutable"} {
		v := p.Inputs[resource.PropertyKey(k)]
		if !(v.IsBool() && v.BoolValue()) && !(v.IsString() && v.StringValue() == "true") {
			t.Errorf("provider %s = %v, want true", k, v)
		}
	}
	// A request timeout past client-go's 32 s discovery default: the
	// provider reads the whole OpenAPI document first and, when that ran
	// out, failed pulumi destroy (landing run at 2f8434f).
	if s := p.Inputs["kubeClientSettings"]; !s.IsObject() || s.ObjectValue()["timeout"].NumberValue() != ClientTimeout {
		t.Errorf("provider kubeClientSettings = %v, want timeout %d", s, ClientTimeout)
	}
}

func TestSubnetCIDRs(t *testing.T) {
	priv, pub, err := SubnetCIDRs("10.0.0.0/16", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(priv, []string{"10.0.0.0/19", "10.0.32.0/19", "10.0.64.0/19"}) ||
		!slices.Equal(pub, []string{"10.0.128.0/19", "10.0.160.0/19", "10.0.192.0/19"}) {
		t.Errorf("got %v %v", priv, pub)
	}
	priv, pub, _ = SubnetCIDRs("172.20.16.0/20", 2)
	if !slices.Equal(priv, []string{"172.20.16.0/23", "172.20.18.0/23"}) || !slices.Equal(pub, []string{"172.20.24.0/23", "172.20.26.0/23"}) {
		t.Errorf("got %v %v", priv, pub)
	}
	for _, bad := range []string{"10.0.0.1/16", "fd00::/48", "nope"} {
		if _, _, err := SubnetCIDRs(bad, 2); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, _, err := SubnetCIDRs("10.0.0.0/16", 5); err == nil {
		t.Error("5 zones accepted")
	}
}

// EKS refuses cluster subnets in a few zone IDs (use1-az3 ...): they are
// skipped, by ID, and a region left with too few zones is refused with the
// zones named, before anything is created.
func TestZonesEKSDoesNotSupport(t *testing.T) {
	names := []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}
	ids := []string{"use1-az1", "use1-az2", "use1-az4", "use1-az6", "use1-az3", "use1-az5"}
	got, err := StandardZones("us-east-1", names, ids, 3)
	if err != nil || strings.Join(got, ",") != "us-east-1a,us-east-1b,us-east-1c" {
		t.Fatalf("got %v, %v", got, err)
	}
	// In this account use1-az3 is us-east-1a: it is skipped.
	ids = []string{"use1-az3", "use1-az2", "use1-az4", "use1-az6"}
	got, err = StandardZones("us-east-1", names[:4], ids, 3)
	if err != nil || strings.Join(got, ",") != "us-east-1b,us-east-1c,us-east-1d" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := StandardZones("us-west-1", []string{"us-west-1a", "us-west-1c"}, []string{"usw1-az1", "usw1-az2"}, 2); err == nil ||
		!strings.Contains(err.Error(), "us-west-1c (usw1-az2)") || !strings.Contains(err.Error(), "availabilityZones 2") {
		t.Errorf("us-west-1 with usw1-az2: %v", err)
	}
	if _, err := StandardZones("us-east-1", names, ids, 2); err == nil {
		t.Error("names and IDs of different lengths accepted")
	}

	// Through the program: the zone with an unsupported ID gets no subnet.
	m := mocks.New()
	m.AZs = []string{mocks.Region + "a", mocks.Region + "b", mocks.Region + "c", mocks.Region + "d"}
	m.AZIDs = []string{"euw1-az1", "use1-az3", "euw1-az2", "euw1-az3"}
	err = m.Run(nil, func(ctx *pulumi.Context) error {
		_, err := New(ctx, "hub", args(3, NATSingle))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	placed := map[string]int{}
	for _, r := range m.Resources() {
		if az, ok := r.Inputs["availabilityZone"]; ok {
			placed[az.StringValue()]++
		}
	}
	if placed[mocks.Region+"b"] > 0 || placed[mocks.Region+"a"] == 0 || placed[mocks.Region+"d"] == 0 {
		t.Errorf("subnets per zone %v: want a, c, d and nothing in b (use1-az3)", placed)
	}
	m = mocks.New()
	m.AZs = []string{mocks.Region + "a", mocks.Region + "b", mocks.Region + "c"}
	m.AZIDs = []string{"euw1-az1", "use1-az3", "euw1-az2"}
	err = m.Run(nil, func(ctx *pulumi.Context) error {
		_, err := New(ctx, "hub", args(3, NATSingle))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "use1-az3") {
		t.Errorf("too few supported zones: %v", err)
	}
}

func TestTooFewZones(t *testing.T) {
	m := mocks.New()
	// Three zones, but one is a Local Zone: only two standard zones.
	m.AZs = []string{mocks.Region + "-lax-1a", mocks.Region + "a", mocks.Region + "b"}
	err := m.Run(nil, func(ctx *pulumi.Context) error {
		_, err := New(ctx, "hub", args(3, NATSingle))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "2 standard availability zones EKS supports (eu-west-1a, eu-west-1b)") {
		t.Fatalf("err %v", err)
	}
}

func TestLegacyAccessEntryAliases(t *testing.T) {
	admins := []string{"arn:aws:iam::111122223333:role/ops", "arn:aws:iam::111122223333:role/oncall"}
	transform := LegacyAccessEntryAliases("hub", admins)
	tests := map[string]struct {
		reason   string
		typ      string
		name     string
		existing []pulumi.Alias
		want     []string // alias names; nil: untouched
	}{
		"first admin's entry": {
			reason: "the previous version named it by position", typ: "aws:eks/accessEntry:AccessEntry",
			name: "hub-" + AccessEntryKey(admins[0]), want: []string{"hub-admin-0"},
		},
		"second admin's policy association": {
			reason: "pulumi-eks names it <entry>-<policy key>", typ: "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
			name: "hub-" + AccessEntryKey(admins[1]) + "-cluster-admin", want: []string{"hub-admin-1-cluster-admin"},
		},
		"aliases it had stay": {
			reason: "the transform adds, never replaces", typ: "aws:eks/accessEntry:AccessEntry",
			name: "hub-" + AccessEntryKey(admins[1]), existing: []pulumi.Alias{{Name: pulumi.String("older")}},
			want: []string{"older", "hub-admin-1"},
		},
		"the node role's entry": {
			reason: "pulumi-eks names instance-role entries by role, not by admin key", typ: "aws:eks/accessEntry:AccessEntry",
			name: "hub-node-id",
		},
		"an admin no longer listed": {
			reason: "no position to alias from", typ: "aws:eks/accessEntry:AccessEntry",
			name: "hub-" + AccessEntryKey("arn:aws:iam::111122223333:role/gone"),
		},
		"another type with an entry's name": {
			reason: "only entries and associations", typ: "aws:eks/cluster:Cluster",
			name: "hub-" + AccessEntryKey(admins[0]),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := transform(context.Background(), &pulumi.ResourceTransformArgs{
				Custom: true, Type: tc.typ, Name: tc.name, Opts: pulumi.ResourceOptions{Aliases: tc.existing},
			})
			if tc.want == nil {
				if res != nil {
					t.Fatalf("transformed (%s): aliases %v", tc.reason, res.Opts.Aliases)
				}
				return
			}
			if res == nil {
				t.Fatalf("untouched, want aliases %v (%s)", tc.want, tc.reason)
			}
			var got []string
			for _, a := range res.Opts.Aliases {
				n, _ := a.Name.(pulumi.String)
				got = append(got, string(n))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("aliases %v, want %v (%s)", got, tc.want, tc.reason)
			}
		})
	}
}

func TestTagOIDCProvider(t *testing.T) {
	transform := TagOIDCProvider("mgmt", map[string]string{"team": "platform"})
	if res := transform(context.Background(), &pulumi.ResourceTransformArgs{Custom: true, Type: "aws:eks/cluster:Cluster", Name: "hub-eksCluster"}); res != nil {
		t.Errorf("the cluster was transformed: %v", res.Props)
	}
	res := transform(context.Background(), &pulumi.ResourceTransformArgs{
		Custom: true, Type: "aws:iam/openIdConnectProvider:OpenIdConnectProvider", Name: "hub-oidcProvider",
		Props: pulumi.Map{"url": pulumi.String("https://oidc.eks.eu-west-1.amazonaws.com/id/X")},
	})
	if res == nil {
		t.Fatal("the OIDC provider was not transformed")
	}
	got := res.Props["tags"].(pulumi.StringMap)
	want := pulumi.StringMap{"team": pulumi.String("platform"), "eksfleet.io/cluster": pulumi.String("mgmt")}
	if len(got) != len(want) || got["team"] != want["team"] || got["eksfleet.io/cluster"] != want["eksfleet.io/cluster"] {
		t.Errorf("tags %v, want %v", got, want)
	}
	if res.Props["url"] == nil {
		t.Error("the provider's other inputs were dropped")
	}
}
