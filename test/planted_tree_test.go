package test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// plantedTree is a copy of the repository's tree with edits; want are the
// substrings every one of which `fleet validate` must print (none: it must
// pass).
type plantedTree struct {
	name  string
	edits []plant.Edit
	want  []string
}

// validatePlanted runs `fleet validate` on the repository's tree (no edits)
// and on each planted copy.
func validatePlanted(t *testing.T, trees []plantedTree) {
	t.Helper()
	for _, tt := range trees {
		t.Run(tt.name, func(t *testing.T) {
			tree := "../manifests"
			if tt.edits != nil {
				tree = plant.Repo(t, tt.edits...)
			}
			var out, errOut bytes.Buffer
			code := fleetcmd.Run(context.Background(), []string{"validate", tree}, &out, &errOut)
			all := out.String() + errOut.String()
			if tt.want == nil {
				if code != 0 {
					t.Fatalf("fleet validate exit %d:\n%s", code, all)
				}
				return
			}
			if code == 0 {
				t.Fatalf("fleet validate passed a planted error:\n%s", all)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}
