package test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// TestSlimSameFindings: once a claim's own checks ran on its render, the
// proof lets go of the composed objects only those checks read (AWS
// managed resources but IAM roles, Usages; proof.keptComposed). On a tree
// whose Composition composes every spoke for another hub (the EKS cluster,
// role names and boundary no longer match cluster-info), the report is the
// same as with every rendered object kept (Options.KeepRendered): the same
// findings, notes and object count, and the findings include the claim's
// own checks and the fleet-wide ones on the roles kept.
func TestSlimSameFindings(t *testing.T) {
	const composition = "gitops-system/platform-apis/workload-cluster/composition.yaml"
	tree := plant.Repo(t,
		plant.Edit{File: composition, Old: "hubName: ${quote}${HUB_CLUSTER_NAME}${quote}", New: "hubName: otherhub"},
		plant.Edit{File: composition, Old: "spokeBoundaryArn: ${quote}${SPOKE_PERMISSIONS_BOUNDARY_ARN}${quote}", New: "spokeBoundaryArn: arn:aws:iam::111122223333:policy/otherhub-spoke-boundary"},
	)
	var objects [2]int
	var notes [2][]string
	run := func(keep bool) []string {
		rep, err := proof.Run(context.Background(), proof.Options{Tree: tree, ClusterInfo: clusterinfo.Example(), SkipSealing: true, KeepRendered: keep})
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		if keep {
			i = 1
		}
		objects[i], notes[i] = rep.Objects, rep.Notes
		var out []string
		for _, f := range rep.Findings {
			out = append(out, f.String())
		}
		return out
	}
	slim, whole := run(false), run(true)
	if !slices.Equal(slim, whole) {
		t.Fatalf("findings differ:\nslim:\n%s\nwhole:\n%s", strings.Join(slim, "\n"), strings.Join(whole, "\n"))
	}
	if objects[0] != objects[1] || !slices.Equal(notes[0], notes[1]) {
		t.Fatalf("objects %d, notes %q; with every rendered object kept: %d, %q", objects[0], notes[0], objects[1], notes[1])
	}
	t.Logf("%d findings:\n%s", len(slim), strings.Join(slim, "\n"))
	for _, want := range []string{"EKS cluster name", "permissionsBoundary"} {
		if !slices.ContainsFunc(slim, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("no finding mentions %q", want)
		}
	}
}
