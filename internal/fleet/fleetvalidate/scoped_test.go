package fleetvalidate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// TestPolicyFindingsFor: a request's policy findings check deploy keys of
// the request's clusters only, and everything fleet-wide (CIDRs, listing,
// folders) over every claim, on the tree with the change pending.
func TestPolicyFindingsFor(t *testing.T) {
	root := repoTree(t)
	// apps-staging loses its deploy key (a per-cluster problem).
	if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(fleettree.WorkloadsRel("apps-staging")+"/"+fleettree.DeployKeyDir))); err != nil {
		t.Fatal(err)
	}
	// The change: a cluster whose CIDR overlaps apps-staging's, listed,
	// with a workloads folder but no deploy key.
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(fleettree.ClaimRel("apps-staging"))))
	if err != nil {
		t.Fatal(err)
	}
	ch := treeedit.New()
	ch.Write(fleettree.ClaimRel("newer"), []byte(strings.Replace(string(b), "name: apps-staging", "name: newer", 1)))
	kpath := fleettree.ClaimsDir + "/" + fleettree.Kustomization
	kb, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(kpath)))
	if err != nil {
		t.Fatal(err)
	}
	ch.Write(kpath, append(kb, []byte("  - newer.yaml\n")...))
	ch.Write(fleettree.WorkloadsRel("newer")+"/"+fleettree.Kustomization, []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"))
	tree := (&fleettree.Tree{Root: root}).With(ch)
	pol, err := policy.Load(tree.Path(policy.RelPath))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		names    []string // nil: PolicyFindings
		keysOf   []string // clusters with a deploy-key finding
		overlaps bool
	}{
		{"whole fleet", nil, []string{"apps-staging", "newer"}, true},
		{"request for newer", []string{"newer"}, []string{"newer"}, true},
		{"request for apps-staging", []string{"apps-staging"}, []string{"apps-staging"}, true},
		{"request for no cluster", []string{}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fs []Finding
			var claims []fleettree.ClaimFile
			var err error
			if tt.names == nil {
				fs, claims, err = PolicyFindings(tree, pol, policy.Hub{VPCCIDR: "10.0.0.0/16"})
			} else {
				fs, claims, err = PolicyFindingsFor(tree, pol, policy.Hub{VPCCIDR: "10.0.0.0/16"}, tt.names)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(claims) != 2 {
				t.Fatalf("%d claims, want 2 (the pending one too)", len(claims))
			}
			keys := map[string]bool{}
			overlap := false
			for _, f := range fs {
				switch {
				case f.Check == "policy/deploy-key":
					keys[f.Object] = true
				case strings.Contains(f.Message, "overlaps"):
					overlap = true
				}
			}
			if len(keys) != len(tt.keysOf) {
				t.Errorf("deploy-key findings for %v, want %v", keys, tt.keysOf)
			}
			for _, n := range tt.keysOf {
				if !keys[n] {
					t.Errorf("no deploy-key finding for %s: %+v", n, fs)
				}
			}
			if overlap != tt.overlaps {
				t.Errorf("CIDR overlap found = %v, want %v: %+v", overlap, tt.overlaps, fs)
			}
		})
	}
}
