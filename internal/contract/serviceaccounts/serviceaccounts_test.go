package serviceaccounts

import (
	"slices"
	"testing"
)

func TestSubjectAndMatches(t *testing.T) {
	cases := []struct {
		sa       ServiceAccount
		subject  string
		matches  [][2]string
		excludes [][2]string
	}{
		{
			HubKustomizeController, "system:serviceaccount:flux-system:kustomize-controller",
			[][2]string{{"flux-system", "kustomize-controller"}},
			[][2]string{{"flux-system", "kustomize-controller-2"}, {"default", "kustomize-controller"}, {"flux-system", "helm-controller"}},
		},
		{
			HubHelmController, "system:serviceaccount:flux-system:helm-controller",
			[][2]string{{"flux-system", "helm-controller"}},
			[][2]string{{"flux-system", "kustomize-controller"}, {"default", "helm-controller"}},
		},
		{
			HubCrossplaneAWS, "system:serviceaccount:crossplane-system:provider-aws-*",
			[][2]string{{"crossplane-system", "provider-aws-ec2-1a2b3c"}, {"crossplane-system", "provider-aws-"}},
			[][2]string{{"crossplane-system", "provider-aws"}, {"crossplane-system", "crossplane"}, {"default", "provider-aws-ec2-1a2b3c"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.sa.Subject(), func(t *testing.T) {
			if got := tc.sa.Subject(); got != tc.subject {
				t.Errorf("Subject() = %q, want %q", got, tc.subject)
			}
			for _, m := range tc.matches {
				if !tc.sa.Matches(m[0], m[1]) {
					t.Errorf("does not match %s/%s", m[0], m[1])
				}
			}
			for _, m := range tc.excludes {
				if tc.sa.Matches(m[0], m[1]) {
					t.Errorf("matches %s/%s", m[0], m[1])
				}
			}
		})
	}
}

// Both hub controllers that apply onto spokes share the Flux role; the
// list is a fresh copy, so a caller cannot change what others see.
func TestHubFluxControllers(t *testing.T) {
	got := HubFluxControllers()
	if !slices.Equal(got, []ServiceAccount{HubKustomizeController, HubHelmController}) {
		t.Fatalf("HubFluxControllers() = %v", got)
	}
	got[0] = ServiceAccount{Namespace: "x", Name: "y"}
	if HubFluxControllers()[0] != HubKustomizeController {
		t.Error("HubFluxControllers shares its backing array")
	}
}
