package proof

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestKeptComposed(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		kept             bool
	}{
		{"ec2.aws.upbound.io/v1beta1", "VPC", false},
		{"ec2.aws.m.upbound.io/v1beta1", "Subnet", false},
		{"eks.aws.upbound.io/v1beta1", "Cluster", false},
		{"iam.aws.upbound.io/v1beta1", "RolePolicyAttachment", false},
		{"protection.crossplane.io/v1beta1", "Usage", false},
		{"protection.crossplane.io/v1beta1", "ClusterUsage", false},
		{"apiextensions.crossplane.io/v1beta1", "Usage", false},
		{"iam.aws.upbound.io/v1beta1", "Role", true},
		{"iam.aws.m.upbound.io/v1beta1", "Role", true},
		{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", true},
		{"helm.toolkit.fluxcd.io/v2", "HelmRelease", true},
		{"v1", "ConfigMap", true},
		{"v1", "Secret", true},
		{"platform.eksfleet.io/v1alpha1", "XWorkloadCluster", true},
	} {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tc.apiVersion, "kind": tc.kind}}
		got := keptComposed([]*unstructured.Unstructured{o})
		if kept := len(got) == 1 && got[0] == o; kept != tc.kept {
			t.Errorf("%s %s: kept = %v, want %v", tc.apiVersion, tc.kind, kept, tc.kept)
		}
	}
}
