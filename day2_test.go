package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/gitops-fleet/eks-fleet/components/managementcluster"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/hub"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// Day 2: the program runs under the mocks with a stack, then with the
// edited stack; comparing the two registrations says what the engine would
// do. A URN in both runs is an update or a replacement of the same
// resource; a URN only in the first run is a delete.

const (
	adminA = "arn:aws:iam::111122223333:role/platform-admin"
	// An IAM Identity Center role: a path in the ARN.
	adminB = "arn:aws:iam::111122223333:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Admin_0123456789abcdef"
)

// physicalName is the input holding a resource's fixed AWS name, for the
// types the program gives one.
var physicalName = map[string]string{
	"aws:iam/role:Role":                                 "name",
	"aws:iam/policy:Policy":                             "name",
	"aws:cloudwatch/logGroup:LogGroup":                  "name",
	"aws:secretsmanager/secret:Secret":                  "name",
	"aws:kms/alias:Alias":                               "name",
	"eks:index:ManagedNodeGroup":                        "nodeGroupName",
	"aws:eks/nodeGroup:NodeGroup":                       "nodeGroupName",
	"aws:ec2/subnet:Subnet":                             "",
	"aws:iam/rolePolicyAttachment:RolePolicyAttachment": "",
}

// forceNew are the inputs whose change replaces the resource
// (terraform-provider-aws schemas: aws_eks_node_group, aws_iam_policy,
// aws_iam_role, aws_cloudwatch_log_group, aws_secretsmanager_secret).
var forceNew = map[string][]string{
	"eks:index:ManagedNodeGroup":       {"instanceTypes", "amiType", "subnetIds", "nodeGroupName", "nodeGroupNamePrefix", "capacityType", "diskSize"},
	"aws:iam/policy:Policy":            {"name", "namePrefix", "description", "path"},
	"aws:iam/role:Role":                {"name", "namePrefix"},
	"aws:cloudwatch/logGroup:LogGroup": {"name", "namePrefix"},
	"aws:secretsmanager/secret:Secret": {"name", "namePrefix"},
	"aws:kms/alias:Alias":              {"name", "namePrefix"},
}

func mgmtWith(t *testing.T, set map[string]string) map[string]string {
	t.Helper()
	cfg := stackConfig(t, "Pulumi.mgmt.yaml")
	cfg["eks-fleet:adminPrincipalArns"] = `["` + adminA + `","` + adminB + `"]`
	maps.Copy(cfg, set)
	return cfg
}

func runMocks(t *testing.T, cfg map[string]string, setup func(*mocks.Mocks)) (*mocks.Mocks, error) {
	t.Helper()
	m := mocks.New()
	if setup != nil {
		setup(m)
	}
	return m, m.Run(cfg, hub.Program(m))
}

func byURN(m *mocks.Mocks) map[string]*mocks.Resource {
	out := map[string]*mocks.Resource{}
	for _, r := range m.Resources() {
		out[r.URN] = r
	}
	return out
}

func input(r *mocks.Resource, k string) resource.PropertyValue {
	v := r.Inputs[resource.PropertyKey(k)]
	if v.IsSecret() {
		v = v.SecretValue().Element
	}
	return v
}

// accessEntries maps each access entry key of the hub cluster to its
// principal.
func accessEntries(t tb, m *mocks.Mocks) map[string]string {
	t.Helper()
	c := m.One("eks:index:Cluster", hub.ClusterResource)
	if c == nil {
		t.Fatal("no hub cluster")
	}
	out := map[string]string{}
	for k, v := range input(c, "accessEntries").ObjectValue() {
		out[string(k)] = v.ObjectValue()["principalArn"].StringValue()
	}
	return out
}

