package fleetcmd

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
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

// proofPreparer is a Prover whose first proof builds programs (the render
// server and the functions, on a cold cache): Prepare builds them ahead,
// showing their progress, so that a first check does not sit silent for
// minutes.
type proofPreparer interface {
	Prepare(ctx context.Context, logf func(format string, args ...any)) error
}

// Prepare builds the programs the proof runs that are not cached yet.
func (proofProver) Prepare(ctx context.Context, logf func(format string, args ...any)) error {
	todo, err := binaries.Uncached(xrender.Programs()...)
	if err != nil || len(todo) == 0 {
		return err
	}
	logf("building the %d programs the check runs, once, at their pinned releases (minutes on a cold cache)", len(todo))
	return binaries.BuildShowingProgress(ctx, 30*time.Second, logf, todo...)
}

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
