package fleetcmd

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ssv1alpha1 "github.com/bitnami-labs/sealed-secrets/pkg/apis/sealedsecrets/v1alpha1"
	"github.com/bitnami-labs/sealed-secrets/pkg/kubeseal"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fluxcontrollers"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetstatus"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/sealing"
)

func TestAppAdd(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		team     bool // create gitops-workloads/teams/payments
		wantCode int
		want     []string // in the app file (success) or stderr (failure)
		wantGR   bool
	}{
		{"fleet repo", []string{"payment-app", "--cluster", "c1", "--repo", "self", "--path", "./manifests/apps/payment-app/overlays/staging", "--team", "payments"}, true, 0,
			[]string{"targetNamespace: payments", "serviceAccountName: team-payments", "name: spoke-tools", "name: flux-system", "path: ./manifests/apps/payment-app/overlays/staging", "name: spoke-info"}, false},
		{"other repo with tag", []string{"web", "--cluster", "c1", "--repo", "https://github.com/example-org/web", "--path", "deploy/prod", "--ref", "tag:v1.4.2"}, false, 0,
			[]string{"apiVersion: source.toolkit.fluxcd.io/v1", "tag: v1.4.2", "url: https://github.com/example-org/web", "serviceAccountName: team-web", "targetNamespace: web", "path: ./deploy/prod"}, true},
		{"bare ref is a branch", []string{"web", "--cluster", "c1", "--repo", "https://github.com/example-org/web", "--path", "deploy", "--ref", "develop"}, false, 0,
			[]string{"branch: develop"}, true},
		{"unknown cluster", []string{"web", "--cluster", "nope", "--repo", "self", "--path", "x"}, false, 1, []string{`"nope"`}, false},
		{"bad ref", []string{"web", "--cluster", "c1", "--repo", "https://github.com/x/y", "--path", "x", "--ref", "rev:1"}, false, 1, []string{"--ref", "branch:NAME"}, false},
		{"bad repo", []string{"web", "--cluster", "c1", "--repo", "ftp://x/y", "--path", "x"}, false, 1, []string{"--repo", "ftp://x/y"}, false},
		{"path escapes", []string{"web", "--cluster", "c1", "--repo", "self", "--path", "../etc"}, false, 1, []string{"--path"}, false},
		{"bad app name", []string{"Web", "--cluster", "c1", "--repo", "self", "--path", "x"}, false, 1, []string{"APP", `"Web"`}, false},
		{"namespace flux-system", []string{"web", "--cluster", "c1", "--repo", "self", "--path", "x", "--namespace", "flux-system"}, false, 1, []string{"--namespace"}, false},
		{"missing --path is usage", []string{"web", "--cluster", "c1", "--repo", "self"}, false, 2, []string{"--path is required"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustAdd("c1")
			if tt.team {
				f.write("gitops-workloads/teams/payments/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n")
			}
			before := f.snapshot()
			r := f.run(testDeps(), append([]string{"app", "add"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			if tt.wantCode != 0 {
				for _, w := range tt.want {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("stderr lacks %q: %s", w, r.stderr)
					}
				}
				if f.snapshot() != before {
					t.Errorf("tree changed on failure")
				}
				return
			}
			app := tt.args[0]
			body := f.read(fleettree.WorkloadsRel("c1") + "/" + app + ".yaml")
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("app file lacks %q:\n%s", w, body)
				}
			}
			if strings.Contains(body, "cluster-admin") {
				t.Errorf("app uses cluster-admin")
			}
			if got := strings.Contains(body, "apiVersion: source.toolkit.fluxcd.io/v1"); got != tt.wantGR {
				t.Errorf("GitRepository written = %v, want %v", got, tt.wantGR)
			}
			res, _ := kustfile.Resources([]byte(f.read(fleettree.WorkloadsRel("c1") + "/kustomization.yaml")))
			if !contains(res, app+".yaml") || contains(res, "../../teams/payments") != tt.team {
				t.Errorf("cluster kustomization resources %v", res)
			}
			if again := f.run(testDeps(), append([]string{"app", "add"}, tt.args...)...); again.code != 1 || !strings.Contains(again.stderr, "already on cluster") {
				t.Errorf("second add: %d %s", again.code, again.stderr)
			}
		})
	}
}

