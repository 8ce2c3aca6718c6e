package main

import (
	"context"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
)

// Each refusal happens before anything is built or pushed.
func TestRunRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ out, push, version, want string }{
		"nothing to do":    {"", "", versions.WorkloadClusterFunction, "-out DIR"},
		"tag differs":      {"x", "", "v9.9.9", "WorkloadClusterFunction"},
		"bad registry":     {"", "ghcr.io/Org With Space", versions.WorkloadClusterFunction, "-push"},
		"registry has tag": {"", "ghcr.io/org/repo:v1", versions.WorkloadClusterFunction, "-push"},
	} {
		t.Run(name, func(t *testing.T) {
			err := run(context.Background(), tc.out, tc.push, tc.version)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}
