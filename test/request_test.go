package test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/benchtree"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

const xrdFile = "gitops-system/platform-apis/workload-cluster/definition.yaml"

// TestRequests: the request commands (fleet cluster add/upgrade/remove,
// fleet app add), which prove only their own cluster on a tree from which
// the other clusters' claims and folders are left out, still fail on
// every problem of their change: a claim the XRD's rules reject, a claim
// whose post-build substitution fails in the hub's claims Kustomization,
// an app whose path does not build; and a claims listing that does not
// build resource by resource is built whole.
func TestRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fleet with the real proof")
	}
	base := filepath.Join(t.TempDir(), "manifests")
	if err := benchtree.Generate(filepath.Join("..", "manifests"), base, 3); err != nil {
		t.Fatal(err)
	}
	cert, kh := fbCert(t, t.TempDir())
	add := func(extra ...string) []string {
		return append([]string{"cluster", "add", "bench-new", "--dry-run", "--cert", cert, "--known-hosts", kh}, extra...)
	}
	upgrade := func(name string) []string {
		return []string{"cluster", "upgrade", name, "--version", "1.36", "--dry-run"}
	}
	appAdd := func(path string) []string {
		return []string{"app", "add", "payment-app", "--cluster", benchtree.Name(1), "--repo", "self", "--path", path, "--team", "payments", "--dry-run"}
	}
	label := func(claim string) plant.Edit {
		return plant.Edit{File: "gitops-system/workload-clusters/" + claim + ".yaml", Old: "  namespace: workload-clusters\n", New: "  namespace: workload-clusters\n  labels:\n    team: ${NOT_SET_ANYWHERE}\n"}
	}
	tests := []struct {
		name    string
		plants  []plant.Edit
		args    []string
		code    int
		want    []string // in stdout or stderr
		notWant []string
	}{
		{name: "add", args: add(), want: []string{"dry run: would write", "bench-new.yaml"}},
		{name: "add: the new claim breaks an XRD rule",
			plants: []plant.Edit{{File: xrdFile, Old: "message: natMode may only change from single to per-az", New: "message: natMode may only change from single to per-az\n                    - rule: self != 'per-az'\n                      message: planted per-az rule"}},
			args:   add("--nat", "per-az"), code: 1, want: []string{"planted per-az rule", "WorkloadCluster workload-clusters/bench-new", "nothing written"}},
		{name: "upgrade", args: upgrade(benchtree.Name(1)), want: []string{"would go from 1.35 to 1.36"}},
		{name: "upgrade: the claim breaks an XRD rule",
			plants: []plant.Edit{{File: xrdFile, Old: "message: kubernetesVersion may only move up one minor version at a time", New: "message: kubernetesVersion may only move up one minor version at a time\n                    - rule: self != '1.36'\n                      message: planted version rule"}},
			args:   upgrade(benchtree.Name(1)), code: 1, want: []string{"planted version rule", "nothing written"}},
		{name: "upgrade: the claim's post-build substitution fails", plants: []plant.Edit{label(benchtree.Name(1))},
			args: upgrade(benchtree.Name(1)), code: 1, want: []string{"NOT_SET_ANYWHERE", "Kustomization flux-system/workload-clusters", "nothing written"}},
		{name: "upgrade: another claim's substitution fails (fleet validate's finding, not this request's)", plants: []plant.Edit{label(benchtree.Name(2))},
			args: upgrade(benchtree.Name(1)), want: []string{"would go from 1.35 to 1.36"}},
		{name: "add: a claims listing with replacements from another claim builds whole",
			plants: []plant.Edit{{File: "gitops-system/workload-clusters/kustomization.yaml", Old: "resources:\n", New: "replacements:\n" +
				"  - source: {kind: WorkloadCluster, name: " + benchtree.Name(2) + ", fieldPath: spec.region}\n" +
				"    targets:\n      - select: {kind: WorkloadCluster, name: bench-new}\n" +
				"        fieldPaths: [metadata.labels.copied-region]\n        options: {create: true}\nresources:\n"}},
			args: add(), want: []string{"dry run: would write"}, notWant: []string{"warning:", "nothing selected"}},
		{name: "app add", args: appAdd("./manifests/apps/payment-app/overlays/staging"), want: []string{"dry run: would write"}},
		{name: "app add: the app's path does not build", args: appAdd("./manifests/apps/payment-app/overlays/nope"), code: 1,
			want: []string{"payment-app", "nothing written"}},
		{name: "remove", args: []string{"cluster", "remove", benchtree.Name(2), "--dry-run"},
			want: []string{"dry run: would remove", "Cluster.eks " + benchtree.Name(2) + "-eks", "VPC.ec2 " + benchtree.Name(2) + "-vpc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := plant.Copy(t, base, tt.plants...)
			var out, errb bytes.Buffer
			code := fleetcmd.Run(context.Background(), append(tt.args, "--tree", tree), &out, &errb)
			all := out.String() + errb.String()
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, all)
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(all, w) {
					t.Errorf("output has %q:\n%s", w, all)
				}
			}
		})
	}
}
