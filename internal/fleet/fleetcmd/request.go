package fleetcmd

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// warmProof lets a Prover that can (proof.Warm) start its shared set-up
// while the command prepares its change.
func (a *app) warmProof(ctx context.Context) {
	if w, ok := a.deps.Prover.(interface{ Warm(context.Context) }); ok {
		w.Warm(ctx)
	}
}

// checkStaged runs the offline proof on the tree with the change applied,
// and fails on findings about the cluster's files or objects. claims are
// the tree's claims before the change.
func (a *app) checkStaged(ctx context.Context, t *fleettree.Tree, claims []fleettree.ClaimFile, ch *treeedit.Change, name string) error {
	// Policy listing checks on the changed tree always run; the proof only
	// when available. Both read the tree with the change pending: nothing
	// is staged on disk, and the proof copies only what it reaches.
	st := t.With(ch)
	pol, err := a.loadPolicy(st)
	if err != nil {
		return err
	}
	vinfo, err := a.info()
	if err != nil {
		return err
	}
	var problems []fleetvalidate.Finding
	// Each cluster's own deploy key is checked for the clusters whose
	// findings relevant keeps (the others are unchanged and dropped).
	keyClusters := []string{name}
	for _, c := range claims {
		if n := c.Claim.Metadata.Name; strings.HasPrefix(n, name+"-") {
			keyClusters = append(keyClusters, n)
		}
	}
	pf, _, err := fleetvalidate.PolicyFindingsFor(st, pol, policy.HubOf(vinfo), keyClusters)
	if err != nil {
		return err
	}
	problems = append(problems, relevant(pf, ch, name)...)
	if a.deps.Prover != nil {
		// Only the change's own cluster renders (its claim and spoke
		// directories in full); the hub tree builds and validates with
		// the claims in scope only (the other clusters' claim files and
		// workloads folders are left out: requestPrune), and the
		// fleet-wide invariants are the policy findings above over every
		// claim, so the cost does not grow with the fleet's spokes.
		scope := []string{name}
		rep, err := a.deps.Prover.Prove(ctx, fleetvalidate.ProofRequest{Tree: t.Root, Info: vinfo, Scoped: true, Claims: scope, Quick: true,
			Change: ch, Prune: requestPrune(t, claims, ch, scope)})
		if err != nil {
			return fmt.Errorf("offline proof of the changed tree: %w", err)
		}
		found := relevant(rep.Findings, ch, name)
		if len(found) > 0 {
			// Tell apart what this change causes from what the system
			// tree already gets wrong for every spoke: prove the tree as
			// it is and compare, with spoke names abstracted.
			var names []string
			for _, c := range claims {
				names = append(names, c.Claim.Metadata.Name)
			}
			// One existing spoke stands for all of them.
			scope := names[:min(1, len(names))]
			base, err := a.deps.Prover.Prove(ctx, fleetvalidate.ProofRequest{Tree: t.Root, Info: vinfo, Scoped: true, Claims: scope, Quick: true,
				Prune: requestPrune(t, claims, nil, scope)})
			if err != nil {
				return fmt.Errorf("offline proof of the tree: %w", err)
			}
			known := map[string]bool{}
			for _, f := range base.Findings {
				known[findingKey(f, names)] = true
			}
			var shared []fleetvalidate.Finding
			for _, f := range found {
				if known[findingKey(f, []string{name})] {
					shared = append(shared, f)
				} else {
					problems = append(problems, f)
				}
			}
			if len(shared) > 0 {
				fmt.Fprintf(a.stderr, "warning: %d problem(s) of the system tree that every spoke has, not caused by this change (fleet validate fails until the platform team fixes them):\n", len(shared))
				for _, p := range shared {
					fmt.Fprintf(a.stderr, "  - %s: [%s] %s %s\n", p.File, p.Check, p.Object, p.Message)
				}
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the change fails %d check(s), nothing written:", len(problems))
	for _, p := range problems {
		fmt.Fprintf(&b, "\n  - %s: [%s] %s %s", p.File, p.Check, p.Object, p.Message)
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("%s", b.String())}
}

// requestPrune lists what the proof of a request for the clusters in scope
// does not reach: the claim files of the tree (claims, before the change)
// that hold no claim in scope, and the workloads folders of the other
// clusters, unless the change touches them. Each of those clusters is
// unchanged; what relates it to the ones in scope (names, CIDRs, listing,
// folders) is the policy findings over every claim.
func requestPrune(t *fleettree.Tree, claims []fleettree.ClaimFile, ch *treeedit.Change, scope []string) []string {
	touched := func(rel string) bool {
		if ch == nil {
			return false
		}
		for _, p := range ch.Paths() {
			if p == rel || strings.HasPrefix(p, rel+"/") || strings.HasPrefix(rel, p+"/") {
				return true
			}
		}
		return false
	}
	inScope := map[string]bool{}
	for _, c := range claims {
		if slices.Contains(scope, c.Claim.Metadata.Name) {
			inScope[c.Rel] = true
		}
	}
	out := []string{} // never nil: a request's proof is always scoped
	for _, c := range claims {
		if !inScope[c.Rel] && !touched(c.Rel) && !slices.Contains(out, c.Rel) {
			inScope[c.Rel] = true // listed once
			out = append(out, c.Rel)
		}
	}
	entries, _ := os.ReadDir(t.Path(fleettree.WorkloadsDir))
	for _, e := range entries {
		rel := fleettree.WorkloadsRel(e.Name())
		if e.IsDir() && !slices.Contains(scope, e.Name()) && !touched(rel) {
			out = append(out, rel)
		}
	}
	return out
}

// findingKey identifies a finding with the given spoke names replaced, so
// the same problem on two spokes has the same key.
func findingKey(f fleetvalidate.Finding, names []string) string {
	sorted := slices.Clone(names)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	k := f.Check + "|" + f.File + "|" + f.Object
	for _, n := range sorted {
		k = strings.ReplaceAll(k, n, "<spoke>")
	}
	return k
}

// relevant keeps findings about the files a change touches or the cluster,
// and about the build of a directory holding a file it touches (the
// claims Kustomization fails as a whole when one claim's post-build
// substitution fails, and the finding names the directory).
func relevant(fs []fleetvalidate.Finding, ch *treeedit.Change, name string) []fleetvalidate.Finding {
	paths := ch.Paths()
	var out []fleetvalidate.Finding
	for _, f := range fs {
		hit := f.Object == name || strings.HasPrefix(f.Object, name+"-") || strings.Contains(f.Object, "/"+name)
		for _, p := range paths {
			if f.File == p || strings.HasPrefix(f.File, p+"/") || (f.File != "" && strings.HasPrefix(p, f.File+"/")) {
				hit = true
			}
		}
		if hit {
			out = append(out, f)
		}
	}
	return out
}
