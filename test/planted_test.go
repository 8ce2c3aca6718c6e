package test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

const fixture = "testdata/mini/manifests"

// edit replaces old with new in one file of the fixture's gitops-system/
// (or, with old empty, writes new as the file).
type edit struct {
	file, old, new string
}

// mutate copies the fixture tree to a temporary directory and applies the
// edits; it returns the copy's manifests/ path.
func mutate(t *testing.T, edits ...edit) string {
	t.Helper()
	planted := make([]plant.Edit, len(edits))
	for i, e := range edits {
		planted[i] = plant.Edit{File: "gitops-system/" + e.file, Old: e.old, New: e.new}
	}
	return plant.Copy(t, fixture, planted...)
}

// TestPlantedErrors plants one error per check in a copy of the fixture
// tree (which passes as is, see TestProofFixture) and asserts the proof
// reports it under the right check.
func TestPlantedErrors(t *testing.T) {
	cases := []struct {
		name  string
		edits []edit
		check string
		want  []string // substrings of one finding's message or object
	}{
		{
			name:  "sealing controller does not watch for new key Secrets (rotation, M1)",
			edits: []edit{{"infrastructure/sealing/sealing.yaml", "watchForSecrets: true", "watchForSecrets: false"}},
			check: proof.CheckSealing,
			want:  []string{"watchForSecrets", "restarts"},
		},
		{
			name:  "missing substitution variable in the tree",
			edits: []edit{{"platform-apis/composition.yaml", "fmt: \"${SPOKE_ROLE_PREFIX}%s-irsa\"", "fmt: \"${SPOKE_ROLE_PREFX}%s-irsa\""}},
			check: proof.CheckBuild,
			want:  []string{"SPOKE_ROLE_PREFX", "platform-apis"},
		},
		{
			name:  "missing substitution variable in a Kustomization the Composition emits",
			edits: []edit{{"spoke-bootstrap/bootstrap.yaml", "CLUSTER_NAME: ${CLUSTER_NAME}", "CLUSTER_NAME: ${CLUSTER_NAMES}"}},
			check: proof.CheckBuild,
			want:  []string{"CLUSTER_NAMES", "alpha-bootstrap"},
		},
		{
			name:  "kustomization path that does not exist",
			edits: []edit{{"clusters/mgmt/chain.yaml", "infrastructure/sources", "infrastructure/source"}},
			check: proof.CheckBuild,
			want:  []string{"kustomization path not found"},
		},
		{
			name:  "Flux Kustomization file no kustomization.yaml lists",
			edits: []edit{{"clusters/mgmt/extra.yaml", "", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: extra\n  namespace: flux-system\nspec:\n  interval: 1h\n  prune: true\n  path: ./x\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"}},
			check: proof.CheckBuild,
			want:  []string{"clusters/mgmt/extra.yaml", "not applied"},
		},
		{
			name:  "claim file the workload-clusters kustomization.yaml does not list",
			edits: []edit{{"workload-clusters/gamma.yaml", "", "apiVersion: test.eksfleet.io/v1alpha1\nkind: MiniCluster\nmetadata:\n  name: gamma\n  namespace: workload-clusters\nspec:\n  region: eu-west-1\n  nodes: {min: 1, max: 2}\n"}},
			check: proof.CheckRender,
			want:  []string{"workload-clusters/gamma.yaml", "claim is not applied"},
		},
		{
			name:  "OpenAPI violation on an upstream CRD",
			edits: []edit{{"infrastructure/sources/sources.yaml", "interval: 12h", "interval: twelve-hours"}},
			check: proof.CheckSchema,
			want:  []string{"HelmRepository", "spec.interval"},
		},
		{
			name:  "unknown field on an upstream CRD",
			edits: []edit{{"infrastructure/sealing/sealing.yaml", "refreshInterval: 1h", "refreshInterval: 1h\n  refreshIntervall: 1h"}},
			check: proof.CheckSchema,
			want:  []string{"refreshIntervall", "unknown field"},
		},
		{
			name:  "CEL rule of the XRD violated by a claim",
			edits: []edit{{"workload-clusters/beta.yaml", "min: 1", "min: 5"}},
			check: proof.CheckSchema,
			want:  []string{"MiniCluster workload-clusters/beta", "nodes.min must be <= nodes.max"},
		},
		{
			name:  "claim with a field the XRD does not allow",
			edits: []edit{{"workload-clusters/alpha.yaml", "region: eu-west-1", "region: mars-north-1"}},
			check: proof.CheckSchema,
			want:  []string{"MiniCluster workload-clusters/alpha", "spec.region", "mars-north-1"},
		},
		{
			name:  "built-in kind against the Kubernetes OpenAPI",
			edits: []edit{{"spoke-bootstrap/bootstrap.yaml", "  HUB: ${HUB_CLUSTER_NAME}", "  HUB: ${HUB_CLUSTER_NAME}\nbinaryDatas: {}"}},
			check: proof.CheckSchema,
			want:  []string{"ConfigMap flux-system/spoke-info", "binaryDatas"},
		},
		{
			name:  "unknown kind",
			edits: []edit{{"infrastructure/sources/sources.yaml", "", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"}},
			check: proof.CheckSchema,
			want:  []string{"Widget"},
		},
		{
			name: "rendered resource violating the provider CRD",
			edits: []edit{{"platform-apis/composition.yaml", "permissionsBoundary: ${SPOKE_PERMISSIONS_BOUNDARY_ARN}",
				"permissionsBoundary: ${SPOKE_PERMISSIONS_BOUNDARY_ARN}\n                  maxSessionDuration: one-hour"}},
			check: proof.CheckRender,
			want:  []string{"Role mgmt-spoke-alpha-irsa", "maxSessionDuration"},
		},
		{
			name:  "rendered resource missing what the provider CRD's CEL rule requires",
			edits: []edit{{"platform-apis/composition.yaml", "                  assumeRolePolicy: |", "                  assumeRolePolicyX: |"}},
			check: proof.CheckRender,
			want:  []string{"Role mgmt-spoke-alpha-irsa", "assumeRolePolicy is a required parameter"},
		},
		{
			name:  "rendered names collide across spokes",
			edits: []edit{{"platform-apis/composition.yaml", "fmt: \"${SPOKE_ROLE_PREFIX}%s-irsa\"", "fmt: \"${SPOKE_ROLE_PREFIX}shared-irsa%.0s\""}},
			check: proof.CheckRender,
			want:  []string{"name collision", "mgmt-spoke-shared-irsa"},
		},
		{
			name: "names that do not derive from the claim, with only one claim in the tree",
			edits: []edit{
				{"workload-clusters/kustomization.yaml", "  - beta.yaml\n", ""},
				{"platform-apis/composition.yaml", "fmt: \"%s-kubeconfig\"", "fmt: \"spoke-kubeconfig%.0s\""},
			},
			check: proof.CheckRender,
			want:  []string{"name collision", "ConfigMap flux-system/spoke-kubeconfig", "second claim named xalpha"},
		},
		{
			name:  "IAM role without the permissions boundary",
			edits: []edit{{"platform-apis/composition.yaml", "                  permissionsBoundary: ${SPOKE_PERMISSIONS_BOUNDARY_ARN}\n", ""}},
			check: proof.CheckIRSA,
			want:  []string{"Role mgmt-spoke-alpha-irsa", "permissionsBoundary"},
		},
		{
			name:  "IAM role outside the spoke role prefix",
			edits: []edit{{"platform-apis/composition.yaml", "fmt: \"${SPOKE_ROLE_PREFIX}%s-irsa\"", "fmt: \"${HUB_CLUSTER_NAME}-%s-irsa\""}},
			check: proof.CheckIRSA,
			want:  []string{"Role mgmt-alpha-irsa", "SPOKE_ROLE_PREFIX"},
		},
		{
			name:  "IRSA trust policy with another audience",
			edits: []edit{{"platform-apis/composition.yaml", `"example:aud":"sts.amazonaws.com"`, `"example:aud":"sts.example.com"`}},
			check: proof.CheckIRSA,
			want:  []string{"audience", "sts.example.com"},
		},
		{
			name:  "kubeConfig ConfigMap without Flux's aws provider",
			edits: []edit{{"platform-apis/composition.yaml", "                provider: aws", "                provider: generic"}},
			check: proof.CheckRender,
			want:  []string{"ConfigMap flux-system/alpha-kubeconfig", "data.provider"},
		},
		{
			name:  "dependsOn cycle",
			edits: []edit{{"clusters/mgmt/chain.yaml", "  name: sources\n  namespace: flux-system\nspec:\n", "  name: sources\n  namespace: flux-system\nspec:\n  dependsOn:\n    - name: workload-clusters\n"}},
			check: proof.CheckGraph,
			want:  []string{"dependsOn cycle", "Kustomization flux-system/sources"},
		},
		{
			name:  "dangling dependsOn",
			edits: []edit{{"spoke-bootstrap/bootstrap.yaml", "    - name: sealed-secrets\n      namespace: sealed-secrets", "    - name: sealed-secret\n      namespace: sealed-secrets"}},
			check: proof.CheckGraph,
			want:  []string{"dependsOn HelmRelease sealed-secrets/sealed-secret", "not found"},
		},
		{
			name:  "dangling chart source",
			edits: []edit{{"infrastructure/sealing/sealing.yaml", "name: external-secrets\n        namespace: flux-system", "name: external-secret\n        namespace: flux-system"}},
			check: proof.CheckGraph,
			want:  []string{"HelmRepository flux-system/external-secret", "not found"},
		},
		{
			name:  "Usage naming a resource the claim does not compose",
			edits: []edit{{"platform-apis/composition.yaml", "fmt: \"%s-irsa-readonly\"\n          - name: kubeconfig", "fmt: \"%s-irsa-readonlyy\"\n          - name: kubeconfig"}},
			check: proof.CheckGraph,
			want:  []string{"ClusterUsage alpha-role-by-attachment", "alpha-irsa-readonlyy", "does not compose"},
		},
		{
			name: "Usage cycle",
			edits: []edit{{"platform-apis/composition.yaml", "          # Teardown order: the attachment goes before the role.\n", `          - name: usage-attachment-by-role
            base:
              apiVersion: protection.crossplane.io/v1beta1
              kind: ClusterUsage
              spec:
                of:
                  apiVersion: iam.aws.upbound.io/v1beta1
                  kind: RolePolicyAttachment
                  resourceRef:
                    name: placeholder
                by:
                  apiVersion: iam.aws.upbound.io/v1beta1
                  kind: Role
                  resourceRef:
                    name: placeholder
            patches:
              - type: FromCompositeFieldPath
                fromFieldPath: spec.claimRef.name
                toFieldPath: metadata.name
                transforms: [{type: string, string: {type: Format, fmt: "%s-attachment-by-role"}}]
              - type: FromCompositeFieldPath
                fromFieldPath: spec.claimRef.name
                toFieldPath: spec.of.resourceRef.name
                transforms: [{type: string, string: {type: Format, fmt: "%s-irsa-readonly"}}]
              - type: FromCompositeFieldPath
                fromFieldPath: spec.claimRef.name
                toFieldPath: spec.by.resourceRef.name
                transforms: [{type: string, string: {type: Format, fmt: "${SPOKE_ROLE_PREFIX}%s-irsa"}}]
`}},
			check: proof.CheckGraph,
			want:  []string{"Usage cycle blocks deletion"},
		},
		{
			name:  "deprecated Flux API version",
			edits: []edit{{"infrastructure/sources/sources.yaml", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: eks", "apiVersion: source.toolkit.fluxcd.io/v1beta2\nkind: HelmRepository\nmetadata:\n  name: eks"}},
			check: proof.CheckDeprecated,
			want:  []string{"source.toolkit.fluxcd.io/v1beta2"},
		},
		{
			name:  "removed ESO API version",
			edits: []edit{{"infrastructure/sealing/sealing.yaml", "apiVersion: external-secrets.io/v1\n", "apiVersion: external-secrets.io/v1beta1\n"}},
			check: proof.CheckDeprecated,
			want:  []string{"external-secrets.io/v1beta1"},
		},
		{
			name:  "deprecated API in a file no Kustomization applies",
			edits: []edit{{"platform-apis/old.yaml", "", "apiVersion: kustomize.toolkit.fluxcd.io/v1beta2\nkind: Kustomization\nmetadata:\n  name: old\n"}},
			check: proof.CheckDeprecated,
			want:  []string{"platform-apis/old.yaml:1", "kustomize.toolkit.fluxcd.io/v1beta2"},
		},
		{
			name:  "ControllerConfig",
			edits: []edit{{"infrastructure/packages/packages.yaml", "", "apiVersion: pkg.crossplane.io/v1alpha1\nkind: ControllerConfig\nmetadata:\n  name: irsa\n"}},
			check: proof.CheckDeprecated,
			want:  []string{"ControllerConfig"},
		},
		{
			name:  "IRSA subject not in internal/contract/serviceaccounts",
			edits: []edit{{"platform-apis/composition.yaml", "kube-system:aws-load-balancer-controller", "kube-system:aws-lb-controller"}},
			check: proof.CheckIRSA,
			want:  []string{"system:serviceaccount:kube-system:aws-lb-controller"},
		},
		{
			name: "IRSA service account the spoke's manifests do not create",
			edits: []edit{{"spoke-bootstrap/bootstrap.yaml", "    clusterName: ${HUB_CLUSTER_NAME}-${CLUSTER_NAME}",
				"    clusterName: ${HUB_CLUSTER_NAME}-${CLUSTER_NAME}\n    serviceAccount:\n      name: lbc"}},
			check: proof.CheckIRSA,
			want:  []string{"system:serviceaccount:kube-system:aws-load-balancer-controller", "no manifest creates"},
		},
		{
			name:  "sealing key Secret the controller ignores",
			edits: []edit{{"infrastructure/sealing/sealing.yaml", "sealedsecrets.bitnami.com/sealed-secrets-key: active", "sealedsecrets.bitnami.com/sealed-secrets-key: inactive"}},
			check: proof.CheckSealing,
			want:  []string{"sealed-secrets-key=active"},
		},
		{
			name:  "sealing controller renews its own keys",
			edits: []edit{{"infrastructure/sealing/sealing.yaml", "keyrenewperiod: \"0\"", "keyrenewperiod: \"720h\""}},
			check: proof.CheckSealing,
			want:  []string{"HelmRelease sealed-secrets/sealed-secrets", "keyrenewperiod"},
		},
		{
			name:  "a spoke's sealing key from the hub's wrong value",
			edits: []edit{{"spoke-bootstrap/bootstrap.yaml", "tls.key: ${SPOKE_SEALING_ACTIVE_KEY}", "tls.key: ${SPOKE_SEALING_ACTIVE_CRT}"}},
			check: proof.CheckSealing,
			want:  []string{"alpha-kubeconfig", "tls.key"},
		},
		{
			name:  "a spoke's sealing key under a name the hub does not hand over",
			edits: []edit{{"infrastructure/sealing/sealing.yaml", "SPOKE_SEALING_ACTIVE_SECRET: hub-${SEALING_ACTIVE_KEY_SECRET}", "SPOKE_SEALING_ACTIVE_SECRET: ${SEALING_ACTIVE_KEY_SECRET}"}},
			check: proof.CheckSealing,
			want:  []string{"alpha-kubeconfig", "no sealing key Secret sealed-secrets/hub-"},
		},
		{
			name:  "sealing key read from the wrong property",
			edits: []edit{{"infrastructure/sealing/sealing.yaml", "property: tls.key", "property: previous.tls.crt"}},
			check: proof.CheckSealing,
			want:  []string{"tls.key"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := runProof(t, mutate(t, tc.edits...))
			for _, f := range rep.Findings {
				if f.Check != tc.check {
					continue
				}
				s := f.String()
				all := true
				for _, w := range tc.want {
					if !strings.Contains(s, w) {
						all = false
					}
				}
				if all {
					t.Logf("caught: %s", s)
					return
				}
			}
			t.Errorf("planted error not reported as [%s] %q; findings:", tc.check, tc.want)
			for _, f := range rep.Findings {
				t.Log("  " + f.String())
			}
		})
	}
}

// TestSealingWrongKey: a Secret sealed with one key's certificate does not
// unseal when the ExternalSecret delivers another key; the right key does.
func TestSealingWrongKey(t *testing.T) {
	a, err := proof.NewSealingKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	b, err := proof.NewSealingKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	info := clusterinfo.Example()
	es := sealingExternalSecret(t, info)
	for _, tc := range []struct {
		name     string
		cert     string
		active   sealingkey.KeyPair
		previous *sealingkey.KeyPair
		ok       bool
	}{
		{"same key", a.CertPEM, a, nil, true},
		{"wrong key", a.CertPEM, b, nil, false},
		{"rotation dropped the key it was sealed with", a.CertPEM, b, &b, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := sealingkey.Document(tc.active, tc.previous)
			if err != nil {
				t.Fatal(err)
			}
			err = proof.ProveSealing(tc.cert, doc, es, info)
			if tc.ok && err != nil {
				t.Fatalf("round trip failed: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("a Secret sealed for another key unsealed")
			}
			if err != nil {
				t.Logf("error (as expected=%v): %v", !tc.ok, err)
			}
		})
	}
}

// sealingExternalSecret is the fixture's sealing-key ExternalSecret as the
// hub's Flux builds it.
func sealingExternalSecret(t *testing.T, info clusterinfo.Values[string]) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	if err := kbuild.CopySource(fixture, dir); err != nil {
		t.Fatal(err)
	}
	ks := xrender.RootKustomization(info)
	ks.Name = "sealing"
	ks.Spec.Path = "./" + info.SystemPath + "/infrastructure/sealing"
	objs, err := kbuild.Build(context.Background(), dir, ks, kbuild.NewVarClient(xrender.ClusterInfoConfigMap(info)))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ExternalSecret" && o.GetNamespace() == sealingkey.Namespace {
			out = append(out, o)
		}
	}
	if len(out) != 1 {
		t.Fatalf("fixture: %d ExternalSecrets in infrastructure/sealing for %s, want 1", len(out), sealingkey.Namespace)
	}
	return out
}
