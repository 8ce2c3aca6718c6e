package site

import (
	"context"
	"slices"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// TestToolsCoverPodImages: every upstream program a hub pod runs is in
// Tools, so BuildTools builds it with the others (a missing one would be
// built alone later, and the suite's cold start would wait for it).
func TestToolsCoverPodImages(t *testing.T) {
	images, err := PodImages(context.Background(), "../../..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]bool{}
	for _, tool := range Tools() {
		in[tool.Name] = true
	}
	for ref, img := range images {
		if img.Path == "" && !in[img.Tool.Name] {
			t.Errorf("image %s runs %s, which Tools does not list", ref, img.Tool.Name)
		}
	}
}

// TestToolsAreAll: Tools keeps every cluster, Flux, pod and engine program (each
// is in binaries.All, which orders them).
func TestToolsAreAll(t *testing.T) {
	got := map[string]bool{}
	for _, tool := range Tools() {
		got[tool.Name] = true
	}
	for _, tool := range slices.Concat(kube.Tools, podTools, fluxTools, engineTools) {
		if !got[tool.Name] {
			t.Errorf("Tools() leaves out %s: is it in binaries.All?", tool.Name)
		}
	}
	if n := len(kube.Tools) + len(podTools) + len(fluxTools) + len(engineTools); len(got) != n {
		t.Errorf("Tools() has %d programs, want %d", len(got), n)
	}
}
