package appproof

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/appinfra"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
	"github.com/gitops-fleet/eks-fleet/internal/proof/apivalidate"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

const spoke = "apps-staging"

// spokeVars are the variables an example spoke's Flux substitutes.
func spokeVars(info clusterinfo.Values[string]) map[string]string {
	issuer := "oidc.eks." + info.Region + ".amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"
	return map[string]string{
		spokeinfo.AccountID: info.AccountID, spokeinfo.Partition: info.Partition, spokeinfo.Region: info.Region,
		spokeinfo.EKSClusterName:  info.HubName + "-" + spoke,
		spokeinfo.SpokeName:       spoke,
		spokeinfo.AppRolePrefix:   appinfra.AppRolePrefix(info.SpokeRolePrefix, spoke),
		spokeinfo.BoundaryARN:     info.SpokeBoundaryARN,
		spokeinfo.OIDCIssuer:      issuer,
		spokeinfo.OIDCProviderARN: "arn:" + info.Partition + ":iam::" + info.AccountID + ":oidc-provider/" + issuer,
	}
}

// build builds path of the checkout at root the way the spoke's Flux
// does: substituted from the spoke's cluster-info, into targetNamespace.
func build(t *testing.T, root, path, targetNamespace string, vars map[string]string) []*unstructured.Unstructured {
	t.Helper()
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: "under-test", Namespace: "flux-system"},
		Spec: kustomizev1.KustomizationSpec{
			Path: path, TargetNamespace: targetNamespace, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system"},
			// as spoke-tools/app-infra.yaml: quote, then spoke-info
			PostBuild: &kustomizev1.PostBuild{Substitute: map[string]string{spokeinfo.Quote: spokeinfo.QuoteValue},
				SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "ConfigMap", Name: spokeinfo.Name}}},
		},
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: spokeinfo.Name, Namespace: "flux-system"}, Data: vars}
	objs, err := kbuild.Build(context.Background(), root, ks, kbuild.NewVarClient(cm))
	if err != nil {
		t.Fatalf("build %s: %v", path, err)
	}
	return objs
}

// spokeObjects is what the example spoke holds for one overlay: the
// app-infra API with its Functions, and the app as the team's Kustomization
// applies it.
func spokeObjects(t *testing.T, root, overlay string, info clusterinfo.Values[string]) []kbuild.Built {
	t.Helper()
	vars := spokeVars(info)
	var built []kbuild.Built
	add := func(objs []*unstructured.Unstructured) {
		for _, o := range objs {
			built = append(built, kbuild.Built{Object: o, Cluster: spoke})
		}
	}
	add(build(t, root, "./manifests/"+appinfra.Dir, "", vars))
	add(build(t, root, "./manifests/apps/payment-app/overlays/"+overlay, "payments", vars))
	return built
}

var sharedValidator *apivalidate.Validator

