package site

import (
	"slices"
	"testing"
)

// TestProviderServices reads the tree's Provider objects, with the family
// package: the whole tree's, and the hub's alone (dynamodb and sqs only
// the spokes install).
func TestProviderServices(t *testing.T) {
	for name, tc := range map[string]struct {
		dir  string
		want []string
	}{
		"the whole tree": {"../../../manifests", []string{"cloudwatchlogs", "config", "dynamodb", "ec2", "eks", "iam", "sqs"}},
		"the hub":        {"../../../manifests/gitops-system/infrastructure", []string{"cloudwatchlogs", "config", "ec2", "eks", "iam"}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ProviderServices(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ProviderServices(%s) = %v, want %v", tc.dir, got, tc.want)
			}
		})
	}
}