// checkEngine asserts what must hold for any edit: no resource keeps a
// fixed physical name across a change of a ForceNew input (the
// create-first replacement would collide with itself), access entries that
// survive keep their principal (a replaced entry collides with the other
// entry still holding that principal), and sealing keys are protected, so
// a key that disappears from the program is refused deletion.
func checkEngine(t tb, before, after *mocks.Mocks) {
	t.Helper()
	b, a := byURN(before), byURN(after)
	for urn, old := range b {
		nw, ok := a[urn]
		if !ok {
			if isSealingKey(old) && !old.Protect {
				t.Errorf("sealing key %s dropped and not protected: the engine would destroy it", old.Name)
			}
			continue
		}
		var changed []string
		for _, k := range forceNew[old.Type] {
			if !input(old, k).DeepEquals(input(nw, k)) {
				changed = append(changed, k)
			}
		}
		if len(changed) == 0 {
			continue
		}
		if f := physicalName[old.Type]; f != "" {
			on, nn := input(old, f), input(nw, f)
			if on.IsString() && on.StringValue() != "" && on.DeepEquals(nn) {
				t.Errorf("%s %s: ForceNew %v changed but the physical %s %q stays: the create-first replacement collides",
					old.Type, old.Name, changed, f, on.StringValue())
			}
		}
	}
	eb, ea := accessEntries(t, before), accessEntries(t, after)
	for k, p := range ea {
		if q, ok := eb[k]; ok && q != p {
			t.Errorf("access entry %s: principal %s -> %s (replacement collides with the entry still holding it)", k, q, p)
		}
	}
	for _, r := range after.ByType("tls:index/privateKey:PrivateKey") {
		if isSealingKey(r) && !r.Protect {
			t.Errorf("sealing key %s not protected", r.Name)
		}
	}
}

