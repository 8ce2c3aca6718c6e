package test

// The scenarios of docs/scenarios.md, each as the Git change it makes: the
// change is applied to a copy of manifests/ with fleet (in-process, the same
// code as `go run ./scripts/fleet`) or with the file edit the page
// describes, and the offline proof must pass on the result. The app path
// (AppInfrastructure claims rendered on the spokes that run them) is proven
// by internal/proof/appproof on the same tree.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/appinfra"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/proof/apivalidate"
	"github.com/gitops-fleet/eks-fleet/internal/proof/appproof"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// exampleSpoke is the spoke the committed tree carries.
const exampleSpoke = "apps-staging"

// githubKnownHosts is GitHub's published ed25519 host key.
const githubKnownHosts = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"

// repoRoot is the directory holding go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the test")
		}
	}
}

// sandbox is a copy of manifests/ plus the files a user has at hand.
type sandbox struct {
	t          *testing.T
	tree       string // .../manifests
	cert       string // the environment's sealing certificate
	knownHosts string
}

func newSandbox(t *testing.T, cert string) *sandbox {
	t.Helper()
	dir := t.TempDir()
	tree := filepath.Join(dir, "manifests")
	if err := treeedit.CopyTree(filepath.Join(repoRoot(t), "manifests"), tree); err != nil {
		t.Fatalf("copy manifests: %v", err)
	}
	pol := filepath.Join(tree, filepath.FromSlash(policy.RelPath))
	b, err := os.ReadFile(pol)
	if err == nil {
		b, err = plant.RaiseQuotas(b)
	}
	if err == nil {
		err = os.WriteFile(pol, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte(githubKnownHosts), 0o644); err != nil {
		t.Fatal(err)
	}
	return &sandbox{t: t, tree: tree, cert: cert, knownHosts: kh}
}

func (s *sandbox) path(rel string) string { return filepath.Join(s.tree, filepath.FromSlash(rel)) }

// fleet runs the CLI in-process on the sandbox and requires success.
func (s *sandbox) fleet(args ...string) string {
	s.t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--tree", s.tree}, args...)
	if code := fleetcmd.Run(context.Background(), full, &out, &errOut); code != fleetcmd.ExitOK {
		s.t.Fatalf("fleet %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	return out.String()
}

// addCluster is `fleet cluster add` as docs/scenarios.md runs it.
func (s *sandbox) addCluster(name string, extra ...string) {
	s.t.Helper()
	args := append([]string{"cluster", "add", name, "--region", "eu-west-1", "--version", versions.DefaultKubernetes,
		"--azs", "3", "--nat", "single", "--nodes", "2:3:6", "--instance-types", "m6i.large",
		"--known-hosts", s.knownHosts}, extra...)
	if s.cert != "" && !slices.Contains(extra, "--cert") {
		args = append(args, "--cert", s.cert)
	}
	s.fleet(args...)
}

func (s *sandbox) read(rel string) string {
	s.t.Helper()
	b, err := os.ReadFile(s.path(rel))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

func (s *sandbox) write(rel, data string) {
	s.t.Helper()
	if err := os.WriteFile(s.path(rel), []byte(data), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// replace edits a file; old must occur in it.
func (s *sandbox) replace(rel, old, new string) {
	s.t.Helper()
	data := s.read(rel)
	if !strings.Contains(data, old) {
		s.t.Fatalf("%s does not contain %q", rel, old)
	}
	s.write(rel, strings.Replace(data, old, new, 1))
}

func (s *sandbox) exists(rel string) bool {
	_, err := os.Stat(s.path(rel))
	return err == nil
}

// claim reads a spoke's WorkloadCluster claim.
func (s *sandbox) claim(name string) *workloadcluster.Claim {
	s.t.Helper()
	claims, err := fleettree.ParseClaims([]byte(s.read(fleettree.ClaimRel(name))))
	if err != nil || len(claims) != 1 {
		s.t.Fatalf("claim %s: %v (%d claims)", name, err, len(claims))
	}
	return claims[0]
}

// prove runs the offline proof and requires it to pass.
func (s *sandbox) prove() *proof.Report {
	s.t.Helper()
	rep, err := proof.Run(context.Background(), proof.Options{Tree: s.tree, SkipSealing: true, KeepRendered: true})
	if err != nil {
		s.t.Fatalf("proof: %v", err)
	}
	for _, f := range rep.Findings {
		s.t.Errorf("proof: %s", f)
	}
	if s.t.Failed() {
		s.t.FailNow()
	}
	return rep
}

var (
	validatorOnce *apivalidate.Validator
)

// proveApps runs the app path's proof and requires it to pass; it returns
// the claims it rendered ("cluster: namespace/name").
func (s *sandbox) proveApps() []string {
	s.t.Helper()
	ctx := context.Background()
	if validatorOnce == nil {
		v, err := apivalidate.New(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		validatorOnce = v
	}
	v := validatorOnce
	w, err := appproof.Walk(ctx, s.tree, clusterinfo.Example())
	if w == nil {
		s.t.Fatalf("walk: %v", err)
	}
	if err != nil {
		s.t.Fatalf("walk: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, b := range w.Results {
		objs = append(objs, b.Object)
	}
	if err := v.AddDefinitions(objs, "tree"); err != nil {
		s.t.Fatal(err)
	}
	rep := appproof.CheckBuilt(ctx, w.Results, appproof.ClusterVars(w.Results), clusterinfo.Example(),
		func(ctx context.Context, u *unstructured.Unstructured) error { return v.Validate(ctx, u).ToAggregate() })
	for _, err := range rep.Errors {
		s.t.Errorf("app proof: %v", err)
	}
	if s.t.Failed() {
		s.t.FailNow()
	}
	return rep.Claims
}

// claimsOn filters "cluster: ns/name" ids by a cluster name fragment.
func claimsOn(ids []string, spoke string) []string {
	var out []string
	for _, id := range ids {
		cluster, _, _ := strings.Cut(id, ": ")
		if strings.Contains(cluster, spoke) {
			out = append(out, id)
		}
	}
	return out
}

// renderedOf returns the objects the proof rendered for a spoke's claim.
func renderedOf(t *testing.T, rep *proof.Report, spoke string) []*unstructured.Unstructured {
	t.Helper()
	objs, ok := rep.Rendered[workloadcluster.ClaimNamespace+"/"+spoke]
	if !ok {
		var keys []string
		for k := range rep.Rendered {
			keys = append(keys, k)
		}
		t.Fatalf("the proof rendered no claim %s (rendered: %v)", spoke, keys)
	}
	return objs
}

func TestScenarios(t *testing.T) {
	pair, err := proof.NewSealingKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	certFile := filepath.Join(t.TempDir(), "sealing-cert.pem")
	if err := os.WriteFile(certFile, []byte(pair.CertPEM), 0o644); err != nil {
		t.Fatal(err)
	}

	scenarios := []struct {
		name string
		run  func(t *testing.T, s *sandbox)
	}{
		{"initial-setup", func(t *testing.T, s *sandbox) {
			// No Git change: the committed tree is what the hub syncs first.
			rep := s.prove()
			if rep.Claims == 0 {
				t.Fatal("the committed tree has no cluster claim to render")
			}
			renderedOf(t, rep, exampleSpoke)
			if got := claimsOn(s.proveApps(), exampleSpoke); len(got) == 0 {
				t.Fatalf("no AppInfrastructure claim reaches %s", exampleSpoke)
			}
		}},
		{"add-a-cluster", func(t *testing.T, s *sandbox) {
			s.addCluster("team-b-dev")
			for _, rel := range []string{fleettree.ClaimRel("team-b-dev"), fleettree.WorkloadsRel("team-b-dev") + "/kustomization.yaml",
				fleettree.DeployKeyRel("team-b-dev")} {
				if !s.exists(rel) {
					t.Errorf("fleet cluster add did not write %s", rel)
				}
			}
			renderedOf(t, s.prove(), "team-b-dev")
		}},
		{"connect-to-a-cluster", func(t *testing.T, s *sandbox) {
			const oncall = "arn:aws:iam::111122223333:role/payments-oncall"
			rel := fleettree.ClaimRel(exampleSpoke)
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(s.read(rel)), &doc); err != nil {
				t.Fatal(err)
			}
			spec := doc["spec"].(map[string]any)
			admins, _ := spec["adminPrincipalArns"].([]any)
			spec["adminPrincipalArns"] = append(admins, oncall)
			b, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			s.write(rel, string(b))
			// The principal may assume the spoke's admin role, which has a
			// cluster-admin access entry.
			objs := renderedOf(t, s.prove(), exampleSpoke)
			entries := map[string]bool{}
			for _, o := range objs {
				if o.GetKind() == "AccessEntry" {
					p, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "principalArn")
					entries[p] = true
				}
			}
			found := false
			for _, o := range objs {
				trust, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "assumeRolePolicy")
				if o.GetKind() != "Role" || !strings.Contains(trust, `"`+oncall+`"`) {
					continue
				}
				name := o.GetAnnotations()[appinfra.ExternalNameKey]
				if name == "" {
					name = o.GetName()
				}
				if arn := "arn:aws:iam::" + clusterinfo.Example().AccountID + ":role/" + name; entries[arn] {
					found = true
				} else {
					t.Errorf("role %s trusts %s but has no access entry (entries: %v)", arn, oncall, entries)
				}
			}
			if !found {
				t.Errorf("no role with an access entry on %s trusts %s", exampleSpoke, oncall)
			}
		}},
		{"add-an-app", func(t *testing.T, s *sandbox) {
			for _, c := range []string{"team-b-dev", "team-c-dev"} {
				s.addCluster(c)
				s.fleet("app", "add", "payment-app", "--cluster", c, "--repo", "self",
					"--path", "./manifests/apps/payment-app/overlays/staging", "--team", "payments")
				k := s.read(fleettree.WorkloadsRel(c) + "/kustomization.yaml")
				for _, want := range []string{"payment-app.yaml", "../../teams/payments"} {
					if !strings.Contains(k, want) {
						t.Errorf("%s kustomization does not list %s", c, want)
					}
				}
			}
			s.prove()
			claims := s.proveApps()
			for _, c := range []string{"team-b-dev", "team-c-dev"} {
				if len(claimsOn(claims, c)) != 1 {
					t.Errorf("payment-app's claim on %s: rendered %v", c, claims)
				}
			}
		}},
		{"upgrade-an-app", func(t *testing.T, s *sandbox) {
			s.replace("apps/payment-app/base/deployment.yaml", "podinfo:6.7.1", "podinfo:6.7.2")
			s.replace("apps/payment-app/overlays/staging/appinfrastructure.yaml", "messageRetentionSeconds: 86400", "messageRetentionSeconds: 172800")
			s.prove()
			if len(claimsOn(s.proveApps(), exampleSpoke)) == 0 {
				t.Fatalf("no AppInfrastructure claim reaches %s", exampleSpoke)
			}
		}},
		{"upgrade-a-cluster", func(t *testing.T, s *sandbox) {
			from := s.claim(exampleSpoke).Spec.KubernetesVersion
			to, ok := versions.NextKubernetes(from)
			if !ok {
				t.Fatalf("%s runs %s, the newest allowed version: nothing to upgrade to", exampleSpoke, from)
			}
			s.fleet("cluster", "upgrade", exampleSpoke, "--version", to)
			if got := s.claim(exampleSpoke).Spec.KubernetesVersion; got != to {
				t.Fatalf("claim kubernetesVersion %s after upgrade, want %s", got, to)
			}
			found := false
			for _, o := range renderedOf(t, s.prove(), exampleSpoke) {
				v, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "version")
				if o.GetKind() == "Cluster" && v == to {
					found = true
				}
			}
			if !found {
				t.Errorf("the rendered EKS Cluster of %s does not run %s", exampleSpoke, to)
			}
		}},
		{"upgrade-a-tool", func(t *testing.T, s *sandbox) {
			rel, old, new := bumpSpokeToolChart(t, s, "aws-load-balancer-controller")
			s.replace(rel, old, new)
			s.prove()
		}},
		{"rotate-the-sealing-key", func(t *testing.T, s *sandbox) {
			next, err := proof.NewSealingKeyPair()
			if err != nil {
				t.Fatal(err)
			}
			// The new certificate replaces the tree's; fleet seals with it by default.
			if err := os.MkdirAll(filepath.Dir(s.path(fleettree.DefaultCertFile)), 0o755); err != nil {
				t.Fatal(err)
			}
			s.write(fleettree.DefaultCertFile, next.CertPEM)
			s.cert = ""
			s.addCluster("team-d-dev")
			if !s.exists(fleettree.DeployKeyRel("team-d-dev")) {
				t.Fatalf("no sealed deploy key for team-d-dev")
			}
			s.prove()
		}},
		{"remove-an-app", func(t *testing.T, s *sandbox) {
			dir := fleettree.WorkloadsRel(exampleSpoke)
			if err := os.Remove(s.path(dir + "/payment-app.yaml")); err != nil {
				t.Fatal(err)
			}
			k, removed, err := kustfile.Remove([]byte(s.read(dir+"/kustomization.yaml")), "payment-app.yaml")
			if err != nil || !removed {
				t.Fatalf("remove payment-app.yaml from %s/kustomization.yaml: removed %v, %v", dir, removed, err)
			}
			s.write(dir+"/kustomization.yaml", string(k))
			s.prove()
			if got := claimsOn(s.proveApps(), exampleSpoke); len(got) != 0 {
				t.Fatalf("claims still on %s after removing the app: %v", exampleSpoke, got)
			}
		}},
		{"remove-a-cluster", func(t *testing.T, s *sandbox) {
			s.fleet("cluster", "remove", exampleSpoke)
			for _, rel := range []string{fleettree.ClaimRel(exampleSpoke), fleettree.WorkloadsRel(exampleSpoke)} {
				if s.exists(rel) {
					t.Errorf("fleet cluster remove left %s", rel)
				}
			}
			rep := s.prove()
			if _, ok := rep.Rendered[workloadcluster.ClaimNamespace+"/"+exampleSpoke]; ok {
				t.Errorf("the proof still renders %s", exampleSpoke)
			}
		}},
		{"clean-up", func(t *testing.T, s *sandbox) {
			// While pulumi destroy waits, Flux deletes every claim: the hub's
			// own chain must still build and validate without any spoke.
			claims, err := (&fleettree.Tree{Root: s.tree}).Claims()
			if err != nil {
				t.Fatal(err)
			}
			if len(claims) == 0 {
				t.Fatal("no clusters to remove")
			}
			for _, c := range claims {
				s.fleet("cluster", "remove", c.Claim.Metadata.Name)
			}
			if rep := s.prove(); rep.Claims != 0 {
				t.Errorf("%d claims rendered after every cluster was removed", rep.Claims)
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			sc.run(t, newSandbox(t, certFile))
		})
	}
}

var chartVersionRE = regexp.MustCompile(`(?m)^(\s+version:\s*["']?)(\d+)\.(\d+)\.(\d+)(["']?)\s*$`)

// bumpSpokeToolChart finds the spoke-tools file that installs chart and
// returns it with its version's patch level raised by one.
func bumpSpokeToolChart(t *testing.T, s *sandbox, chart string) (rel, old, new string) {
	t.Helper()
	root := s.path("gitops-system/spoke-tools")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || rel != "" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "chart: "+chart) {
			return nil
		}
		m := chartVersionRE.FindStringSubmatch(string(b))
		if m == nil {
			return nil
		}
		patch, _ := strconv.Atoi(m[4])
		r, _ := filepath.Rel(s.tree, p)
		rel, old = filepath.ToSlash(r), m[0]
		new = fmt.Sprintf("%s%s.%s.%d%s", m[1], m[2], m[3], patch+1, m[5])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rel == "" {
		t.Fatalf("no file in gitops-system/spoke-tools installs chart %s with a version", chart)
	}
	return rel, old, new
}

// TestRolePolicyBeyondOwnResourcesFails plants, in a copy of the tree, a
// role policy that also reaches every table of the account: the app path's
// proof must reject it, naming the resource.
func TestRolePolicyBeyondOwnResourcesFails(t *testing.T) {
	tests := []struct {
		name, old, new, wantErr string
	}{
		{"every table", `"Resource":["%s"]},{"Sid":"Queue"`, `"Resource":["%s","arn:aws:dynamodb:*:*:table/*"]},{"Sid":"Queue"`,
			`Resource "arn:aws:dynamodb:*:*:table/*" is not one of the app's own resources`},
		{"any queue action", `"sqs:ChangeMessageVisibility","sqs:DeleteMessage","sqs:GetQueueAttributes","sqs:GetQueueUrl","sqs:ReceiveMessage","sqs:SendMessage"`,
			`"sqs:*"`, `Action "sqs:*"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSandbox(t, "")
			s.replace(appinfra.Dir+"/composition.yaml", tt.old, tt.new)
			w, err := appproof.Walk(context.Background(), s.tree, clusterinfo.Example())
			if w == nil {
				t.Fatalf("walk: %v", err)
			}
			rep := appproof.CheckBuilt(context.Background(), w.Results, appproof.ClusterVars(w.Results), clusterinfo.Example(), nil)
			if len(rep.Claims) == 0 {
				t.Fatalf("no AppInfrastructure claim rendered (walk: %v)", err)
			}
			var msgs []string
			for _, e := range rep.Errors {
				msgs = append(msgs, e.Error())
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tt.wantErr) {
				t.Fatalf("want an error containing %q, got %q", tt.wantErr, msgs)
			}
			// The whole offline proof (what fleet validate runs) reports it too.
			found := false
			for _, f := range runProof(t, s.tree).Findings {
				found = found || (f.Check == proof.CheckApps && strings.Contains(f.Message, tt.wantErr))
			}
			if !found {
				t.Errorf("proof.Run reported no %q finding containing %q", proof.CheckApps, tt.wantErr)
			}
		})
	}
}
