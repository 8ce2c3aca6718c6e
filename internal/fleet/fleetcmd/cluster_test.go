package fleetcmd

import (
	"crypto/rsa"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ssv1alpha1 "github.com/bitnami-labs/sealed-secrets/pkg/apis/sealedsecrets/v1alpha1"
	"golang.org/x/crypto/ssh"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/deploykey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
)

func readClaim(t *testing.T, f *fixture, name string) *workloadcluster.Claim {
	t.Helper()
	cs, err := fleettree.ParseClaims([]byte(f.read(fleettree.ClaimRel(name))))
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim %s: %v (%d docs)", name, err, len(cs))
	}
	return cs[0]
}

func TestClusterAdd(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantCIDR  string
		check     func(t *testing.T, c *workloadcluster.Claim)
		preAdd    []string // clusters added first
		wantPrint string
	}{
		{name: "defaults pick the first free /16 after the hub", args: []string{"alpha"}, wantCIDR: "10.1.0.0/16",
			check: func(t *testing.T, c *workloadcluster.Claim) {
				if c.Spec.Region != "eu-west-1" || c.Spec.KubernetesVersion != "1.35" || c.Spec.AvailabilityZones != 3 ||
					c.Spec.NATMode != "single" || c.Spec.Nodes.Min != 2 || c.Spec.Nodes.Max != 4 || c.Metadata.Namespace != "workload-clusters" {
					t.Errorf("defaults: %+v", c)
				}
			}},
		{name: "next free block skips used ones", preAdd: []string{"one", "two"}, args: []string{"three"}, wantCIDR: "10.3.0.0/16"},
		{name: "every flag", args: []string{"beta", "--region", "us-east-1", "--version", "1.34", "--cidr", "10.42.0.0/18", "--azs", "2",
			"--nat", "per-az", "--nodes", "1:2:3", "--instance-types", "m7i.large,m7i.xlarge", "--public-access-cidrs", "203.0.113.0/24",
			"--admin-arns", "arn:aws:iam::111122223333:role/admin", "--tags", "team=payments"}, wantCIDR: "10.42.0.0/18",
			check: func(t *testing.T, c *workloadcluster.Claim) {
				s := c.Spec
				if s.Region != "us-east-1" || s.KubernetesVersion != "1.34" || s.AvailabilityZones != 2 || s.NATMode != "per-az" ||
					s.Nodes.Desired != 2 || len(s.Nodes.InstanceTypes) != 2 || s.PublicAccessCIDRs[0] != "203.0.113.0/24" ||
					s.AdminPrincipalARNs[0] != "arn:aws:iam::111122223333:role/admin" || s.Tags["team"] != "payments" {
					t.Errorf("flags not applied: %+v", s)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			d := testDeps()
			for _, n := range tt.preAdd {
				if r := f.run(d, "cluster", "add", n); r.code != 0 {
					t.Fatalf("pre-add %s: %d %s", n, r.code, r.stderr)
				}
			}
			r := f.run(d, append([]string{"cluster", "add"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			name := tt.args[0]
			c := readClaim(t, f, name)
			if c.Spec.VPCCIDR != tt.wantCIDR {
				t.Errorf("vpcCidr = %s, want %s", c.Spec.VPCCIDR, tt.wantCIDR)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
			res, err := kustfile.Resources([]byte(f.read(fleettree.ClaimsDir + "/kustomization.yaml")))
			if err != nil || !contains(res, name+".yaml") {
				t.Errorf("claims kustomization %v (%v) misses %s.yaml", res, err, name)
			}
			if !strings.HasPrefix(f.read(fleettree.ClaimsDir+"/kustomization.yaml"), "# claims\n") {
				t.Errorf("kustomization comment lost")
			}
			if !f.exists(fleettree.WorkloadsRel(name) + "/kustomization.yaml") {
				t.Errorf("no workloads folder")
			}
			checkDeployKey(t, f, name, r.stdout)
			// The result passes validate.
			if v := f.run(d, "validate"); v.code != 0 {
				t.Errorf("validate after add: %d\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

// checkDeployKey unseals the deploy key with the controller's code and the
// private key, and checks it matches the printed public key.
func checkDeployKey(t *testing.T, f *fixture, name, stdout string) {
	t.Helper()
	var ss ssv1alpha1.SealedSecret
	if err := yaml.Unmarshal([]byte(f.read(fleettree.DeployKeyRel(name))), &ss); err != nil {
		t.Fatalf("sealed deploy key: %v", err)
	}
	if ss.Name != deploykey.SecretName || ss.Namespace != deploykey.SecretNamespace {
		t.Errorf("SealedSecret %s/%s, want %s/%s", ss.Namespace, ss.Name, deploykey.SecretNamespace, deploykey.SecretName)
	}
	sec, err := ss.Unseal(scheme.Codecs, map[string]*rsa.PrivateKey{"k": f.key})
	if err != nil {
		t.Fatalf("unseal with the controller's code: %v", err)
	}
	signer, err := ssh.ParsePrivateKey(sec.Data["identity"])
	if err != nil {
		t.Fatalf("identity: %v", err)
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	if signer.PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Errorf("key type %s, want ed25519", signer.PublicKey().Type())
	}
	if !strings.Contains(stdout, pub) || !strings.HasPrefix(string(sec.Data["identity.pub"]), pub) {
		t.Errorf("printed/stored public key does not match the private key %s", pub)
	}
	if !strings.Contains(string(sec.Data["known_hosts"]), "github.com ssh-ed25519 ") {
		t.Errorf("known_hosts = %q", sec.Data["known_hosts"])
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestClusterAddRefusesBadInput(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		setup    func(f *fixture)
		prover   func(tree string) []fleetvalidate.Finding
		wantCode int
		wantErr  []string // all must appear in stderr
	}{
		{"bad name", []string{"Bad_Name"}, nil, nil, 1, []string{"metadata.name", `"Bad_Name"`, "lower-case"}},
		{"name too long", []string{"a-very-long-cluster-name"}, nil, nil, 1, []string{"metadata.name", "at most 20"}},
		{"reserved name", []string{"mgmt"}, nil, nil, 1, []string{"reserved", "mgmt"}},
		{"unknown version", []string{"c1", "--version", "1.29"}, nil, nil, 1, []string{"spec.kubernetesVersion", `"1.29"`, "1.34, 1.35, 1.36"}},
		{"region not allowed", []string{"c1", "--region", "ap-south-1"}, nil, nil, 1, []string{"spec.region", `"ap-south-1"`, "eu-west-1"}},
		{"overlaps the hub", []string{"c1", "--cidr", "10.0.0.0/16"}, nil, nil, 1, []string{"spec.vpcCidr", "overlaps the hub's VPC", "10.0.0.0/16"}},
		{"overlaps a cluster", []string{"c2", "--cidr", "10.1.128.0/17"}, func(f *fixture) { f.mustAdd("c1") }, nil, 1, []string{"overlaps cluster c1", "10.1.0.0/16"}},
		{"cidr host bits", []string{"c1", "--cidr", "10.5.1.0/16"}, nil, nil, 1, []string{"spec.vpcCidr", "host bits"}},
		{"cidr too big", []string{"c1", "--cidr", "10.0.0.0/12"}, nil, nil, 1, []string{"spec.vpcCidr", "/16 to /18"}},
		{"min > max", []string{"c1", "--nodes", "5:3:2"}, nil, nil, 1, []string{"spec.nodes", "min 5", "max 2"}},
		{"max above policy", []string{"c1", "--nodes", "1:1:50"}, nil, nil, 1, []string{"spec.nodes.max", "50", "maxNodes 20"}},
		{"instance type not allowed", []string{"c1", "--instance-types", "p5.48xlarge"}, nil, nil, 1, []string{"spec.nodes.instanceTypes", "p5.48xlarge", "m7i.large"}},
		{"bad nat", []string{"c1", "--nat", "none"}, nil, nil, 1, []string{"spec.natMode", `"none"`, "single, per-az"}},
		{"4 azs", []string{"c1", "--azs", "4"}, nil, nil, 1, []string{"spec.availabilityZones", "2 or 3"}},
		{"tag key the spokes' boundary trusts", []string{"c1", "--tags", "team=payments,elbv2.k8s.aws/cluster=mgmt-a"}, nil, nil, 1,
			[]string{"spec.tags", `"elbv2.k8s.aws/cluster"`, "reserved", "the AWS Load Balancer Controller"}},
		{"bad admin arn", []string{"c1", "--admin-arns", "bob"}, nil, nil, 1, []string{"spec.adminPrincipalArns", `"bob"`}},
		{"admin of an untrusted account", []string{"c1", "--admin-arns", "arn:aws:iam::999988887777:role/admin"}, nil, nil, 1, []string{"spec.adminPrincipalArns", "999988887777", "spec.adminAccounts", "111122223333"}},
		{"name already used", []string{"c1"}, func(f *fixture) { f.mustAdd("c1") }, nil, 1, []string{`"c1"`, "already used"}},
		{"orphan folder in the way", []string{"c1"}, func(f *fixture) { f.write("gitops-workloads/clusters/c1/x.yaml", "") }, nil, 1, []string{"already exists"}},
		{"missing cert", []string{"c1", "--cert", "/nonexistent.pem"}, nil, nil, 1, []string{"--cert"}},
		{"expired cert", []string{"c1"}, func(f *fixture) { testCert(f.t, f.root, time.Now().Add(-time.Hour)) }, nil, 1, []string{"expired"}},
		{"missing known_hosts", []string{"c1", "--known-hosts", "/nonexistent"}, nil, nil, 1, []string{"--known-hosts"}},
		{"proof finding on the new claim", []string{"c1"}, nil, func(tree string) []fleetvalidate.Finding {
			return []fleetvalidate.Finding{{Check: "schema", File: fleettree.ClaimRel("c1"), Message: "spec.vpcCidr: planted"}}
		}, 1, []string{"planted", "nothing written"}},
		{"unparsable nodes is usage", []string{"c1", "--nodes", "two"}, nil, nil, 2, []string{"--nodes", "MIN:DESIRED:MAX"}},
		{"no name is usage", []string{}, nil, nil, 2, []string{"NAME"}},
		{"unknown flag is usage", []string{"c1", "--colour", "red"}, nil, nil, 2, []string{"--colour"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			d := testDeps()
			if tt.prover != nil {
				d.Prover = &fakeProver{findings: tt.prover}
			}
			before := f.snapshot()
			r := f.run(d, append([]string{"cluster", "add"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if after := f.snapshot(); after != before {
				t.Errorf("tree changed:\n%s\n---\n%s", before, after)
			}
		})
	}
}

func (f *fixture) mustAdd(name string, args ...string) {
	f.t.Helper()
	if r := f.run(testDeps(), append([]string{"cluster", "add", name}, args...)...); r.code != 0 {
		f.t.Fatalf("cluster add %s: %d %s", name, r.code, r.stderr)
	}
}

func TestClusterUpgrade(t *testing.T) {
	tests := []struct {
		name     string
		from     string
		args     []string
		narrow   bool
		wantCode int
		wantVer  string
		wantErr  string
	}{
		{"next minor", "1.35", []string{"--version", "1.36"}, false, 0, "1.36", ""},
		{"skip", "1.34", []string{"--version", "1.36"}, false, 1, "1.34", "skips a minor version"},
		{"downgrade", "1.35", []string{"--version", "1.34"}, false, 1, "1.35", "downgrade"},
		{"same", "1.35", []string{"--version", "1.35"}, false, 1, "1.35", "already at"},
		{"unknown", "1.35", []string{"--version", "1.40"}, false, 1, "1.35", "allowed 1.34, 1.35, 1.36"},
		{"narrowed by policy", "1.35", []string{"--version", "1.36"}, true, 1, "1.35", "not allowed by the fleet policy"},
		{"dry run", "1.35", []string{"--version", "1.36", "--dry-run"}, false, 0, "1.35", ""},
		{"no version is usage", "1.35", nil, false, 2, "1.35", "--version is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustAdd("up", "--version", tt.from)
			// a hand-written comment survives the edit
			f.write(fleettree.ClaimRel("up"), "# keep me\n"+f.read(fleettree.ClaimRel("up")))
			if tt.narrow {
				pol := f.read("gitops-system/workload-clusters/fleet-policy.yaml")
				f.write("gitops-system/workload-clusters/fleet-policy.yaml", strings.Replace(pol, "kubernetesVersions: []", `kubernetesVersions: ["1.34", "1.35"]`, 1))
			}
			r := f.run(testDeps(), append([]string{"cluster", "upgrade", "up"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("stderr lacks %q: %s", tt.wantErr, r.stderr)
			}
			if v := readClaim(t, f, "up").Spec.KubernetesVersion; v != tt.wantVer {
				t.Errorf("version %s, want %s", v, tt.wantVer)
			}
			if !strings.HasPrefix(f.read(fleettree.ClaimRel("up")), "# keep me\n") {
				t.Errorf("comment lost")
			}
		})
	}
	t.Run("unknown cluster", func(t *testing.T) {
		f := newFixture(t)
		r := f.run(testDeps(), "cluster", "upgrade", "nope", "--version", "1.36")
		if r.code != 1 || !strings.Contains(r.stderr, `"nope"`) {
			t.Errorf("exit %d: %s", r.code, r.stderr)
		}
	})
}

func TestClusterRemove(t *testing.T) {
	tests := []struct {
		name     string
		deps     func() Deps
		args     []string
		wantCode int
		removed  bool
		wantOut  []string
	}{
		{"with renderer lists composed AWS resources", testDeps, []string{"gone"}, 0, true, []string{"VPC.ec2 gone-vpc\n", "Cluster.eks mgmt-gone\n", "EIP.ec2 gone-kept (kept in AWS"}},
		{"without renderer describes them", func() Deps { d := testDeps(); d.Renderer = nil; return d }, []string{"gone"}, 0, true, []string{"EKS cluster mgmt-gone", "VPC 10.1.0.0/16"}},
		{"dry run", testDeps, []string{"gone", "--dry-run"}, 0, false, []string{"dry run", "VPC.ec2 gone-vpc"}},
		{"unknown cluster", testDeps, []string{"other"}, 1, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustAdd("gone")
			f.mustAdd("stays")
			r := f.run(tt.deps(), append([]string{"cluster", "remove"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			if strings.Contains(r.stdout, "nat-b") {
				t.Errorf("a resource that manages nothing in AWS is listed:\n%s", r.stdout)
			}
			gone := !f.exists(fleettree.ClaimRel("gone")) && !f.exists(fleettree.WorkloadsRel("gone"))
			if gone != tt.removed {
				t.Errorf("removed = %v, want %v", gone, tt.removed)
			}
			res, _ := kustfile.Resources([]byte(f.read(fleettree.ClaimsDir + "/kustomization.yaml")))
			if contains(res, "gone.yaml") == tt.removed || !contains(res, "stays.yaml") {
				t.Errorf("kustomization resources %v", res)
			}
			if v := f.run(testDeps(), "validate"); v.code != 0 {
				t.Errorf("validate after remove: %s", v.stdout)
			}
		})
	}
}

func TestClusterAddKnownHostsSources(t *testing.T) {
	const hostLine = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	tests := []struct {
		name     string
		stack    string // content of Pulumi.mgmt.yaml next to the tree; "" none
		args     []string
		wantCode int
		want     string // in known_hosts (success) or stderr (failure)
	}{
		{"from the hub stack", "config:\n  eks-fleet:gitKnownHosts: |\n    " + hostLine + "\n", nil, 0, hostLine},
		{"secure setting is refused", "config:\n  eks-fleet:gitKnownHosts:\n    secure: AAAA\n", nil, 1, "--known-hosts"},
		{"nowhere", "", nil, 1, "no known_hosts"},
		{"explicit stack", "", []string{"--stack", "STACK"}, 0, hostLine},
		{"garbage", "config:\n  eks-fleet:gitKnownHosts: not a host key\n", nil, 1, "known_hosts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if err := os.Remove(filepath.Join(f.root, filepath.FromSlash(fleettree.DefaultKnownHost))); err != nil {
				t.Fatal(err)
			}
			if tt.stack != "" {
				if err := os.WriteFile(filepath.Join(filepath.Dir(f.root), "Pulumi.mgmt.yaml"), []byte(tt.stack), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"cluster", "add", "kh"}
			for _, a := range tt.args {
				if a == "STACK" {
					p := filepath.Join(t.TempDir(), "Pulumi.other.yaml")
					os.WriteFile(p, []byte("config:\n  eks-fleet:gitKnownHosts: |\n    "+hostLine+"\n"), 0o644)
					a = p
				}
				args = append(args, a)
			}
			r := f.run(testDeps(), args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			if tt.wantCode != 0 {
				if !strings.Contains(r.stderr, tt.want) {
					t.Errorf("stderr lacks %q: %s", tt.want, r.stderr)
				}
				return
			}
			var ss ssv1alpha1.SealedSecret
			yaml.Unmarshal([]byte(f.read(fleettree.DeployKeyRel("kh"))), &ss)
			sec, err := ss.Unseal(scheme.Codecs, map[string]*rsa.PrivateKey{"k": f.key})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(sec.Data["known_hosts"]), tt.want) {
				t.Errorf("known_hosts = %q", sec.Data["known_hosts"])
			}
		})
	}
}

// TestClusterAddSeparatesSharedProblems: a proof finding every spoke has
// (a system-tree problem) warns; one only the new cluster has blocks.
func TestClusterAddSeparatesSharedProblems(t *testing.T) {
	perClaim := func(tree string) []fleetvalidate.Finding {
		cs, _ := (&fleettree.Tree{Root: tree}).Claims()
		var out []fleetvalidate.Finding
		for _, c := range cs {
			n := c.Claim.Metadata.Name
			out = append(out, fleetvalidate.Finding{Check: "build", File: "gitops-system/spoke-bootstrap/flux", Object: "Kustomization flux-system/" + n + "-flux", Message: "shared " + n})
			if n == "newer" {
				out = append(out, fleetvalidate.Finding{Check: "render", File: fleettree.ClaimRel(n), Object: "NodeGroup " + n + "-nodes", Message: "collision"})
			}
		}
		return out
	}
	tests := []struct {
		name     string
		cluster  string
		wantCode int
		stderr   []string
	}{
		{"shared problem only warns", "fine", 0, []string{"warning: 1 problem(s)", "shared fine"}},
		{"own problem blocks", "newer", 1, []string{"collision", "nothing written"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustAdd("first")
			d := testDeps()
			p := &fakeProver{findings: perClaim}
			d.Prover = p
			before := f.snapshot()
			r := f.run(d, "cluster", "add", tt.cluster)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q: %s", w, r.stderr)
				}
			}
			if (f.snapshot() == before) != (tt.wantCode != 0) {
				t.Errorf("tree changed = %v", f.snapshot() != before)
			}
			if p.calls != 2 {
				t.Errorf("proof ran %d times, want 2 (changed tree, then the tree as it is)", p.calls)
			}
		})
	}
}
