package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

func repoPolicy(t *testing.T) (*Policy, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "manifests", filepath.FromSlash(RelPath)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(b, RelPath)
	if err != nil {
		t.Fatalf("the repository's policy: %v", err)
	}
	return p, string(b)
}

func TestParse(t *testing.T) {
	_, src := repoPolicy(t)
	tests := []struct {
		name, old, new, wantErr string
	}{
		{"repo file", "", "", ""},
		{"version outside internal/contract/versions", "kubernetesVersions: []", `kubernetesVersions: ["1.29"]`, "may only narrow"},
		{"bad region", "- eu-central-1", "- Europe", `"Europe"`},
		{"no max nodes", "maxNodes: 20", "maxNodes: 0", "spec.maxNodes"},
		{"prefix outside bounds", "prefixLength: 16", "prefixLength: 22", "spec.cidr.prefixLength"},
		{"bad pool", "- 10.0.0.0/8", "- 10.0.0.1/8", "spec.cidr.pools"},
		{"unknown field", "maxNodes: 20", "maxNodes: 20\n  maxNode: 3", "maxNode"},
		{"name limit above the API", "maxLength: 20", "maxLength: 30", "spec.names.maxLength"},
		{"wrong kind", "kind: FleetPolicy", "kind: Policy", "FleetPolicy"},
		{"team name not a label value", "    payments:\n      members:", "    Payments_Team:\n      members:", `spec.teams: "Payments_Team"`},
		{"team without members", "    payments:\n      members:\n        - payments-lead", "    payments:\n      members: []", "spec.teams.payments.members is empty"},
		{"member not a login", "        - payments-lead", "        - payments lead", `spec.teams.payments.members: "payments lead"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := src
			if tt.old != "" {
				if !strings.Contains(in, tt.old) {
					t.Fatalf("policy has no %q", tt.old)
				}
				in = strings.Replace(in, tt.old, tt.new, 1)
			}
			_, err := Parse([]byte(in), "p.yaml")
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func good() *workloadcluster.Claim {
	return &workloadcluster.Claim{
		APIVersion: workloadcluster.APIVersion, Kind: workloadcluster.ClaimKind,
		Metadata: workloadcluster.Metadata{Name: "payments", Namespace: workloadcluster.ClaimNamespace},
		Spec: workloadcluster.Spec{Region: "eu-west-1", KubernetesVersion: "1.35", VPCCIDR: "10.1.0.0/16", AvailabilityZones: 3,
			NATMode: "single", Nodes: workloadcluster.Nodes{InstanceTypes: []string{"m7i.large"}, Min: 1, Desired: 2, Max: 3}},
	}
}

func TestCheckClaim(t *testing.T) {
	p, _ := repoPolicy(t)
	tests := []struct {
		name   string
		mutate func(c *workloadcluster.Claim)
		want   []string // "family/rule"
	}{
		{"good", func(c *workloadcluster.Claim) {}, nil},
		{"namespace", func(c *workloadcluster.Claim) { c.Metadata.Namespace = "default" }, []string{"api/namespace"}},
		{"name", func(c *workloadcluster.Claim) { c.Metadata.Name = "-x" }, []string{"api/name"}},
		{"reserved", func(c *workloadcluster.Claim) { c.Metadata.Name = "hub" }, []string{"policy/name"}},
		{"region", func(c *workloadcluster.Claim) { c.Spec.Region = "ap-south-1" }, []string{"policy/region"}},
		{"version", func(c *workloadcluster.Claim) { c.Spec.KubernetesVersion = "1.30" }, []string{"api/version"}},
		{"cidr outside pools", func(c *workloadcluster.Claim) { c.Spec.VPCCIDR = "172.16.0.0/16" }, []string{"policy/cidr"}},
		{"cidr too small", func(c *workloadcluster.Claim) { c.Spec.VPCCIDR = "10.1.0.0/22" }, []string{"api/cidr"}},
		{"docker bridge", func(c *workloadcluster.Claim) { c.Spec.VPCCIDR = "172.17.0.0/16" }, []string{"api/cidr", "policy/cidr"}},
		{"min 0", func(c *workloadcluster.Claim) { c.Spec.Nodes.Min = 0 }, []string{"api/nodes"}},
		{"nodes", func(c *workloadcluster.Claim) { c.Spec.Nodes.Desired = 9 }, []string{"api/nodes"}},
		{"too many nodes", func(c *workloadcluster.Claim) { c.Spec.Nodes.Max = 21; c.Spec.Nodes.Desired = 21 }, []string{"policy/max-nodes"}},
		{"instance type", func(c *workloadcluster.Claim) { c.Spec.Nodes.InstanceTypes = []string{"m7g.large"} }, []string{"policy/instance-types"}},
		{"no instance types", func(c *workloadcluster.Claim) { c.Spec.Nodes.InstanceTypes = nil }, []string{"api/instance-types"}},
		{"tags", func(c *workloadcluster.Claim) { c.Spec.Tags = map[string]string{"aws:x": "y"} }, []string{"api/tags"}},
		{"tags: keys the spokes' boundary trusts, in any case", func(c *workloadcluster.Claim) {
			c.Spec.Tags = map[string]string{"team": "payments", "eks:cluster-name": "mgmt-a", "Cluster.K8s.AmazonAWS.com/name": "mgmt-a"}
		}, []string{"api/tags", "api/tags"}},
		{"public access", func(c *workloadcluster.Claim) { c.Spec.PublicAccessCIDRs = []string{"everyone"} }, []string{"api/public-access"}},
		{"admin trust over IAM's quota", func(c *workloadcluster.Claim) {
			c.Spec.AdminPrincipalARNs = nil
			for i := range 10 {
				c.Spec.AdminPrincipalARNs = append(c.Spec.AdminPrincipalARNs, fmt.Sprintf("arn:aws:iam::123456789012:role/%s%d", strings.Repeat("team/", 40), i))
			}
		}, []string{"api/admins"}},
		{"public access: the internet", func(c *workloadcluster.Claim) { c.Spec.PublicAccessCIDRs = []string{"0.0.0.0/0"} }, []string{"api/public-access"}},
		{"public access: halves of the internet", func(c *workloadcluster.Claim) { c.Spec.PublicAccessCIDRs = []string{"0.0.0.0/1", "128.0.0.0/1"} }, []string{"api/public-access", "api/public-access"}},
		{"public access: too many", func(c *workloadcluster.Claim) {
			c.Spec.PublicAccessCIDRs = nil
			for i := 0; i <= APIMaxPublic; i++ {
				c.Spec.PublicAccessCIDRs = append(c.Spec.PublicAccessCIDRs, fmt.Sprintf("203.0.%d.0/24", i))
			}
		}, []string{"api/public-access"}},
		{"public access: office networks pass", func(c *workloadcluster.Claim) {
			c.Spec.PublicAccessCIDRs = []string{"203.0.113.0/24", "198.51.100.0/24"}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.mutate(c)
			var got []string
			for _, v := range p.CheckClaim(c) {
				got = append(got, v.Family+"/"+v.Rule)
				if v.Field == "" || v.Message == "" {
					t.Errorf("violation without field or message: %+v", v)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

const (
	hubAccount = "111122223333"
	hubAdmin   = "arn:aws:iam::" + hubAccount + ":role/platform-admins"
)

// The fleet policy lists the accounts spoke admins may come from; without
// the list only the hub's account is trusted, and an unknown hub account
// trusts none (fail closed).
func TestAdminAccounts(t *testing.T) {
	p, raw := repoPolicy(t)
	other := "arn:aws:iam::444455556666:role/team-admins"
	tests := []struct {
		name     string
		accounts []string
		hub      string
		admins   []string
		want     int
	}{
		{"default: the hub's account", nil, hubAccount, []string{hubAdmin}, 0},
		{"default refuses another account", nil, hubAccount, []string{hubAdmin, other}, 1},
		{"listed account", []string{hubAccount, "444455556666"}, hubAccount, []string{hubAdmin, other}, 0},
		{"the list replaces the default", []string{"444455556666"}, hubAccount, []string{hubAdmin, other}, 1},
		{"hub account unknown, no list: fail closed", nil, "", []string{hubAdmin}, 1},
		{"no admins", nil, hubAccount, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := *p
			q.AdminAccounts = tt.accounts
			vs := q.CheckFleet([]Member{{Name: "a", File: "a.yaml", CIDR: "10.1.0.0/16", Admins: tt.admins}}, Hub{AccountID: tt.hub})
			if len(vs) != tt.want {
				t.Fatalf("got %v, want %d violations", vs, tt.want)
			}
			for _, v := range vs {
				if v.Field != "spec.adminPrincipalArns" || !strings.Contains(v.Message, "spec.adminAccounts") {
					t.Errorf("violation %v does not name the field and the policy setting", v)
				}
			}
		})
	}
	if _, err := Parse([]byte(strings.Replace(raw, "adminAccounts: []", `adminAccounts: ["12345"]`, 1)), "p"); err == nil || !strings.Contains(err.Error(), "spec.adminAccounts") {
		t.Errorf("a malformed account id: %v, want an error naming spec.adminAccounts", err)
	}
	if _, err := Parse([]byte(strings.Replace(raw, "    - eu-central-1\n", "    - cn-north-1\n", 1)), "p"); err == nil || !strings.Contains(err.Error(), "aws-cn") {
		t.Errorf("a China region: %v, want an error naming the partition", err)
	}
	for typ, want := range map[string]string{"g5.xlarge": "GPU (NVIDIA)", "m7g.large": "arm64", "inf2.xlarge": "Neuron"} {
		if _, err := Parse([]byte(strings.Replace(raw, "    - t3.large\n", "    - "+typ+"\n", 1)), "p"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "spec.instanceTypes") {
			t.Errorf("policy instance type %s: %v, want an error naming %q", typ, err, want)
		}
	}
}

func TestCheckFleet(t *testing.T) {
	p, _ := repoPolicy(t)
	tests := []struct {
		name    string
		members []Member
		want    []string
	}{
		{"disjoint", []Member{{Name: "a", File: "a.yaml", CIDR: "10.1.0.0/16", Admins: nil}, {Name: "b", File: "b.yaml", CIDR: "10.2.0.0/16", Admins: nil}}, nil},
		{"overlap", []Member{{Name: "a", File: "a.yaml", CIDR: "10.1.0.0/16", Admins: nil}, {Name: "b", File: "b.yaml", CIDR: "10.1.64.0/18", Admins: nil}}, []string{"cidr-overlap:b"}},
		{"hub", []Member{{Name: "a", File: "a.yaml", CIDR: "10.0.0.0/16", Admins: nil}}, []string{"cidr-overlap:a"}},
		{"duplicate", []Member{{Name: "a", File: "a.yaml", CIDR: "10.1.0.0/16", Admins: nil}, {Name: "a", File: "a2.yaml", CIDR: "10.2.0.0/16", Admins: nil}}, []string{"duplicate-name:a"}},
		{"admins of the hub's account", []Member{{Name: "a", File: "a.yaml", CIDR: "10.1.0.0/16", Admins: []string{hubAdmin, "arn:aws:iam::" + hubAccount + ":role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Admin_0123456789abcdef"}}}, nil},
		{"admin of another account", []Member{{Name: "a", File: "a.yaml", CIDR: "10.1.0.0/16", Admins: []string{hubAdmin, "arn:aws:iam::999988887777:role/attacker"}}}, []string{"admin-account:a"}},
		{"admin of another partition's account", []Member{{Name: "a", File: "a.yaml", CIDR: "10.1.0.0/16", Admins: []string{"arn:aws-cn:iam::999988887777:user/x"}}}, []string{"admin-account:a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range p.CheckFleet(tt.members, Hub{VPCCIDR: "10.0.0.0/16", AccountID: hubAccount}) {
				got = append(got, v.Rule+":"+v.Cluster)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// The account's per-region quotas, counted with the hub's VPC and NAT
// Elastic IPs in its region: the cluster that passes one is refused,
// naming the field and the policy setting.
func TestCheckFleetQuotas(t *testing.T) {
	p, _ := repoPolicy(t)
	hub := Hub{VPCCIDR: "10.0.0.0/16", AccountID: hubAccount, Region: "eu-west-1", ElasticIPs: 3}
	spoke := func(name, region, nat string, azs int) Member {
		c := &workloadcluster.Claim{Metadata: workloadcluster.Metadata{Name: name},
			Spec: workloadcluster.Spec{Region: region, NATMode: nat, AvailabilityZones: azs, VPCCIDR: fmt.Sprintf("10.%d.0.0/16", len(name)+10*len(region))}}
		return MemberOf(c, name+".yaml")
	}
	raised := *p
	raised.Quotas = QuotaPolicy{VPCsPerRegion: 10, ElasticIPsPerRegion: 10}
	tests := []struct {
		name    string
		policy  *Policy
		members []Member
		want    []string // rule:cluster:field
		reason  string
	}{
		{"within AWS's defaults", p, []Member{spoke("a", "eu-west-1", "single", 3), spoke("bb", "eu-west-1", "single", 2)}, nil,
			"hub 1 + 2 VPCs of 4; hub 3 + 2 EIPs of 5"},
		{"a per-az spoke in the hub's region", p, []Member{spoke("a", "eu-west-1", "per-az", 3)},
			[]string{"region-quota:a:spec.natMode"}, "hub 3 + 3 EIPs pass 5"},
		{"the fifth spoke of a region", p, []Member{spoke("a", "us-east-1", "single", 2), spoke("bb", "us-east-1", "single", 2),
			spoke("ccc", "us-east-1", "single", 2), spoke("dddd", "us-east-1", "single", 2), spoke("eeeee", "us-east-1", "single", 2)},
			[]string{"region-quota:eeeee:spec.region"}, "the fifth VPC of a region passes 4 (the default VPC takes the fifth)"},
		{"other regions count apart", p, []Member{spoke("a", "us-east-1", "per-az", 3), spoke("bb", "us-west-2", "per-az", 3)}, nil,
			"3 EIPs in each region"},
		{"quotas raised", &raised, []Member{spoke("a", "eu-west-1", "per-az", 3), spoke("bb", "eu-west-1", "per-az", 3)}, nil,
			"hub 3 + 6 EIPs of 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range tt.policy.CheckFleet(tt.members, hub) {
				got = append(got, v.Rule+":"+v.Cluster+":"+v.Field)
				if !strings.Contains(v.Message, "spec.quotas") {
					t.Errorf("%s: %q does not name the policy setting", tt.reason, v.Message)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("%s: got %v, want %v", tt.reason, got, tt.want)
			}
		})
	}
	if _, err := Parse([]byte(strings.Replace(mustRead(t), "vpcsPerRegion: 4", "vpcsPerRegion: -1", 1)), "p"); err == nil || !strings.Contains(err.Error(), "spec.quotas") {
		t.Errorf("a negative quota: %v, want an error naming spec.quotas", err)
	}
}

func mustRead(t *testing.T) string {
	t.Helper()
	_, src := repoPolicy(t)
	return src
}

func TestCheckTransition(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(c *workloadcluster.Claim)
		want   []string
	}{
		{"unchanged", func(c *workloadcluster.Claim) {}, nil},
		{"nodes may change", func(c *workloadcluster.Claim) { c.Spec.Nodes.Max = 9 }, nil},
		{"next minor", func(c *workloadcluster.Claim) { c.Spec.KubernetesVersion = "1.36" }, nil},
		{"downgrade", func(c *workloadcluster.Claim) { c.Spec.KubernetesVersion = "1.34" }, []string{"upgrade"}},
		{"region", func(c *workloadcluster.Claim) { c.Spec.Region = "us-east-1" }, []string{"immutable"}},
		{"cidr", func(c *workloadcluster.Claim) { c.Spec.VPCCIDR = "10.9.0.0/16" }, []string{"immutable"}},
		{"azs", func(c *workloadcluster.Claim) { c.Spec.AvailabilityZones = 2 }, []string{"immutable"}},
		{"nat up", func(c *workloadcluster.Claim) { c.Spec.NATMode = "per-az" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.mutate(c)
			var got []string
			for _, v := range CheckTransition(good(), c) {
				got = append(got, v.Rule)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	old := good()
	old.Spec.NATMode = "per-az"
	if vs := CheckTransition(old, good()); len(vs) != 1 || vs[0].Rule != "nat-transition" {
		t.Errorf("per-az -> single: %v", vs)
	}
}

func TestCheckFleetZones(t *testing.T) {
	p, _ := repoPolicy(t)
	spoke := func(name, region string, azs int) Member {
		c := &workloadcluster.Claim{Metadata: workloadcluster.Metadata{Name: name},
			Spec: workloadcluster.Spec{Region: region, NATMode: "single", AvailabilityZones: azs, VPCCIDR: fmt.Sprintf("10.%d.0.0/16", 20+len(name)),
				KubernetesVersion: "1.35"}}
		return MemberOf(c, name+".yaml")
	}
	zones := map[string][]string{"eu-west-1": {"euw1-az1", "euw1-az2", "euw1-az3"}, "us-east-1": {"use1-az1", "use1-az2"}}
	addons := clusterinfo.AddonVersions{
		"eu-west-1": {"1.35": {"vpc-cni": "v1"}, "1.36": {"vpc-cni": "v1"}},
		"us-east-1": {"1.36": {"vpc-cni": "v1"}},
	}
	regions := []string{"eu-west-1", "us-east-1"}
	tests := map[string]struct {
		reason  string
		regions []string // the policy's spec.regions
		zones   map[string][]string
		addons  clusterinfo.AddonVersions
		members []Member
		want    []string // rule:cluster:field
		say     string
	}{
		"regions the hub looked up": {reason: "zones for both", regions: regions, zones: zones,
			members: []Member{spoke("a", "eu-west-1", 3), spoke("bb", "us-east-1", 2)}},
		"a region the hub did not look up": {reason: "the stack's spokeRegions lacks it", regions: regions, zones: zones,
			members: []Member{spoke("a", "us-west-2", 2)}, want: []string{"region-zones:a:spec.region"}, say: "eks-fleet:spokeRegions"},
		"more zones than EKS accepts there": {reason: "us-east-1 has two usable zones here", regions: regions, zones: zones,
			members: []Member{spoke("a", "us-east-1", 3)}, want: []string{"region-zones:a:spec.availabilityZones"}, say: "use1-az1, use1-az2"},
		"cluster-info without zones": {reason: "an older hub: nothing to check against", zones: nil,
			members: []Member{spoke("a", "us-west-2", 3)}},
		"a policy region the hub did not look up": {reason: "the policy admits claims the composition cannot place",
			regions: []string{"eu-west-1", "us-east-1", "us-west-2"}, zones: zones,
			want: []string{"region-zones::spec.regions"}, say: `"us-west-2"`},
		"add-on versions for the claim's Kubernetes": {reason: "the hub looked them up", regions: regions, zones: zones, addons: addons,
			members: []Member{spoke("a", "eu-west-1", 3)}},
		"no add-on versions for the claim's Kubernetes": {reason: "the composition would wait for them", regions: regions, zones: zones, addons: addons,
			members: []Member{spoke("a", "us-east-1", 2)}, want: []string{"region-addons:a:spec.kubernetesVersion"}, say: "SPOKE_ADDON_VERSIONS has 1.36 there"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hub := Hub{VPCCIDR: "10.0.0.0/16", AccountID: hubAccount, Region: "eu-west-1", ElasticIPs: 1, ZoneIDs: tc.zones, AddonVersions: tc.addons}
			q := *p
			q.Regions = tc.regions
			var got []string
			for _, v := range q.CheckFleet(tc.members, hub) {
				got = append(got, v.Rule+":"+v.Cluster+":"+v.Field)
				if !strings.Contains(v.Message, tc.say) {
					t.Errorf("%q does not say %q (%s)", v.Message, tc.say, tc.reason)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v (%s)", got, tc.want, tc.reason)
			}
		})
	}
}