const testSecret = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: payments
type: Opaque
stringData:
  password: s3cr3t
data:
  user: YWRtaW4=
`

// maskEncrypted blanks the random ciphertexts so two sealings compare.
var encRE = regexp.MustCompile(`"(password|user)": "[^"]+"`)

func TestSeal(t *testing.T) {
	f := newFixture(t)
	// What kubeseal --cert itself writes, through the library's Seal.
	key, err := sealing.LoadCert(f.cert)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := kubeseal.Seal(offlineKubesealConfig{}, "json", strings.NewReader(testSecret), &want, scheme.Codecs, key, ssv1alpha1.StrictScope, false, "", ""); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		check    func(t *testing.T, out string)
	}{
		{"json like kubeseal --cert", []string{"--cert", f.cert}, testSecret, 0, func(t *testing.T, out string) {
			if encRE.ReplaceAllString(out, "X") != encRE.ReplaceAllString(want.String(), "X") {
				t.Errorf("differs from kubeseal:\n%s\n---\n%s", out, want.String())
			}
			var ss ssv1alpha1.SealedSecret
			if err := json.Unmarshal([]byte(out), &ss); err != nil {
				t.Fatal(err)
			}
			unsealAndCheck(t, &ss, f.key)
		}},
		{"yaml, default cert from the tree", []string{"--format", "yaml"}, testSecret, 0, func(t *testing.T, out string) {
			var ss ssv1alpha1.SealedSecret
			if err := yaml.Unmarshal([]byte(out), &ss); err != nil {
				t.Fatal(err)
			}
			unsealAndCheck(t, &ss, f.key)
		}},
		{"empty stdin", []string{"--cert", f.cert}, "", 1, nil},
		{"no data", []string{"--cert", f.cert}, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n", 1, nil},
		{"bad format is usage", []string{"--format", "toml"}, testSecret, 2, nil},
		{"bad scope is usage", []string{"--scope", "galaxy"}, testSecret, 2, nil},
		{"missing cert", []string{"--cert", filepath.Join(t.TempDir(), "none.pem")}, testSecret, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runFleet(t, testDeps(), tt.stdin, append([]string{"--tree", f.root, "seal"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			if tt.check != nil {
				tt.check(t, r.stdout)
			}
		})
	}
}

type offlineKubesealConfig struct{}

func (offlineKubesealConfig) ClientConfig() (*rest.Config, error) { return nil, errors.New("offline") }
func (offlineKubesealConfig) Namespace() (string, bool, error)    { return "default", false, nil }

func unsealAndCheck(t *testing.T, ss *ssv1alpha1.SealedSecret, k *rsa.PrivateKey) {
	t.Helper()
	sec, err := ss.Unseal(scheme.Codecs, map[string]*rsa.PrivateKey{"k": k})
	if err != nil {
		t.Fatalf("controller cannot unseal: %v", err)
	}
	if string(sec.Data["password"]) != "s3cr3t" || string(sec.Data["user"]) != "admin" || sec.Namespace != "payments" {
		t.Errorf("unsealed %s/%s %v", sec.Namespace, sec.Name, sec.Data)
	}
}

func TestValidate(t *testing.T) {
	claimsDir := fleettree.ClaimsDir
	tests := []struct {
		name     string
		mutate   func(f *fixture)
		prover   func(tree string) []fleetvalidate.Finding
		args     []string
		changed  string
		wantCode int
		want     []string
		eligible *bool
	}{
		{name: "clean tree", wantCode: 0, want: []string{"PASS: 2 claim(s)"}},
		{name: "region edited by hand", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "region: eu-west-1", "region: sa-east-1") },
			wantCode: 1, want: []string{"policy/region", "spec.region", "sa-east-1"}},
		{name: "version edited by hand", mutate: func(f *fixture) {
			f.replace(fleettree.ClaimRel("a"), `kubernetesVersion: "1.35"`, `kubernetesVersion: "1.31"`)
		},
			wantCode: 1, want: []string{"api/version", "1.31"}},
		{name: "overlap edited by hand", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("b"), "10.2.0.0/16", "10.1.0.0/16") },
			wantCode: 1, want: []string{"fleet/cidr-overlap", "overlaps cluster a"}},
		{name: "hub overlap", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("b"), "10.2.0.0/16", "10.0.0.0/16") },
			wantCode: 1, want: []string{"overlaps the hub's VPC"}},
		{name: "duplicate name", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("b"), "name: b", "name: a") },
			wantCode: 1, want: []string{"fleet/duplicate-name", `"a" is already used`}},
		{name: "max nodes", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "max: 4", "max: 99") },
			wantCode: 1, want: []string{"policy/max-nodes", "99"}},
		{name: "min above max", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "min: 2", "min: 7") },
			wantCode: 1, want: []string{"api/nodes", "min 7"}},
		{name: "unknown field", mutate: func(f *fixture) {
			f.replace(fleettree.ClaimRel("a"), "natMode: single", "natMode: single\n  colour: red")
		},
			wantCode: 1, want: []string{"colour"}},
		{name: "claim not listed", mutate: func(f *fixture) { f.replace(claimsDir+"/kustomization.yaml", "- b.yaml", "") },
			wantCode: 1, want: []string{"policy/listing", "b.yaml is not listed"}},
		{name: "orphan workloads folder", mutate: func(f *fixture) { f.write("gitops-workloads/clusters/zombie/kustomization.yaml", "") },
			wantCode: 1, want: []string{"zombie", "has no claim"}},
		{name: "proof finding", prover: func(string) []fleetvalidate.Finding {
			return []fleetvalidate.Finding{{Check: "schema", File: "gitops-system/x.yaml", Object: "Deployment/x", Message: "planted"}}
		}, wantCode: 1, want: []string{"[schema]", "planted"}},
		{name: "json", args: []string{"--format", "json"}, wantCode: 0, want: []string{`"claims": 2`, `"proofRan": true`}},
		{name: "github annotations", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "max: 4", "max: 99") }, args: []string{"--format", "github"},
			wantCode: 1, want: []string{"::error file=manifests/gitops-system/workload-clusters/a.yaml,title=fleet policy/max-nodes::", "::notice"}},
		{name: "new claim is eligible", changed: addB,
			wantCode: 0, want: []string{"auto-approval: ELIGIBLE (clusters: b)"}, eligible: ptr(true)},
		{name: "new claim carrying an app is not eligible", mutate: func(f *fixture) {
			f.write("gitops-workloads/clusters/b/app.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: mine\n")
			f.replace("gitops-workloads/clusters/b/kustomization.yaml", "resources: []", "resources: [app.yaml]")
		}, changed: addB + "manifests/gitops-workloads/clusters/b/app.yaml\n",
			wantCode: 0, want: []string{"gitops-workloads/clusters/b/kustomization.yaml: differs from the scaffolding `fleet cluster add b` writes", "gitops-workloads/clusters/b/app.yaml: not a file `fleet cluster add b` writes"}, eligible: ptr(false)},
		{name: "deploy key with an extra object is not eligible", mutate: func(f *fixture) {
			f.write(fleettree.DeployKeyRel("b"), f.read(fleettree.DeployKeyRel("b"))+"---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: mine\n")
		}, changed: addB,
			wantCode: 0, want: []string{"deploy-key.yaml: holds 2 objects"}, eligible: ptr(false)},
		{name: "cluster-wide deploy key is not eligible", mutate: func(f *fixture) {
			f.replace(fleettree.DeployKeyRel("b"), "metadata:\n  name: flux-system\n", "metadata:\n  annotations:\n    sealedsecrets.bitnami.com/cluster-wide: \"true\"\n  name: flux-system\n")
		}, changed: addB,
			wantCode: 0, want: []string{"deploy-key.yaml: not the SealedSecret flux-system/flux-system"}, eligible: ptr(false)},
		{name: "edited claim carrying workloads is not eligible", mutate: func(f *fixture) {
			f.replace(fleettree.ClaimRel("a"), "max: 4", "max: 5")
			f.write("gitops-workloads/clusters/a/kustomization.yaml", f.read("gitops-workloads/clusters/a/kustomization.yaml"))
		}, changed: "manifests/gitops-system/workload-clusters/a.yaml\nmanifests/gitops-workloads/clusters/a/kustomization.yaml\n",
			wantCode: 0, want: []string{"changes the workloads of existing cluster a"}, eligible: ptr(false)},
		{name: "listing gaining more than the added claim is not eligible", mutate: func(f *fixture) {
			f.write(claimsDir+"/extra.txt", "")
			f.replace(claimsDir+"/kustomization.yaml", "- b.yaml", "- b.yaml\n  - extra.txt")
		}, changed: addB,
			wantCode: 0, want: []string{"lists extra.txt, which is not the claim file of a cluster this request adds"}, eligible: ptr(false)},
		{name: "edited claim is eligible", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "max: 4", "max: 5") },
			changed: "manifests/gitops-system/workload-clusters/a.yaml\n", wantCode: 0, want: []string{"auto-approval: ELIGIBLE (clusters: a)"}, eligible: ptr(true)},
		{name: "edit by someone outside the owning team is not eligible", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "max: 4", "max: 5") },
			args: []string{"--author", "apps-lead"}, changed: "manifests/gitops-system/workload-clusters/a.yaml\n", wantCode: 0,
			want: []string{"a: owned by team payments; apps-lead is not a member (spec.teams.payments.members of the base's fleet policy)"}, eligible: ptr(false)},
		{name: "edit without the author is not eligible", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "max: 4", "max: 5") },
			args: []string{"--author", ""}, changed: "manifests/gitops-system/workload-clusters/a.yaml\n", wantCode: 0,
			want: []string{"author is unknown (pass --author)"}, eligible: ptr(false)},
		{name: "moving a cluster to another team is not eligible", mutate: func(f *fixture) {
			f.replace(fleettree.ClaimRel("a"), "eksfleet.io/team: payments", "eksfleet.io/team: apps")
		}, args: []string{"--author", "apps-lead"}, changed: "manifests/gitops-system/workload-clusters/a.yaml\n", wantCode: 0,
			want: []string{`a: changes the owning team (label eksfleet.io/team) from "payments" to "apps"`}, eligible: ptr(false)},
		{name: "a team the policy does not list fails", mutate: func(f *fixture) {
			f.replace(fleettree.ClaimRel("b"), "eksfleet.io/team: payments", "eksfleet.io/team: nobody")
		}, changed: addB, wantCode: 1, want: []string{"policy/team", `"nobody" is not a team of the fleet policy: teams apps, payments`}, eligible: ptr(false)},
		{name: "new claim naming no team is not eligible", mutate: func(f *fixture) {
			f.replace(fleettree.ClaimRel("b"), "  labels:\n    eksfleet.io/team: payments\n", "")
		}, changed: addB, wantCode: 0, want: []string{"b: the claim names no owning team (label eksfleet.io/team"}, eligible: ptr(false)},
		{name: "an owner's upgrade is eligible and says it cannot be undone", mutate: func(f *fixture) {
			f.replace(fleettree.ClaimRel("a"), `kubernetesVersion: "1.35"`, `kubernetesVersion: "1.36"`)
		}, changed: "manifests/gitops-system/workload-clusters/a.yaml\n", wantCode: 0,
			want: []string{"auto-approval: ELIGIBLE (clusters: a)", "  ! a: kubernetesVersion 1.35 -> 1.36 cannot be undone"}, eligible: ptr(true)},
		{name: "an owner's tag edit says every node is replaced", mutate: func(f *fixture) {
			f.replace(fleettree.ClaimRel("a"), "natMode: single", "natMode: single\n  tags:\n    cost-center: \"42\"")
		}, changed: "manifests/gitops-system/workload-clusters/a.yaml\n", wantCode: 0,
			want: []string{"auto-approval: ELIGIBLE (clusters: a)", "  ! a: tags reach the nodes' launch template: EKS replaces every node"}, eligible: ptr(true)},
		{name: "policy change is not eligible", changed: "manifests/gitops-system/workload-clusters/fleet-policy.yaml\n",
			wantCode: 0, want: []string{"changes the fleet policy"}, eligible: ptr(false)},
		{name: "removal is not eligible", changed: "manifests/gitops-system/workload-clusters/gone.yaml\n",
			wantCode: 0, want: []string{"removes a cluster claim"}, eligible: ptr(false)},
		{name: "other paths are not eligible", changed: "manifests/gitops-system/workload-clusters/b.yaml\nmanifests/gitops-system/infrastructure/crossplane/release.yaml\n",
			wantCode: 0, want: []string{"outside the auto-approval paths"}, eligible: ptr(false)},
		{name: "app change on an existing cluster is not eligible", changed: "manifests/gitops-workloads/clusters/a/web.yaml\n",
			wantCode: 0, want: []string{"governance review"}, eligible: ptr(false)},
		{name: "big cluster is not eligible", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("b"), "max: 4", "max: 15") },
			changed: "manifests/gitops-system/workload-clusters/b.yaml\n", wantCode: 0, want: []string{"above the auto-approval limit 10"}, eligible: ptr(false)},
		{name: "failing checks are not eligible", mutate: func(f *fixture) { f.replace(fleettree.ClaimRel("b"), "max: 4", "max: 99") },
			changed: "manifests/gitops-system/workload-clusters/b.yaml\n", wantCode: 1, want: []string{"check(s) failed"}, eligible: ptr(false)},
		{name: "bad format is usage", args: []string{"--format", "xml"}, wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			// Both clusters are team payments'; payments-lead opens the
			// pull requests unless a case names another author.
			f.mustAdd("a", "--team", "payments")
			if tt.changed != "" {
				// The pull request's base: cluster a exists, b is added.
				f.commit()
			}
			f.mustAdd("b", "--team", "payments")
			if tt.mutate != nil {
				tt.mutate(f)
			}
			d := testDeps()
			d.Prover = &fakeProver{findings: tt.prover}
			args := []string{"validate", f.root}
			if tt.changed != "" && !slices.Contains(tt.args, "--author") {
				args = append(args, "--author", "payments-lead")
			}
			args = append(args, tt.args...)
			if tt.changed != "" {
				p := filepath.Join(t.TempDir(), "changed.txt")
				if err := os.WriteFile(p, []byte(tt.changed), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--changed", p, "--changed-prefix", "manifests/", "--base-ref", "HEAD")
			}
			if tt.name == "github annotations" {
				args = append(args, "--changed-prefix", "manifests/")
			}
			r := runFleet(t, d, "", args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
			if tt.eligible != nil {
				j := runFleet(t, d, "", append(args, "--format", "json")...)
				var res fleetvalidate.Result
				if err := json.Unmarshal([]byte(j.stdout), &res); err != nil {
					t.Fatalf("json: %v\n%s", err, j.stdout)
				}
				if res.AutoApprove.Eligible != *tt.eligible {
					t.Errorf("eligible = %v, want %v: %v", res.AutoApprove.Eligible, *tt.eligible, res.AutoApprove.Reasons)
				}
			}
		})
	}
	t.Run("without the proof engine nothing is auto-approved", func(t *testing.T) {
		f := newFixture(t)
		f.mustAdd("a")
		p := filepath.Join(t.TempDir(), "changed.txt")
		os.WriteFile(p, []byte("manifests/gitops-system/workload-clusters/a.yaml\n"), 0o644)
		d := testDeps()
		d.Prover = nil
		r := runFleet(t, d, "", "validate", f.root, "--changed", p, "--changed-prefix", "manifests/")
		if r.code != 0 || !strings.Contains(r.stdout, "not eligible") || !strings.Contains(r.stdout, "proof did not run") {
			t.Errorf("exit %d:\n%s", r.code, r.stdout)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// addB is what `fleet cluster add b` changes.
const addB = "manifests/gitops-system/workload-clusters/b.yaml\nmanifests/gitops-system/workload-clusters/kustomization.yaml\n" +
	"manifests/gitops-workloads/clusters/b/kustomization.yaml\nmanifests/gitops-workloads/clusters/b/flux-system/kustomization.yaml\n" +
	"manifests/gitops-workloads/clusters/b/flux-system/deploy-key.yaml\n"

// commit makes the fixture a Git repository whose HEAD is the tree as it is.
func (f *fixture) commit() {
	f.t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base"}} {
		cmd := exec.Command("git", append([]string{"-C", f.root}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			f.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func (f *fixture) replace(rel, old, new string) {
	f.t.Helper()
	s := f.read(rel)
	if !strings.Contains(s, old) {
		f.t.Fatalf("%s has no %q:\n%s", rel, old, s)
	}
	f.write(rel, strings.Replace(s, old, new, 1))
}

func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		deps     func() Deps
		args     []string
		wantCode int
		want     []string
	}{
		{"renders", testDeps, []string{"r1"}, 0, []string{"kind: VPC", "name: r1-vpc", "kind: Cluster", "name: mgmt-r1", "---\n"}},
		{"unknown cluster", testDeps, []string{"zz"}, 1, nil},
		{"no renderer", func() Deps { d := testDeps(); d.Renderer = nil; return d }, []string{"r1"}, 1, nil},
		{"no name is usage", testDeps, nil, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustAdd("r1")
			r := f.run(tt.deps(), append([]string{"render"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestStackValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "Pulumi.bad.yaml")
	os.WriteFile(bad, []byte("config:\n  eks-fleet:region: mars-1\n"), 0o644)
	acct, err := os.ReadFile(filepath.Join("..", "..", "..", "Pulumi.acct-payments.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	badAccount := filepath.Join(dir, "Pulumi.acct-x.yaml")
	os.WriteFile(badAccount, append(acct, []byte("  eks-fleet:natMode: per-az\n")...), 0o644)
	tests := []struct {
		name     string
		deps     func() Deps
		args     []string
		wantCode int
		want     string
	}{
		{"fake ok", func() Deps { d := testDeps(); d.Stacks = fakeStacks{}; return d }, []string{"Pulumi.dev.yaml"}, 0, "OK"},
		{"fake error", func() Deps { d := testDeps(); d.Stacks = fakeStacks{err: errors.New("hubName: bad")}; return d }, []string{"x"}, 1, "hubName: bad"},
		{"real validator on a bad file", func() Deps { d := testDeps(); d.Stacks = stackValidator{}; return d }, []string{bad}, 1, "mars-1"},
		{"real validator on a spoke account", func() Deps { d := testDeps(); d.Stacks = stackValidator{}; return d },
			[]string{filepath.Join("..", "..", "..", "Pulumi.acct-payments.yaml")}, 0, "OK"},
		{"real validator on a spoke account setting a hub's", func() Deps { d := testDeps(); d.Stacks = stackValidator{}; return d },
			[]string{badAccount}, 1, `eks-fleet:natMode: invalid value "per-az": allowed unset: a spoke-account stack sets only`},
		{"not available", testDeps, []string{"x"}, 1, "not available"},
		{"no file is usage", testDeps, nil, 2, "FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runFleet(t, tt.deps(), "", append([]string{"stack", "validate"}, tt.args...)...)
			if r.code != tt.wantCode || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", r.code, tt.wantCode, tt.want, r.stdout, r.stderr)
			}
		})
	}
}

type fakeStacks struct{ err error }

func (s fakeStacks) ValidateStackFile(string) error { return s.err }

func obj(gvk schema.GroupVersionKind, ns, name string, created time.Time, spec map[string]any, conds ...[2]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetCreationTimestamp(metav1.NewTime(created))
	if spec != nil {
		u.Object["spec"] = spec
	}
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "message": c[0] + " is " + c[1]})
	}
	if cs != nil {
		u.Object["status"] = map[string]any{"conditions": cs}
	}
	return u
}

func TestStatus(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	claimGVK := fleetstatus.ClaimGVR.GroupVersion().WithKind("WorkloadCluster")
	kGVK := fleetstatus.KustomizationGVR.GroupVersion().WithKind("Kustomization")
	spec := map[string]any{"region": "eu-west-1", "kubernetesVersion": "1.35"}
	ready := [][2]string{{"Ready", "True"}, {"Synced", "True"}}
	tests := []struct {
		name     string
		objs     []runtime.Object
		wantCode int
		want     []string
		notWant  []string
	}{
		{"healthy", []runtime.Object{
			obj(claimGVK, "workload-clusters", "alpha", now.Add(-3*time.Hour), spec, ready...),
			obj(kGVK, "flux-system", "flux-system", now.Add(-72*time.Hour), nil, [2]string{"Ready", "True"}),
			obj(kGVK, "flux-system", "alpha-eso", now.Add(-2*time.Hour), nil, [2]string{"Ready", "True"}),
			obj(kGVK, "flux-system", "alpha-flux", now.Add(-90*time.Minute), nil, [2]string{"Ready", "True"}),
			obj(kGVK, "flux-system", "alphabet-x", now, nil, [2]string{"Ready", "False"}),
		}, 0, []string{"alpha", "True", "1.35", "eu-west-1", "3h", "alpha-eso", "alpha-flux", "(hub)", "3d"}, []string{"alphabet-x"}},
		{"not ready", []runtime.Object{
			obj(claimGVK, "workload-clusters", "beta", now.Add(-10*time.Minute), spec, [2]string{"Ready", "False"}, [2]string{"Synced", "True"}),
			obj(kGVK, "flux-system", "beta-eso", now.Add(-time.Minute), nil, [2]string{"Ready", "False"}),
		}, 1, []string{"beta", "False", "10m", "beta-eso", "Ready is False"}, nil},
		{"empty", nil, 0, []string{"no WorkloadCluster claims"}, nil},
		{"accounts", []runtime.Object{
			obj(claimGVK, "workload-clusters", "gamma", now.Add(-time.Hour), spec, ready...),
			obj(claimGVK, "workload-clusters", "delta", now.Add(-time.Hour), map[string]any{"account": "222233334444", "region": "eu-west-1", "kubernetesVersion": "1.35"}, ready...),
		}, 0, []string{"ACCOUNT", "delta    True   True    1.35     222233334444  eu-west-1", "gamma    True   True    1.35     hub           eu-west-1"}, nil},
		{"workers unknown", []runtime.Object{
			obj(claimGVK, "workload-clusters", "gamma", now.Add(-time.Hour), spec, ready...),
		}, 0, []string{`kustomize-controller's workers not read (deployments.apps "kustomize-controller" not found); it needs at least one per spoke plus one per hub Kustomization (1 here)`}, []string{"warning:"}},
		{"workers short", []runtime.Object{
			kustomizeController(2),
			obj(claimGVK, "workload-clusters", "gamma", now.Add(-time.Hour), spec, ready...),
			obj(claimGVK, "workload-clusters", "delta", now.Add(-time.Hour), spec, ready...),
			obj(kGVK, "flux-system", "flux-system", now.Add(-72*time.Hour), nil, [2]string{"Ready", "True"}),
			obj(kGVK, "flux-system", "gamma-flux", now.Add(-time.Hour), nil, [2]string{"Ready", "True"}),
		}, 0, []string{"warning: kustomize-controller runs 2 workers for 2 spokes and 1 hub Kustomizations", "raise the hub stack's fluxConcurrency to at least 3."}, []string{"not read"}},
		{"workers enough", []runtime.Object{
			kustomizeController(3),
			obj(claimGVK, "workload-clusters", "gamma", now.Add(-time.Hour), spec, ready...),
			obj(claimGVK, "workload-clusters", "delta", now.Add(-time.Hour), spec, ready...),
			obj(kGVK, "flux-system", "flux-system", now.Add(-72*time.Hour), nil, [2]string{"Ready", "True"}),
		}, 0, []string{"gamma"}, []string{"warning:", "not read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDeps()
			d.Dynamic = func(kubeconfig string) (dynamic.Interface, error) {
				if kubeconfig != "hub.kubeconfig" {
					t.Errorf("kubeconfig %q", kubeconfig)
				}
				return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
					fleetstatus.ClaimGVR:         "WorkloadClusterList",
					fleetstatus.KustomizationGVR: "KustomizationList",
					fleetstatus.DeploymentGVR:    "DeploymentList",
				}, tt.objs...), nil
			}
			r := runFleet(t, d, "", "status", "--kubeconfig", "hub.kubeconfig")
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(r.stdout, w) {
					t.Errorf("output has %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

// kustomizeController is the hub's kustomize-controller Deployment with
// the FluxInstance's profile and the hub stack's --concurrent=n after it.
func kustomizeController(n int) *unstructured.Unstructured {
	return obj(fleetstatus.DeploymentGVR.GroupVersion().WithKind("Deployment"), "flux-system", fluxcontrollers.KustomizeController, time.Time{}, map[string]any{
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "manager", "args": []any{"--watch-all-namespaces", "--concurrent=20", "--concurrent=" + strconv.Itoa(n)},
		}}}},
	})
}

func TestUsageAndHelp(t *testing.T) {
	root := NewRootCommandWithDeps(&bytes.Buffer{}, &bytes.Buffer{}, testDeps())
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Name() != "help" && c.Name() != "completion" && !c.HasSubCommands() {
			n++
			if c.Example == "" {
				t.Errorf("%s has no examples", c.CommandPath())
			}
			r := runFleet(t, testDeps(), "", append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "fleet ")), "--help")...)
			if r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
				t.Errorf("%s --help: exit %d\n%s", c.CommandPath(), r.code, r.stdout)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if n < 9 {
		t.Errorf("only %d leaf commands", n)
	}
	for _, args := range [][]string{{"frobnicate"}, {"validate", "--bogus"}, {"cluster", "add"}, {"render", "a", "b"}} {
		if r := runFleet(t, testDeps(), "", args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, r.code, ExitUsage, r.stderr)
		}
	}
	// Run prints the error and a usage hint.
	var out, errb bytes.Buffer
	if code := RunWithDeps(context.Background(), []string{"cluster", "add"}, &out, &errb, testDeps()); code != ExitUsage || !strings.Contains(errb.String(), "--help") {
		t.Errorf("Run: %d %s", code, errb.String())
	}
}

func TestClusterInfoOverride(t *testing.T) {
	f := newFixture(t)
	ci := filepath.Join(t.TempDir(), "ci.yaml")
	os.WriteFile(ci, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-info\ndata:\n  HUB_VPC_CIDR: 10.1.0.0/16\n  HUB_CLUSTER_NAME: hub2\n"), 0o644)
	r := f.run(testDeps(), "--cluster-info", ci, "cluster", "add", "c1")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	// 10.0/16 is reserved by the policy and 10.1/16 is now the hub's.
	if c := readClaim(t, f, "c1"); c.Spec.VPCCIDR != "10.2.0.0/16" || !strings.Contains(r.stdout, "flux-hub2-c1") {
		t.Errorf("cidr %s, out %s", c.Spec.VPCCIDR, r.stdout)
	}
	os.WriteFile(ci, []byte("NOPE: x\n"), 0o644)
	if r := f.run(testDeps(), "--cluster-info", ci, "validate"); r.code != 1 || !strings.Contains(r.stderr, `unknown variable "NOPE"`) {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// TestValidateBaseRef: changes to an existing claim are checked against its
// version on the pull request's base commit.
func TestValidateBaseRef(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(f *fixture)
		ref      string
		wantCode int
		want     string
	}{
		{"unchanged", func(f *fixture) {}, "HEAD", 0, "PASS"},
		{"upgrade by one", func(f *fixture) { f.replace(fleettree.ClaimRel("a"), `"1.35"`, `"1.36"`) }, "HEAD", 0, "PASS"},
		{"region changed", func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "region: eu-west-1", "region: us-east-1") }, "HEAD", 1, "region is immutable"},
		{"cidr changed", func(f *fixture) { f.replace(fleettree.ClaimRel("a"), "10.1.0.0/16", "10.9.0.0/16") }, "HEAD", 1, "vpcCidr is immutable"},
		{"downgrade", func(f *fixture) { f.replace(fleettree.ClaimRel("a"), `"1.35"`, `"1.34"`) }, "HEAD", 1, "downgrade"},
		{"new claim has no base", func(f *fixture) { f.mustAdd("b") }, "HEAD", 0, "PASS"},
		{"bad ref is usage", func(f *fixture) {}, "no-such-ref", 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustAdd("a")
			repo := filepath.Dir(f.root)
			for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "base"}} {
				if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v %s", args, err, out)
				}
			}
			tt.mutate(f)
			r := runFleet(t, testDeps(), "", "validate", f.root, "--base-ref", tt.ref)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, r.stdout)
			}
		})
	}
}
