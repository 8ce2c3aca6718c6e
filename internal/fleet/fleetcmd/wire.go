package fleetcmd

import (
	"context"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/proof/xrender"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// wireEngines connects the proof engine (internal/proof), the renderer
// (internal/proof/xrender) and the stack validator (package stacks).
func wireEngines(d *Deps) {
	d.Prover = proofProver{}
	d.Renderer = xrenderRenderer{}
	d.Stacks = stackValidator{}
	d.Cleanup = xrender.Shutdown
}

type proofProver struct{}

// Warm starts the proof's shared set-up (see warmProof).
func (proofProver) Warm(ctx context.Context) { proof.Warm(ctx) }

func (proofProver) Prove(ctx context.Context, req fleetvalidate.ProofRequest) (*fleetvalidate.ProofReport, error) {
	opts := proof.Options{Tree: req.Tree, ClusterInfo: req.Info, SkipSealing: req.Quick, Prune: req.Prune}
	if req.Scoped {
		opts.Claims = append([]string{}, req.Claims...)
	}
	if req.Change != nil {
		opts.Overlay = req.Change.Writes()
		opts.Removed = req.Change.Removals()
	}
	rep, err := proof.Run(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &fleetvalidate.ProofReport{Objects: rep.Objects, Claims: rep.Claims}
	for _, f := range rep.Findings {
		out.Findings = append(out.Findings, fleetvalidate.Finding{Source: "proof", Check: f.Check, File: f.File, Object: f.Object, Message: f.Message})
	}
	return out, nil
}

type xrenderRenderer struct{}

func (xrenderRenderer) RenderClaim(ctx context.Context, req RenderRequest) ([]*unstructured.Unstructured, error) {
	if req.Prune != nil {
		return xrender.Renderer{}.RenderClaimPruned(ctx, req.Tree, req.ClaimPath, req.Info, req.Prune)
	}
	return xrender.RenderClaim(ctx, req.Tree, req.ClaimPath, req.Info)
}

type stackValidator struct{}

// ValidateStackFile runs stacks.ValidateFile, which parses the stack file
// and validates every setting as the stack's kind (a hub's or a spoke
// account's), and joins the problems.
func (stackValidator) ValidateStackFile(path string) error {
	errs := stacks.ValidateFile(path)
	name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "Pulumi."), ".yaml")
	return stacks.Join(name, errs)
}
