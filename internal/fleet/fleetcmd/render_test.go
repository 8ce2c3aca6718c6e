package fleetcmd

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// bootstrapRenderer composes a VPC and the given Kustomizations.
type bootstrapRenderer struct{ kss []map[string]any }

func (r bootstrapRenderer) RenderClaim(context.Context, RenderRequest) ([]*unstructured.Unstructured, error) {
	vpc := &unstructured.Unstructured{}
	vpc.SetAPIVersion("ec2.aws.upbound.io/v1beta1")
	vpc.SetKind("VPC")
	vpc.SetName("r1-vpc")
	out := []*unstructured.Unstructured{vpc}
	for _, k := range r.kss {
		out = append(out, &unstructured.Unstructured{Object: k})
	}
	return out, nil
}

func bootstrapKs(name, path string, remote bool, substitute map[string]any) map[string]any {
	spec := map[string]any{
		"interval":  "10m",
		"path":      path,
		"prune":     true,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"},
		"postBuild": map[string]any{
			"substitute":     substitute,
			"substituteFrom": []any{map[string]any{"kind": "ConfigMap", "name": "cluster-info"}},
		},
	}
	if remote {
		spec["kubeConfig"] = map[string]any{"configMapRef": map[string]any{"name": "r1-kubeconfig"}}
	}
	return map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": name, "namespace": "flux-system"},
		"spec":       spec,
	}
}

func TestRenderBootstrap(t *testing.T) {
	const dir = "./manifests/gitops-system/spoke-bootstrap/demo"
	vars := map[string]any{"CLUSTER_NAME": "r1"}
	otherSource := bootstrapKs("r1-other", dir, true, vars)
	otherSource["spec"].(map[string]any)["sourceRef"] = map[string]any{"kind": "OCIRepository", "name": "elsewhere"}
	tests := []struct {
		name     string
		kss      []map[string]any
		args     []string
		wantCode int
		want     []string // in stdout (success) or stderr (failure)
		notWant  []string // in stdout
	}{
		{"hub and spoke", []map[string]any{bootstrapKs("r1-local", dir, false, vars), bootstrapKs("r1-remote", dir, true, vars)}, nil, 0,
			[]string{"kind: VPC", "---\n# r1-local -> hub\napiVersion: v1\n", "---\n# r1-remote -> spoke\napiVersion: v1\n", "\nkind: ConfigMap\n",
				"cluster: r1\n", "hub: mgmt\n", "name: r1-demo\n"}, []string{"${"}},
		{"empty folder is said", []map[string]any{bootstrapKs("r1-empty", "./manifests/gitops-system/spoke-bootstrap/empty", true, vars)}, nil, 0,
			[]string{"---\n# r1-empty -> spoke: applies no objects\n"}, []string{"name: r1-demo"}},
		{"--bootstrap=false prints only composed resources", []map[string]any{bootstrapKs("r1-remote", dir, true, vars)}, []string{"--bootstrap=false"}, 0,
			[]string{"kind: VPC", "name: r1-remote"}, []string{"# r1-remote -> ", "name: r1-demo"}},
		{"other source is not built", []map[string]any{otherSource}, nil, 0, []string{"kind: VPC"}, []string{"# r1-other"}},
		{"missing path fails naming the Kustomization", []map[string]any{bootstrapKs("r1-broken", "./manifests/gitops-system/spoke-bootstrap/none", true, vars)}, nil, 1,
			[]string{"r1-broken", "spoke-bootstrap/none"}, nil},
		{"unset variable fails (strict substitution)", []map[string]any{bootstrapKs("r1-novars", dir, true, nil)}, nil, 1,
			[]string{"r1-novars", "CLUSTER_NAME"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustAdd("r1")
			f.write("gitops-system/spoke-bootstrap/demo/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - demo.yaml\n")
			f.write("gitops-system/spoke-bootstrap/demo/demo.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}-demo\n  namespace: flux-system\ndata:\n  cluster: ${CLUSTER_NAME}\n  hub: ${HUB_CLUSTER_NAME}\n")
			f.write("gitops-system/spoke-bootstrap/empty/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n")
			before := f.snapshot()
			d := testDeps()
			d.Renderer = bootstrapRenderer{tt.kss}
			r := f.run(d, append([]string{"render", "r1"}, tt.args...)...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.wantCode, r.stderr)
			}
			got := r.stdout
			if tt.wantCode != 0 {
				got = r.stderr
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(r.stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, r.stdout)
				}
			}
			if f.snapshot() != before {
				t.Errorf("render changed the tree")
			}
		})
	}
}
