package fleetcmd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/accounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// fixture is a minimal fleet tree in a temp dir with the repository's own
// policy file, a sealing certificate and a known_hosts file.
type fixture struct {
	t    *testing.T
	root string // the manifests tree
	key  *rsa.PrivateKey
	cert string // path
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := filepath.Join(t.TempDir(), "manifests")
	pol, err := os.ReadFile(filepath.Join("..", "..", "..", "manifests", filepath.FromSlash(policy.RelPath)))
	if err != nil {
		t.Fatalf("the repository's policy file: %v", err)
	}
	f := &fixture{t: t, root: root}
	if pol, err = plant.RaiseQuotas(pol); err != nil {
		t.Fatal(err)
	}
	f.write(policy.RelPath, string(pol))
	// the policy's spoke accounts come with their ProviderConfigs
	entries, err := os.ReadDir(filepath.Join("..", "..", "..", "manifests", filepath.FromSlash(accounts.Dir)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "manifests", filepath.FromSlash(accounts.Dir), e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f.write(accounts.Dir+"/"+e.Name(), string(b))
	}
	f.write(fleettree.ClaimsDir+"/kustomization.yaml", "# claims\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n")
	f.key, f.cert = testCert(t, root, time.Now().Add(24*time.Hour))
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := ssh.NewPublicKey(pub)
	f.write(fleettree.DefaultKnownHost, "github.com "+string(ssh.MarshalAuthorizedKey(sp)))
	return f
}

// testCert writes a self-signed sealing certificate the way the Sealed
// Secrets controller makes one (RSA, CN sealed-secret).
func testCert(t *testing.T, root string, notAfter time.Time) (*rsa.PrivateKey, string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sealed-secret"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: notAfter, KeyUsage: x509.KeyUsageEncipherOnly}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, filepath.FromSlash(fleettree.DefaultCertFile))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return k, p
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(rel)))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(f.root, filepath.FromSlash(rel)))
	return err == nil
}

// snapshot hashes every file and directory of the tree.
func (f *fixture) snapshot() string {
	f.t.Helper()
	var lines []string
	err := filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(f.root, p)
		if d.IsDir() {
			lines = append(lines, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		lines = append(lines, rel+" "+hex.EncodeToString(h[:]))
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

type result struct {
	code           int
	stdout, stderr string
}

// run executes fleet in-process on the fixture's tree.
func (f *fixture) run(d Deps, args ...string) result {
	f.t.Helper()
	return runFleet(f.t, d, "", append([]string{"--tree", f.root}, args...)...)
}

func runFleet(t *testing.T, d Deps, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := NewRootCommandWithDeps(&out, &errb, d)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		errb.WriteString("Error: " + err.Error() + "\n")
	}
	return result{code: ExitCode(err), stdout: out.String(), stderr: errb.String()}
}

// fakeProver returns canned findings and records the trees it saw.
type fakeProver struct {
	findings func(tree string) []fleetvalidate.Finding
	calls    int
}

func (p *fakeProver) Prove(_ context.Context, req fleetvalidate.ProofRequest) (*fleetvalidate.ProofReport, error) {
	p.calls++
	var fs []fleetvalidate.Finding
	if p.findings != nil {
		tree := req.Tree
		// A request's change is pending: show it applied.
		if req.Change != nil {
			dir, cleanup, err := req.Change.Stage(tree)
			if err != nil {
				return nil, err
			}
			defer cleanup()
			tree = dir
		}
		fs = p.findings(tree)
	}
	return &fleetvalidate.ProofReport{Findings: fs, Objects: 42}, nil
}

// fakeRenderer renders a claim into a VPC and an EKS cluster named after it.
type fakeRenderer struct{ calls int }

func (r *fakeRenderer) RenderClaim(_ context.Context, req RenderRequest) ([]*unstructured.Unstructured, error) {
	r.calls++
	info := req.Info
	name := strings.TrimSuffix(filepath.Base(req.ClaimPath), ".yaml")
	mk := func(apiVersion, kind, n string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(n)
		return u
	}
	return []*unstructured.Unstructured{
		mk("platform.eksfleet.io/v1alpha1", "XWorkloadCluster", name+"-x"),
		mk("ec2.aws.upbound.io/v1beta1", "VPC", name+"-vpc"),
		mk("eks.aws.upbound.io/v1beta1", "Cluster", info.HubName+"-"+name),
		mk("kustomize.toolkit.fluxcd.io/v1", "Kustomization", name+"-flux"),
		paused(mk("ec2.aws.upbound.io/v1beta1", "NATGateway", name+"-nat-b")),
		orphaned(mk("ec2.aws.upbound.io/v1beta1", "EIP", name+"-kept")),
	}, nil
}

// testDeps are fakes for everything outside the tree.
func testDeps() Deps {
	return Deps{Prover: &fakeProver{}, Renderer: &fakeRenderer{}, Now: func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) }}
}

func paused(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.Object["spec"] = map[string]any{"managementPolicies": []any{}}
	return u
}

func orphaned(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.Object["spec"] = map[string]any{"deletionPolicy": "Orphan"}
	return u
}