func validator(t *testing.T) *apivalidate.Validator {
	t.Helper()
	if sharedValidator == nil {
		v, err := apivalidate.New(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sharedValidator = v
	}
	return sharedValidator
}

// check runs CheckBuilt with the claims and composed resources validated
// against the XRD in the built objects and the provider CRDs.
func check(t *testing.T, built []kbuild.Built, info clusterinfo.Values[string]) Report {
	t.Helper()
	v := validator(t)
	var objs []*unstructured.Unstructured
	for _, b := range built {
		objs = append(objs, b.Object)
	}
	if err := v.AddDefinitions(objs, "app-infra under test"); err != nil {
		t.Fatal(err)
	}
	validate := func(ctx context.Context, u *unstructured.Unstructured) error {
		return v.Validate(ctx, u).ToAggregate()
	}
	r := CheckBuilt(context.Background(), built, map[string]map[string]string{spoke: spokeVars(info)}, info, validate)
	for _, b := range built {
		if b.Object.GetKind() == appinfra.ClaimKind {
			if err := validate(context.Background(), b.Object); err != nil {
				r.Errors = append(r.Errors, err)
			}
		}
	}
	return r
}

func TestPaymentAppOverlays(t *testing.T) {
	t.Cleanup(xrender.Shutdown)
	info := clusterinfo.Example()
	root := filepath.Dir(plant.Repo(t))
	for _, overlay := range []string{"staging", "production"} {
		t.Run(overlay, func(t *testing.T) {
			r := check(t, spokeObjects(t, root, overlay, info), info)
			if len(r.Claims) != 1 {
				t.Fatalf("claims rendered: %v, want the overlay's one claim", r.Claims)
			}
			for _, err := range r.Errors {
				t.Error(err)
			}
		})
	}
}

// TestPlantedErrors shows each rule of the app path catches its error.
func TestPlantedErrors(t *testing.T) {
	t.Cleanup(xrender.Shutdown)
	info := clusterinfo.Example()
	const comp = "gitops-system/spoke-tools/app-infra/composition.yaml"
	tests := []struct {
		name, file, old, new, overlay, wantErr string
	}{
		{name: "role policy beyond the app's own table", file: comp, overlay: "staging",
			old: `"Resource":["%s"]},{"Sid":"Queue"`, new: `"Resource":["%s","arn:aws:dynamodb:*:*:table/*"]},{"Sid":"Queue"`,
			wantErr: "is not one of the app's own resources"},
		{name: "role policy with a wildcard action", file: comp, overlay: "staging",
			old: `"dynamodb:BatchGetItem",`, new: `"dynamodb:*",`, wantErr: `Action "dynamodb:*"`},
		{name: "role without permissions boundary", file: comp, overlay: "production",
			old: "permissionsBoundary: ${SPOKE_PERMISSIONS_BOUNDARY_ARN}", new: "permissionsBoundary: arn:aws:iam::111122223333:policy/other",
			wantErr: "permissions boundary"},
		{name: "trust of any account in the namespace", file: comp, overlay: "staging",
			old: `"${SPOKE_OIDC_ISSUER}:sub":"system:serviceaccount:%s:%s"`, new: `"${SPOKE_OIDC_ISSUER}:sub":"system:serviceaccount:%s:%s*"`,
			wantErr: "trust policy"},
		{name: "protected table deleted with its claim", file: comp, overlay: "production",
			old: `"true/true": Orphan`, new: `"true/true": Delete`,
			wantErr: `table deletionPolicy (deletion protection true) = "Delete", want "Orphan"`},
		{name: "unprotected table left behind", file: comp, overlay: "staging",
			old: `"false/false": Delete`, new: `"false/false": Orphan`,
			wantErr: `table deletionPolicy (deletion protection false) = "Orphan", want "Delete"`},
		{name: "service account annotated with another role", file: "apps/payment-app/base/serviceaccount.yaml", overlay: "staging",
			old: "${SPOKE_APP_ROLE_PREFIX}payments_payment-app", new: "${SPOKE_APP_ROLE_PREFIX}other", wantErr: "the claim's role is"},
		{name: "provisioned table without capacity", file: "apps/payment-app/overlays/production/appinfrastructure.yaml", overlay: "production",
			old: "    readCapacity: 20\n", new: "", wantErr: "readCapacity and writeCapacity are required"},
		{name: "claim name too long for the role name", file: "apps/payment-app/overlays/staging/appinfrastructure.yaml", overlay: "staging",
			old: "name: payment-app", new: "name: payment-app-staging-with-a-long-name", wantErr: "at most 39 allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Dir(plant.Repo(t, plant.Edit{File: tt.file, Old: tt.old, New: tt.new}))
			r := check(t, spokeObjects(t, root, tt.overlay, info), info)
			var msgs []string
			for _, err := range r.Errors {
				msgs = append(msgs, err.Error())
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tt.wantErr) {
				t.Fatalf("want an error containing %q, got %q", tt.wantErr, msgs)
			}
		})
	}
}