func TestDay2Edits(t *testing.T) {
	cases := []struct {
		name        string
		before, now map[string]string
		setupNow    func(*mocks.Mocks)
		check       func(t *testing.T, before, after *mocks.Mocks)
	}{
		{
			name: "first admin removed",
			now:  map[string]string{"eks-fleet:adminPrincipalArns": `["` + adminB + `"]`},
			check: func(t *testing.T, before, after *mocks.Mocks) {
				k := managementcluster.AccessEntryKey(adminB)
				if accessEntries(t, before)[k] != adminB || !maps.Equal(accessEntries(t, after), map[string]string{k: adminB}) {
					t.Errorf("survivor's entry moved: before %v after %v", accessEntries(t, before), accessEntries(t, after))
				}
			},
		},
		{
			name: "admins reordered",
			now:  map[string]string{"eks-fleet:adminPrincipalArns": `["` + adminB + `","` + adminA + `"]`},
			check: func(t *testing.T, before, after *mocks.Mocks) {
				if !maps.Equal(accessEntries(t, before), accessEntries(t, after)) {
					t.Errorf("entries changed: %v -> %v", accessEntries(t, before), accessEntries(t, after))
				}
			},
		},
		{
			name: "instance types changed",
			now:  map[string]string{"eks-fleet:nodeInstanceTypes": `["m7g.large","c7g.large"]`},
			check: func(t *testing.T, before, after *mocks.Mocks) {
				ng := after.One("eks:index:ManagedNodeGroup", hub.ClusterResource+"-nodes")
				if ng == nil || before.One("eks:index:ManagedNodeGroup", hub.ClusterResource+"-nodes") == nil {
					t.Fatal("node group not kept under its logical name")
				}
				if input(ng, "amiType").StringValue() != "AL2023_ARM_64_STANDARD" {
					t.Errorf("amiType %v", input(ng, "amiType"))
				}
			},
		},
		{
			name: "zone count lowered",
			now:  map[string]string{"eks-fleet:availabilityZones": "2"},
			check: func(t *testing.T, before, after *mocks.Mocks) {
				b := byURN(before)
				for _, az := range []string{"a", "b"} {
					for _, kind := range []string{"public", "private"} {
						r := after.One("aws:ec2/subnet:Subnet", hub.ClusterResource+"-"+kind+"-"+mocks.Region+az)
						if r == nil || b[r.URN] == nil {
							t.Errorf("%s subnet in zone %s not kept", kind, az)
						}
					}
				}
				if n := len(after.ByType("aws:ec2/subnet:Subnet")); n != 4 {
					t.Errorf("%d subnets, want 4", n)
				}
			},
		},
		{
			name: "sealing key appended",
			now:  map[string]string{"eks-fleet:sealingKeyIds": `["key-2026-01","key-2026-07"]`},
			check: func(t *testing.T, before, after *mocks.Mocks) {
				old := before.One("tls:index/privateKey:PrivateKey", hub.SealingResource+"-key-2026-01")
				if old == nil || byURN(after)[old.URN] == nil {
					t.Fatal("the first key did not survive the rotation")
				}
			},
		},
		{
			name: "sealing key renamed",
			now:  map[string]string{"eks-fleet:sealingKeyIds": `["key-2026-1"]`},
			check: func(t *testing.T, before, after *mocks.Mocks) {
				old := before.One("tls:index/privateKey:PrivateKey", hub.SealingResource+"-key-2026-01")
				if old == nil || !old.Protect || byURN(after)[old.URN] != nil {
					t.Fatalf("renamed key: before %+v", old)
				}
			},
		},
		{
			name:     "version raised by one minor",
			before:   map[string]string{"eks-fleet:kubernetesVersion": "1.35"},
			now:      map[string]string{"eks-fleet:kubernetesVersion": "1.36"},
			setupNow: func(m *mocks.Mocks) { m.Clusters = map[string]string{"mgmt": "1.35"} },
			check: func(t *testing.T, before, after *mocks.Mocks) {
				c := after.One("eks:index:Cluster", hub.ClusterResource)
				ng := after.One("eks:index:ManagedNodeGroup", hub.ClusterResource+"-nodes")
				if input(c, "version").StringValue() != "1.36" || input(ng, "version").StringValue() != "1.36" {
					t.Errorf("cluster %v, nodes %v, want both 1.36", input(c, "version"), input(ng, "version"))
				}
				if !slices.Contains(ng.Dependencies, c.URN) {
					t.Errorf("node group does not wait for the control plane: %v", ng.Dependencies)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, err := runMocks(t, mgmtWith(t, tc.before), nil)
			if err != nil {
				t.Fatal(err)
			}
			now := mgmtWith(t, tc.before)
			maps.Copy(now, tc.now)
			after, err := runMocks(t, now, tc.setupNow)
			if err != nil {
				t.Fatal(err)
			}
			checkEngine(t, before, after)
			tc.check(t, before, after)
		})
	}
}

// TestDay2CheckCatchesFixedNames proves checkEngine can fail: a planted
// node group that keeps a fixed name across an instance type change.
func TestDay2CheckCatchesFixedNames(t *testing.T) {
	before, err := runMocks(t, mgmtWith(t, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := runMocks(t, mgmtWith(t, map[string]string{"eks-fleet:nodeInstanceTypes": `["m7i.large"]`}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*mocks.Mocks{before, after} {
		ng := m.One("eks:index:ManagedNodeGroup", hub.ClusterResource+"-nodes")
		ng.Inputs["nodeGroupName"] = resource.NewProperty("mgmt-system")
	}
	// Index-keyed access entries, as before: removing the first admin
	// re-keys the second (B now under the key A had).
	c := after.One("eks:index:Cluster", hub.ClusterResource)
	entryB := c.Inputs["accessEntries"].ObjectValue()[resource.PropertyKey(managementcluster.AccessEntryKey(adminB))]
	moved := resource.PropertyMap{resource.PropertyKey(managementcluster.AccessEntryKey(adminA)): entryB}
	c.Inputs["accessEntries"] = resource.NewObjectProperty(moved)
	key := after.One("tls:index/privateKey:PrivateKey", hub.SealingResource+"-key-2026-01")
	key.Protect = false

	rec := &recorder{t: t}
	checkEngine(rec, before, after)
	for _, want := range []string{"nodeGroupName \"mgmt-system\" stays", "access entry " + managementcluster.AccessEntryKey(adminA), "not protected"} {
		if !slices.ContainsFunc(rec.errs, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("planted problem %q not reported; reported %q", want, rec.errs)
		}
	}
}

func TestUpgradeSkippingAMinorRefused(t *testing.T) {
	cases := []struct{ deployed, wanted string }{{"1.34", "1.36"}, {"1.36", "1.35"}}
	for _, tc := range cases {
		m, err := runMocks(t, mgmtWith(t, map[string]string{"eks-fleet:kubernetesVersion": tc.wanted}),
			func(m *mocks.Mocks) { m.Clusters = map[string]string{"mgmt": tc.deployed} })
		if err == nil || !strings.Contains(err.Error(), stacks.FullKey(stacks.KubernetesVersionKey)) || !strings.Contains(err.Error(), tc.deployed+" (deployed)") {
			t.Errorf("%s -> %s: err %v", tc.deployed, tc.wanted, err)
		}
		if n := len(m.Resources()); n != 0 {
			t.Errorf("%s -> %s: %d resources registered", tc.deployed, tc.wanted, n)
		}
	}
	// Another account's cluster of another name does not matter.
	if _, err := runMocks(t, mgmtWith(t, nil), func(m *mocks.Mocks) { m.Clusters = map[string]string{"prod": "1.34"} }); err != nil {
		t.Errorf("unrelated cluster: %v", err)
	}
}

func TestDeployerListedAsAdminRefused(t *testing.T) {
	m, err := runMocks(t, mgmtWith(t, nil), func(m *mocks.Mocks) {
		m.CallerARN = "arn:aws:sts::" + mocks.AccountID + ":assumed-role/platform-admin/alice"
	})
	if err == nil || !strings.Contains(err.Error(), stacks.FullKey(stacks.AdminPrincipalARNsKey)) || !strings.Contains(err.Error(), adminA) {
		t.Fatalf("err %v", err)
	}
	if n := len(m.Resources()); n != 0 {
		t.Errorf("%d resources registered", n)
	}
	if _, err := runMocks(t, mgmtWith(t, nil), func(m *mocks.Mocks) {
		m.CallerARN = "arn:aws:sts::" + mocks.AccountID + ":assumed-role/ci-deployer/run-1"
	}); err != nil {
		t.Errorf("other deployer: %v", err)
	}
}

// TestPreview: with DryRun the computed outputs are unknown, and the
// program still registers everything it registers on up.
func TestPreview(t *testing.T) {
	up, err := runMocks(t, mgmtWith(t, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	pre, err := runMocks(t, mgmtWith(t, nil), func(m *mocks.Mocks) { m.DryRun = true })
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if a, b := up.SortedTypes(), pre.SortedTypes(); !slices.Equal(a, b) {
		t.Fatalf("preview registered %v, up %v", b, a)
	}
	// The unknowns really reached dependents: the hub External Secrets
	// policy's document needs the secret's ARN, unknown before the secret
	// exists (the SDK's mock monitor drops unknown inputs, so it is
	// absent).
	eso, esoUp := pre.One("aws:iam/policy:Policy", hub.ESOResource), up.One("aws:iam/policy:Policy", hub.ESOResource)
	if _, ok := eso.Inputs["policy"]; ok {
		t.Errorf("External Secrets policy known in preview: %v", eso.Inputs["policy"])
	}
	if _, ok := esoUp.Inputs["policy"]; !ok {
		t.Error("External Secrets policy missing on up")
	}
}

// TestFunctionRegistry: the functionRegistry setting reaches cluster-info
// (the hub's Function object pulls <registry>/function-workload-cluster),
// and a bad one creates nothing.
func TestFunctionRegistry(t *testing.T) {
	m, err := runMocks(t, mgmtWith(t, map[string]string{"eks-fleet:functionRegistry": "registry.example.com:5000/platform"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	cms := m.ByType("kubernetes:core/v1:ConfigMap")
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps", len(cms))
	}
	if got := cms[0].Inputs["data"].ObjectValue()[clusterinfo.FunctionRegistry].StringValue(); got != "registry.example.com:5000/platform" {
		t.Errorf("cluster-info %s = %q", clusterinfo.FunctionRegistry, got)
	}
	m, err = runMocks(t, mgmtWith(t, map[string]string{"eks-fleet:functionRegistry": "ghcr.io/org/eks-fleet:v1"}), nil)
	if err == nil || !strings.Contains(err.Error(), "eks-fleet:functionRegistry") {
		t.Fatalf("tagged registry: err %v, want one naming eks-fleet:functionRegistry", err)
	}
	if n := len(m.SortedTypes()); n != 0 {
		t.Errorf("bad functionRegistry still registered %d resource types", n)
	}
}

// TestControlPlaneLogGroup: owned, with the retention, before the cluster.
func TestControlPlaneLogGroup(t *testing.T) {
	m, err := runMocks(t, mgmtWith(t, map[string]string{"eks-fleet:logRetentionDays": "365"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	lg := m.One("aws:cloudwatch/logGroup:LogGroup", hub.ClusterResource+"-control-plane")
	if lg == nil {
		t.Fatal("no control-plane log group")
	}
	if n, d := input(lg, "name").StringValue(), input(lg, "retentionInDays").NumberValue(); n != "/aws/eks/mgmt/cluster" || d != 365 {
		t.Errorf("log group %s retention %v", n, d)
	}
	c := m.One("eks:index:Cluster", hub.ClusterResource)
	if !slices.Contains(c.Dependencies, lg.URN) {
		t.Error("cluster does not depend on its log group")
	}
	if _, ok := c.Inputs["instanceRoles"]; !ok {
		t.Error("cluster has no instanceRoles: pulumi-eks would create its own unused instance role")
	}
}

// TestUpgradeFromThePreviousVersion (NM9): a hub the previous version
// deployed has the log group EKS made, which the program adopts rather than
// failing to create, and its access entries renamed by alias (the
// transform on the pulumi-eks Cluster, LegacyAccessEntryAliases).
func TestUpgradeFromThePreviousVersion(t *testing.T) {
	tests := map[string]struct {
		reason     string
		existing   []string
		wantImport string
	}{
		"fresh account": {reason: "nothing to adopt: the program creates it", wantImport: ""},
		"hub deployed by the previous version": {
			reason:   "EKS created /aws/eks/mgmt/cluster when the cluster logged",
			existing: []string{"/aws/eks/mgmt/cluster"}, wantImport: "/aws/eks/mgmt/cluster",
		},
		"only look-alike groups": {
			reason:   "another hub's, a spoke's and a longer name share the prefix, none is the hub's",
			existing: []string{"/aws/eks/mgmt2/cluster", "/aws/eks/mgmt-pay/cluster", "/aws/eks/mgmt/cluster-old"}, wantImport: "",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := runMocks(t, mgmtWith(t, nil), func(m *mocks.Mocks) { m.LogGroups = tc.existing })
			if err != nil {
				t.Fatal(err)
			}
			lg := m.One("aws:cloudwatch/logGroup:LogGroup", hub.ClusterResource+"-control-plane")
			if lg == nil {
				t.Fatal("no control-plane log group")
			}
			if lg.ImportID != tc.wantImport {
				t.Errorf("log group import %q, want %q (%s)", lg.ImportID, tc.wantImport, tc.reason)
			}
			if c := m.One("eks:index:Cluster", hub.ClusterResource); c.Transforms != 2 {
				t.Errorf("the pulumi-eks Cluster has %d transforms, want the access-entry aliases and the OIDC provider tag", c.Transforms)
			}
		})
	}
}

func isSealingKey(r *mocks.Resource) bool {
	return r.Type == "tls:index/privateKey:PrivateKey" && strings.HasPrefix(r.Name, hub.SealingResource+"-")
}

// tb is what checkEngine reports through.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
}

// recorder collects checkEngine's findings instead of failing.
type recorder struct {
	t    *testing.T
	errs []string
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.t.Fatal(args...) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// clusterInfoAfter checks a program run's error against wantErr (each a
// part of the message) and, when it ran, returns cluster-info's value of
// key; ok is false when the run was meant to fail.
func clusterInfoAfter(t *testing.T, m *mocks.Mocks, err error, key string, wantErr []string, reason string) (value string, ok bool) {
	t.Helper()
	if wantErr != nil {
		if err == nil {
			t.Fatalf("no error (%s)", reason)
		}
		for _, w := range wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q (%s)", err, w, reason)
			}
		}
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	cms := m.ByType("kubernetes:core/v1:ConfigMap")
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps", len(cms))
	}
	return cms[0].Inputs["data"].ObjectValue()[resource.PropertyKey(key)].StringValue(), true
}

// TestSpokeZoneIDs (NM3): the program writes each spoke region's zone IDs
// to cluster-info, read with an AWS provider for that region, skipping
// Local/Wavelength Zones and the IDs EKS refuses; a region without two
// usable zones, or a malformed one, is refused naming the setting.
func TestSpokeZoneIDs(t *testing.T) {
	tests := map[string]struct {
		reason  string
		regions string // eks-fleet:spokeRegions, "" unset
		azs     []string
		ids     []string
		want    string // SPOKE_ZONE_IDS
		wantErr []string
	}{
		"hub region only": {
			reason: "unset, spokes go in the hub's region",
			want:   `{"eu-west-1":["euw1-az1","euw1-az2","euw1-az3","euw1-az4"]}`,
		},
		"two regions": {
			reason:  "each region read with its own provider (the mocks' third us-east-1 zone is use1-az3, which EKS refuses)",
			regions: `["eu-west-1","us-east-1"]`,
			want:    `{"eu-west-1":["euw1-az1","euw1-az2","euw1-az3","euw1-az4"],"us-east-1":["use1-az1","use1-az2","use1-az4"]}`,
		},
		"zone EKS refuses": {
			reason:  "use1-az3 is skipped by ID, whatever its name in this account",
			regions: `["us-east-1"]`,
			azs:     []string{mocks.Region + "a", mocks.Region + "b", mocks.Region + "c", mocks.Region + "d"},
			ids:     []string{"use1-az6", "use1-az3", "use1-az1", "use1-az2"},
			want:    `{"us-east-1":["use1-az6","use1-az1","use1-az2"]}`,
		},
		"local zone": {
			reason:  "only <region><letter> zones",
			regions: `["eu-west-1"]`,
			azs:     []string{mocks.Region + "-lhr-1a", mocks.Region + "a", mocks.Region + "b", mocks.Region + "c"},
			ids:     []string{"euw1-lhr1-az1", "euw1-az1", "euw1-az2", "euw1-az3"},
			want:    `{"eu-west-1":["euw1-az1","euw1-az2","euw1-az3"]}`,
		},
		"too few usable zones": {
			reason:  "a spoke needs two zones EKS accepts",
			regions: `["us-east-1"]`,
			azs:     []string{mocks.Region + "a", mocks.Region + "b", mocks.Region + "c"},
			ids:     []string{"use1-az1", "use1-az3", "use1-az3"},
			wantErr: []string{"eks-fleet:spokeRegions us-east-1: 1 standard availability zones EKS accepts", "EKS refuses us-east-1b (use1-az3)"},
		},
		"not a region": {
			reason:  "refused before anything is registered",
			regions: `["eu-west-1","mars"]`,
			wantErr: []string{"eks-fleet:spokeRegions", "mars", "AWS regions such as eu-west-1"},
		},
		"another partition": {
			reason:  "one account's roles and boundary serve every spoke",
			regions: `["us-gov-west-1"]`,
			wantErr: []string{"eks-fleet:spokeRegions", "us-gov-west-1", "regions of the hub's partition aws"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			set := map[string]string{}
			if tc.regions != "" {
				set["eks-fleet:spokeRegions"] = tc.regions
			}
			cfg := mgmtWith(t, set)
			if tc.regions == "" {
				delete(cfg, "eks-fleet:spokeRegions")
			}
			m, err := runMocks(t, cfg, func(m *mocks.Mocks) {
				if tc.azs != nil {
					m.AZs, m.AZIDs = tc.azs, tc.ids
				}
			})
			got, ok := clusterInfoAfter(t, m, err, clusterinfo.SpokeZoneIDs, tc.wantErr, tc.reason)
			if ok && got != tc.want {
				t.Errorf("cluster-info %s = %s, want %s (%s)", clusterinfo.SpokeZoneIDs, got, tc.want, tc.reason)
			}
		})
	}
}

// TestSpokeAddonVersions (N12): the program writes, for each spoke region
// and each Kubernetes version the fleet accepts, EKS's default version of
// every managed add-on, read through that region's provider. A Kubernetes
// version a region does not offer yet is left out of that region (T4-M3:
// it failed the whole pulumi up); a region offering none, or a look-up
// AWS refuses, fails naming the region, Kubernetes version and add-on.
func TestSpokeAddonVersions(t *testing.T) {
	// Each region answers its own builds, so a value read through the
	// wrong provider shows.
	perRegion := func(region, addon, k8s string) string { return region + "/" + addon + "/" + k8s }
	want := func(regions ...string) clusterinfo.AddonVersions {
		out := clusterinfo.AddonVersions{}
		for _, r := range regions {
			out[r] = map[string]map[string]string{}
			for _, k8s := range versions.Kubernetes() {
				out[r][k8s] = map[string]string{}
				for _, a := range versions.EKSAddons() {
					out[r][k8s][a] = perRegion(r, a, k8s)
				}
			}
		}
		return out
	}
	newest := versions.Kubernetes()[len(versions.Kubernetes())-1]
	withoutNewestIn := func(region string, v clusterinfo.AddonVersions) clusterinfo.AddonVersions {
		delete(v[region], newest)
		return v
	}
	pins := clusterinfo.AddonVersions{}
	for _, r := range []string{"eu-west-1", "us-east-1"} {
		pins[r] = map[string]map[string]string{versions.DefaultKubernetes: {}}
		for _, a := range versions.EKSAddons() {
			pins[r][versions.DefaultKubernetes][a] = "v1.2.3-eksbuild.4"
		}
	}
	waves := clusterinfo.AddonWaves{{Name: "canary", Clusters: []string{"apps-staging"},
		Versions: clusterinfo.AddonVersions{"us-east-1": {versions.DefaultKubernetes: {"vpc-cni": "v1.2.4-eksbuild.1"}}}}}
	tests := map[string]struct {
		reason  string
		regions string
		pins    clusterinfo.AddonVersions
		waves   clusterinfo.AddonWaves
		answer  func(region, addon, k8s string) string
		want    clusterinfo.AddonVersions
		wantErr []string
	}{
		"two regions": {
			reason: "each region read with its own provider", regions: `["eu-west-1","us-east-1"]`,
			answer: perRegion, want: want("eu-west-1", "us-east-1"),
		},
		"a version EKS does not offer there yet": {
			reason: "the fleet accepts a Kubernetes version one region lacks: that version is left out there, whole", regions: `["eu-west-1","us-east-1"]`,
			answer: func(region, addon, k8s string) string {
				if region == "us-east-1" && k8s == newest && addon == "coredns" {
					return ""
				}
				return perRegion(region, addon, k8s)
			},
			want: withoutNewestIn("us-east-1", want("eu-west-1", "us-east-1")),
		},
		"a region offering none of the versions": {
			reason: "nothing a spoke there could run", regions: `["eu-west-1","us-east-1"]`,
			answer: func(region, addon, k8s string) string {
				if region == "us-east-1" {
					return ""
				}
				return perRegion(region, addon, k8s)
			},
			wantErr: []string{"eks-fleet:spokeRegions us-east-1: EKS offers add-on versions for none of the Kubernetes versions the fleet accepts"},
		},
		"a look-up AWS refuses": {
			reason: "not a version EKS lacks: the deployer's access", regions: `["eu-west-1","us-east-1"]`,
			answer: func(region, addon, k8s string) string {
				if region == "us-east-1" && k8s == newest && addon == "coredns" {
					return mocks.AddonVersionDenied + "not authorized"
				}
				return perRegion(region, addon, k8s)
			},
			wantErr: []string{"eks-fleet:spokeRegions us-east-1: EKS add-on coredns for Kubernetes " + newest, "AccessDenied"},
		},
		"pinned": {
			reason:  "T4-M3: a pinned stack writes its pins and looks nothing up, so an up moves no spoke's add-ons (a look-up here would fail)",
			regions: `["eu-west-1","us-east-1"]`, pins: pins,
			answer: func(region, addon, k8s string) string { return mocks.AddonVersionDenied + "not looked up" },
			want:   pins,
		},
		"pinned, with a wave": {
			reason:  "T4-M3: the stack's waves reach cluster-info as written, beside the pins",
			regions: `["eu-west-1","us-east-1"]`, pins: pins, waves: waves,
			answer: func(region, addon, k8s string) string { return mocks.AddonVersionDenied + "not looked up" },
			want:   pins,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := map[string]string{"eks-fleet:spokeRegions": tc.regions}
			if tc.pins != nil {
				cfg["eks-fleet:spokeAddonVersions"] = clusterinfo.FormatAddonVersions(tc.pins)
			}
			if tc.waves != nil {
				cfg["eks-fleet:spokeAddonWaves"] = clusterinfo.FormatAddonWaves(tc.waves)
			}
			m, err := runMocks(t, mgmtWith(t, cfg), func(m *mocks.Mocks) {
				m.AddonVersion = tc.answer
			})
			got, ok := clusterInfoAfter(t, m, err, clusterinfo.SpokeAddonVersions, tc.wantErr, tc.reason)
			if w := clusterinfo.FormatAddonVersions(tc.want); ok && got != w {
				t.Errorf("cluster-info %s =\n%s\nwant\n%s\n(%s)", clusterinfo.SpokeAddonVersions, got, w, tc.reason)
			}
			if tc.wantErr == nil {
				gotWaves, _ := clusterInfoAfter(t, m, err, clusterinfo.SpokeAddonWaves, nil, tc.reason)
				if w := clusterinfo.FormatAddonWaves(tc.waves); gotWaves != w {
					t.Errorf("cluster-info %s = %s, want %s (%s)", clusterinfo.SpokeAddonWaves, gotWaves, w, tc.reason)
				}
			}
			if looked := slices.Contains(m.Invokes(), "aws:eks/getAddonVersion:getAddonVersion"); tc.pins != nil && looked {
				t.Errorf("a pinned stack looked up add-on versions (%s)", tc.reason)
			}
		})
	}
}
