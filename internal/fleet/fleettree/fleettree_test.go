package fleettree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

const claimA = `apiVersion: platform.eksfleet.io/v1alpha1
kind: WorkloadCluster
metadata:
  name: a
  namespace: workload-clusters
spec:
  region: eu-west-1
  kubernetesVersion: "1.35"
  vpcCidr: 10.1.0.0/16
  availabilityZones: 3
  natMode: single
  nodes: {instanceTypes: [m7i.large], min: 1, desired: 1, max: 2}
`

func TestParseClaims(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{"one", claimA, []string{"a"}, ""},
		{"other kinds skipped", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n---\n" + claimA, []string{"a"}, ""},
		{"two", claimA + "---\n" + strings.Replace(claimA, "name: a", "name: b", 1), []string{"a", "b"}, ""},
		{"unknown field", strings.Replace(claimA, "natMode: single", "natMode: single\n  colour: red", 1), nil, "colour"},
		{"empty", "", nil, ""},
		{"bad yaml", "kind: [", nil, "document 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := ParseClaims([]byte(tt.in))
			if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			var got []string
			for _, c := range cs {
				got = append(got, c.Metadata.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTreeClaimsAndFind(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644)
	root := filepath.Join(repo, "manifests")
	dir := filepath.Join(root, filepath.FromSlash(ClaimsDir))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(claimA), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("apiVersion: platform.eksfleet.io/v1alpha1\nkind: WorkloadCluster\nspec: 3\n"), 0o644)
	os.WriteFile(filepath.Join(dir, Kustomization), []byte("resources: [a.yaml]\n"), 0o644)
	tr, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Claims(); err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Errorf("Claims with a broken file: %v", err)
	}
	cs, bad, err := tr.ClaimsLenient()
	if err != nil || len(cs) != 1 || len(bad) != 1 || cs[0].Rel != ClaimRel("a") {
		t.Errorf("lenient: %v %v %v", cs, bad, err)
	}
	if _, ok := FindClaim(cs, "a"); !ok {
		t.Error("FindClaim a")
	}
	// Find walks up to go.mod from a subdirectory.
	sub := filepath.Join(repo, "x", "y")
	os.MkdirAll(sub, 0o755)
	if got, err := Find(sub); err != nil || got != root {
		t.Errorf("Find = %s, %v; want %s", got, err, root)
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Error("Open accepted a directory without claims")
	}
	b, err := MarshalClaim(cs[0].Claim)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseClaims(b)
	if err != nil || len(back) != 1 || back[0].Spec.VPCCIDR != "10.1.0.0/16" || back[0].Kind != workloadcluster.ClaimKind {
		t.Errorf("round trip: %v %v", back, err)
	}
}

func TestDeployKeyPublic(t *testing.T) {
	const pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE0 flux-a"
	tests := map[string]struct {
		reason  string
		content []byte
		want    string
		wantOK  bool
	}{
		"Written":      {reason: "what DeployKeyContent writes reads back", content: DeployKeyContent("a", pub, []byte("apiVersion: bitnami.com/v1alpha1\n")), want: pub, wantOK: true},
		"NoComment":    {reason: "a file without the comment names no key", content: []byte("apiVersion: bitnami.com/v1alpha1\n"), wantOK: false},
		"OtherComment": {reason: "another first comment names no key", content: []byte("# public part: x)\n"), wantOK: false},
		"Unclosed":     {reason: "a cut comment names no key", content: []byte("# Deploy key of spoke a (public part: ssh-ed25519 AAAA\n"), wantOK: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := DeployKeyPublic(tc.content)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("%s\nDeployKeyPublic(...) = %q, %v; want %q, %v", tc.reason, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
