package site

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// TestPreparedAccounts: the repository's payments stack prepares the fleet
// policy's example account; a stack with another external ID, or none at
// all, leaves the account unprepared, named.
func TestPreparedAccounts(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason   string
		edit     func(dir string) error
		prepared []SpokeAccount
		missing  bool
	}{
		"Repository": {reason: "Pulumi.acct-payments.yaml prepares the policy's entry.",
			prepared: []SpokeAccount{{ID: clusterinfo.ExampleSpokeAccount, Stack: "Pulumi.acct-payments.yaml"}}},
		"OtherExternalID": {reason: "The stack was run with another external ID than the entry's.",
			edit: func(dir string) error {
				p := filepath.Join(dir, "Pulumi.acct-payments.yaml")
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				return os.WriteFile(p, []byte(strings.Replace(string(b), "7c9e6679-7425-40de-944b-e07fc1f90ae7", "0b5cbbd2-6a43-4b8e-9e0c-9e0d2b0c6f11", 1)), 0o644)
			}, missing: true},
		"NoStack": {reason: "No spoke-account stack in the checkout.",
			edit: func(dir string) error { return os.Remove(filepath.Join(dir, "Pulumi.acct-payments.yaml")) }, missing: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := root
			if tc.edit != nil {
				dir = t.TempDir()
				for _, f := range []string{"Pulumi.yaml", "Pulumi.mgmt.yaml", "Pulumi.acct-payments.yaml"} {
					b, err := os.ReadFile(filepath.Join(root, f))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := treeedit.CopyTree(filepath.Join(root, "manifests"), filepath.Join(dir, "manifests")); err != nil {
					t.Fatal(err)
				}
				if err := tc.edit(dir); err != nil {
					t.Fatal(err)
				}
			}
			prepared, missing, err := PreparedAccounts(dir)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.prepared, prepared); d != "" {
				t.Errorf("%s\nprepared (-want +got):\n%s", tc.reason, d)
			}
			want := []string(nil)
			if tc.missing {
				want = []string{"account " + clusterinfo.ExampleSpokeAccount + " of the fleet policy: no spoke-account stack here prepares its role arn:aws:iam::" +
					clusterinfo.ExampleSpokeAccount + ":role/mgmt-crossplane-account with its external ID"}
			}
			if d := cmp.Diff(want, missing); d != "" {
				t.Errorf("%s\nmissing (-want +got):\n%s", tc.reason, d)
			}
		})
	}
}

// TestCaptureAccountRunsAsItsStack: the spoke account's resources are made
// as `pulumi up -s acct-payments` makes them, each AWS resource that takes
// tags tagged with that stack's name, the name the delete guard later runs
// as.
func TestCaptureAccountRunsAsItsStack(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	m, err := CaptureAccount(filepath.Join(root, "Pulumi.acct-payments.yaml"), clusterinfo.ExampleSpokeAccount, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range m.Resources() {
		if tags, ok := plain(r.Inputs["tags"]).(map[string]any); ok && r.Custom {
			got[fmt.Sprint(tags[stacks.StackTagKey])]++
		}
	}
	if len(got) != 1 || got["acct-payments"] == 0 {
		t.Errorf("the account's tagged resources by their %s tag: %v, want all acct-payments", stacks.StackTagKey, got)
	}
}
