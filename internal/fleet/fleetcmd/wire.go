package fleetcmd

import (
	"context"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
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

type quickKey struct{}

// WithQuickProof marks a proof run that checks a change rather than the
// system: the sealing round trip (independent of the change, and an
// RSA-4096 key generation) is left out.
func WithQuickProof(ctx context.Context) context.Context {
	return context.WithValue(ctx, quickKey{}, true)
}

type requestKey struct{}

// request is a proof of a request's change: the tree as it is (root),
// the change, and what the request's scope does not reach (prune, see
// proof.Options.Prune).
type request struct {
	root   string
	change *treeedit.Change // nil: the tree as it is
	prune  []string
}

// withRequest makes the Prover prove req.root (the tree it is given) with
// req.change applied (proof.Options.Overlay: the tree is not modified), and
// leave out req.prune.
func withRequest(ctx context.Context, req request) context.Context {
	return context.WithValue(ctx, requestKey{}, req)
}

type proofProver struct{}

// Warm starts the proof's shared set-up (see warmProof).
func (proofProver) Warm(ctx context.Context) { proof.Warm(ctx) }

func (proofProver) Prove(ctx context.Context, tree string, info clusterinfo.Values[string]) (*fleetvalidate.ProofReport, error) {
	quick, _ := ctx.Value(quickKey{}).(bool)
	opts := proof.Options{Tree: tree, ClusterInfo: info, SkipSealing: quick}
	if names, ok := fleetvalidate.ClaimsScope(ctx); ok {
		opts.Claims = names
	}
	if req, ok := ctx.Value(requestKey{}).(request); ok {
		opts.Tree = req.root
		opts.Overlay = map[string][]byte{}
		opts.Removed = []string{}
		if req.change != nil {
			opts.Overlay = req.change.Writes()
			opts.Removed = req.change.Removals()
		}
		opts.Prune = req.prune
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

func (xrenderRenderer) RenderClaim(ctx context.Context, tree, claimPath string, info clusterinfo.Values[string]) ([]*unstructured.Unstructured, error) {
	if req, ok := ctx.Value(requestKey{}).(request); ok {
		return xrender.Renderer{}.RenderClaimPruned(ctx, tree, claimPath, info, req.prune)
	}
	return xrender.RenderClaim(ctx, tree, claimPath, info)
}

type stackValidator struct{}

// ValidateStackFile runs stacks.ParseFile, which parses the stack file and
// validates every setting (stacks.Validate), and joins the problems.
func (stackValidator) ValidateStackFile(path string) error {
	_, errs := stacks.ParseFile(path)
	name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "Pulumi."), ".yaml")
	return stacks.Join(name, errs)
}
