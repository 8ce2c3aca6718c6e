// Package fleetvalidate is what `fleet validate` checks on a tree: the
// offline proof of the system tree (through the Prover interface, served by
// internal/proof) plus the fleet policy, and from both and the list of
// changed files, whether a pull request may be merged without review.
package fleetvalidate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/accounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// Finding is one failed check, from the proof or the policy.
type Finding struct {
	Source  string `json:"source"` // "proof" or "policy"
	Check   string `json:"check"`
	File    string `json:"file,omitempty"` // relative to the tree
	Object  string `json:"object,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ProofReport is what the proof engine returns.
type ProofReport struct {
	Findings []Finding
	Objects  int
	Claims   int
}

// Prover runs the offline proof of a tree (internal/proof.Run).
type Prover interface {
	Prove(ctx context.Context, req ProofRequest) (*ProofReport, error)
}

// ProofRequest is one proof a Prover runs.
type ProofRequest struct {
	// Tree is the manifests tree to prove, Info the hub's cluster-info it
	// is built with.
	Tree string
	Info clusterinfo.Values[string]
	// Scoped limits rendering to the claims named in Claims (a change's
	// own clusters; none when empty) while the whole hub tree is still
	// built and validated. Fleet-wide invariants (unique names, CIDRs,
	// policy) are PolicyFindings over every claim and do not depend on it.
	Scoped bool
	Claims []string
	// Quick marks a proof that checks a change rather than the system:
	// the sealing round trip (independent of the change, and an RSA-4096
	// key generation) is left out.
	Quick bool
	// Change, when set, is proven applied to Tree without writing it.
	Change *treeedit.Change
	// Prune lists what the request's scope does not reach (the other
	// clusters' claims and workloads; proof.Options.Prune).
	Prune []string
}

// Options configure a run.
type Options struct {
	Tree   string
	Info   clusterinfo.Values[string]
	Prover Prover // nil: the proof is not run and the result says so
	// Changed lists the files a pull request changes, relative to the
	// tree; nil: unknown, so no auto-approval verdict is possible.
	Changed []string
	// Base returns a file (relative to the tree) as it is on the pull
	// request's base, nil when it does not exist there. With it, changes
	// to existing claims are checked against the API's update rules.
	Base func(rel string) ([]byte, error)
	// Full proves every claim even when Changed allows a scoped proof
	// (see ChangeScope).
	Full bool
	// Author is the pull request author's Git host login: a change of a
	// claim is auto-approved only when the author is a member of the team
	// owning the cluster (ownerReasons).
	Author string
}

// AutoApprove is the verdict for a pull request.
type AutoApprove struct {
	Eligible bool     `json:"eligible"`
	Reasons  []string `json:"reasons"` // why not (or what was approved)
	Clusters []string `json:"clusters,omitempty"`
	// Notices say what the request's edits of existing claims do beyond
	// the field: what cannot be undone, what replaces nodes, what costs
	// more (EditNotices). They are shown whether or not it is eligible.
	Notices []string `json:"notices,omitempty"`
}

// Result of a run.
type Result struct {
	Tree     string    `json:"tree"`
	Findings []Finding `json:"findings"`
	Claims   int       `json:"claims"`
	Objects  int       `json:"objects"`
	ProofRan bool      `json:"proofRan"`
	// Scoped: the proof rendered only the claims in Scope (pull-request
	// mode, see ChangeScope); the hub tree and the fleet-wide checks ran
	// in full.
	Scoped      bool        `json:"scoped,omitempty"`
	Scope       []string    `json:"scope,omitempty"`
	AutoApprove AutoApprove `json:"autoApprove"`
}

// OK reports whether every check passed.
func (r *Result) OK() bool { return len(r.Findings) == 0 }

// Policy checks run by Run and by `fleet cluster add` on its own change.
func PolicyFindings(tree *fleettree.Tree, pol *policy.Policy, hub policy.Hub) ([]Finding, []fleettree.ClaimFile, error) {
	return policyFindings(tree, pol, hub, nil)
}

// PolicyFindingsFor is PolicyFindings for a request about the clusters
// named: the check of each cluster's own deploy key runs for those only
// (the others are unchanged, and their findings are not the request's);
// everything that relates clusters to each other (names, CIDRs, the
// policy, the listing, workloads folders) is checked over every claim.
func PolicyFindingsFor(tree *fleettree.Tree, pol *policy.Policy, hub policy.Hub, names []string) ([]Finding, []fleettree.ClaimFile, error) {
	if names == nil {
		names = []string{}
	}
	return policyFindings(tree, pol, hub, names)
}

// policyFindings checks deploy keys of the clusters named, or of all
// when names is nil.
func policyFindings(tree *fleettree.Tree, pol *policy.Policy, hub policy.Hub, names []string) ([]Finding, []fleettree.ClaimFile, error) {
	claims, bad, err := tree.ClaimsLenient()
	if err != nil {
		return nil, nil, err
	}
	claims, bad, cvs := withClaimControls(tree, claims, bad)
	sort.SliceStable(claims, func(i, j int) bool { return claims[i].Rel < claims[j].Rel })
	var out []Finding
	for _, v := range cvs {
		out = append(out, fromViolation(v))
	}
	for _, b := range bad {
		out = append(out, Finding{Source: "policy", Check: "api/parse", File: b.Rel, Message: b.Err.Error()})
	}
	members := make([]policy.Member, 0, len(claims))
	for _, c := range claims {
		for _, v := range pol.CheckClaim(c.Claim) {
			v.File = c.Rel
			out = append(out, fromViolation(v))
		}
		// fleet writes claims as <name>.yaml; a mismatch hides a cluster
		// from `fleet cluster upgrade/remove`.
		if want := fleettree.ClaimRel(c.Claim.Metadata.Name); c.Rel != want {
			out = append(out, Finding{Source: "policy", Check: "policy/file-name", File: c.Rel, Object: c.Claim.Metadata.Name,
				Message: fmt.Sprintf("claim %q belongs in %s", c.Claim.Metadata.Name, want)})
		}
		members = append(members, policy.MemberOf(c.Claim, c.Rel))
	}
	for _, v := range pol.CheckFleet(members, hub) {
		out = append(out, fromViolation(v))
	}
	out = append(out, listingFindings(tree, claims, names)...)
	for _, f := range accounts.Findings(tree, pol) {
		out = append(out, Finding{Source: "policy", Check: "policy/account-provider-config", File: f.File, Message: f.Message})
	}
	return out, claims, nil
}

// listingFindings checks that the claims kustomization lists exactly the
// claim files, and that every cluster has a workloads folder and no folder
// is orphaned; deploy keys are checked for the clusters named (nil: all).
func listingFindings(tree *fleettree.Tree, claims []fleettree.ClaimFile, keyClusters []string) []Finding {
	var out []Finding
	kpath := fleettree.ClaimsDir + "/" + fleettree.Kustomization
	b, err := tree.ReadFile(kpath)
	if err != nil {
		return []Finding{{Source: "policy", Check: "policy/listing", File: kpath, Message: fmt.Sprintf("cannot read: %v", err)}}
	}
	res, err := kustfile.Resources(b)
	if err != nil {
		return []Finding{{Source: "policy", Check: "policy/listing", File: kpath, Message: err.Error()}}
	}
	listed := map[string]bool{}
	for _, r := range res {
		listed[path.Clean(r)] = true
	}
	names := map[string]bool{}
	for _, c := range claims {
		names[c.Claim.Metadata.Name] = true
		base := path.Base(c.Rel)
		if !listed[base] {
			out = append(out, Finding{Source: "policy", Check: "policy/listing", File: kpath, Object: c.Claim.Metadata.Name,
				Message: fmt.Sprintf("claim file %s is not listed in resources, so Flux never applies it", base)})
		}
		wl := fleettree.WorkloadsRel(c.Claim.Metadata.Name)
		if st, err := tree.Stat(wl); err != nil || !st.IsDir() {
			out = append(out, Finding{Source: "policy", Check: "policy/workloads-folder", File: c.Rel, Object: c.Claim.Metadata.Name,
				Message: fmt.Sprintf("cluster has no workloads folder %s (fleet cluster add creates it)", wl)})
		} else if keyClusters == nil || slices.Contains(keyClusters, c.Claim.Metadata.Name) {
			out = append(out, deployKeyFindings(tree, c.Claim.Metadata.Name)...)
		}
	}
	for _, r := range res {
		if _, err := tree.Stat(fleettree.ClaimsDir + "/" + r); errors.Is(err, fs.ErrNotExist) {
			out = append(out, Finding{Source: "policy", Check: "policy/listing", File: kpath,
				Message: fmt.Sprintf("resources lists %q, which does not exist", r)})
		}
	}
	entries, _ := tree.ReadDir(fleettree.WorkloadsDir)
	for _, e := range entries {
		if e.IsDir() && !names[e.Name()] {
			out = append(out, Finding{Source: "policy", Check: "policy/workloads-folder", File: fleettree.WorkloadsRel(e.Name()),
				Message: fmt.Sprintf("workloads folder for %q has no claim in %s: remove it or add the cluster", e.Name(), fleettree.ClaimsDir)})
		}
	}
	return out
}

func fromViolation(v policy.Violation) Finding {
	return Finding{Source: "policy", Check: v.Family + "/" + v.Rule, File: v.File, Object: v.Cluster, Field: v.Field, Message: v.Message}
}

// Run checks a tree.
func Run(ctx context.Context, o Options) (*Result, error) {
	tree, err := fleettree.Open(o.Tree)
	if err != nil {
		return nil, err
	}
	pol, err := policy.Load(tree.Path(policy.RelPath))
	if err != nil {
		return nil, err
	}
	res := &Result{Tree: o.Tree, Findings: []Finding{}}
	pf, claims, err := PolicyFindings(tree, pol, policy.HubOf(o.Info))
	if err != nil {
		return nil, err
	}
	res.Claims = len(claims)
	if o.Prover != nil {
		if o.Changed != nil && !o.Full {
			if names, ok := ChangeScope(o.Changed, claims); ok {
				res.Scoped, res.Scope = true, names
			}
		}
		rep, err := o.Prover.Prove(ctx, ProofRequest{Tree: o.Tree, Info: o.Info, Scoped: res.Scoped, Claims: res.Scope})
		if err != nil {
			return nil, fmt.Errorf("offline proof: %w", err)
		}
		res.ProofRan = true
		res.Objects = rep.Objects
		for _, f := range rep.Findings {
			f.Source = "proof"
			res.Findings = append(res.Findings, f)
		}
	}
	res.Findings = append(res.Findings, pf...)
	if o.Base != nil {
		tf, err := transitionFindings(claims, o.Base)
		if err != nil {
			return nil, err
		}
		res.Findings = append(res.Findings, tf...)
	}
	sort.SliceStable(res.Findings, func(i, j int) bool { return res.Findings[i].File < res.Findings[j].File })
	res.AutoApprove = decide(tree, pol, res, claims, o.Changed, o.Base)
	if o.Changed != nil {
		// Admin principals and public endpoint CIDRs grant access: never auto-approved.
		if rs := accessReasons(claims, o.Changed, o.Base); len(rs) > 0 {
			if res.AutoApprove.Eligible {
				res.AutoApprove.Reasons = nil // drop the approval's own reason
			}
			res.AutoApprove.Eligible = false
			res.AutoApprove.Reasons = append(res.AutoApprove.Reasons, rs...)
		}
		// Only the owning team changes a cluster without review; ownership
		// is read from the base.
		var rs []string
		if o.Base == nil {
			if len(res.AutoApprove.Clusters) > 0 {
				rs = []string{"cluster ownership is read from the base branch: pass --base-ref"}
			}
		} else {
			edits, unread := claimEdits(claims, res.AutoApprove.Clusters, o.Base)
			rs = append(unread, ownerReasons(o.Author, edits, o.Base)...)
			res.AutoApprove.Notices = editNotices(edits)
		}
		if len(rs) > 0 {
			if res.AutoApprove.Eligible {
				res.AutoApprove.Reasons = nil
			}
			res.AutoApprove.Eligible = false
			res.AutoApprove.Reasons = append(res.AutoApprove.Reasons, rs...)
		}
	}
	return res, nil
}

// decide applies the auto-approval rule: every check passed, the proof ran,
// and the change only adds or edits cluster claims (and the scaffolding
// `fleet cluster add` writes with them) within the auto-approval limits.
// Removing a cluster, changing the policy or anything else needs a human.
// What the request adds beside the claims is judged by content
// (scaffold.go); the policy's autoApprove.paths can only narrow that.
func decide(tree *fleettree.Tree, pol *policy.Policy, res *Result, claims []fleettree.ClaimFile, changed []string, base baseFunc) AutoApprove {
	var reasons []string
	if changed == nil {
		return AutoApprove{Reasons: []string{"changed files unknown (pass --changed FILE)"}}
	}
	if !res.OK() {
		reasons = append(reasons, fmt.Sprintf("%d check(s) failed", len(res.Findings)))
	}
	if !res.ProofRan {
		reasons = append(reasons, "the offline proof did not run")
	}
	byFile := map[string][]fleettree.ClaimFile{}
	for _, c := range claims {
		byFile[c.Rel] = append(byFile[c.Rel], c)
	}
	touched := map[string]bool{}
	var clusters, workloads []string
	listing := false
	for _, f := range changed {
		f = path.Clean(f)
		dir, file := path.Split(f)
		switch {
		case f == policy.RelPath:
			reasons = append(reasons, f+": changes the fleet policy")
		case strings.TrimSuffix(dir, "/") == fleettree.ClaimsDir && file == fleettree.Kustomization:
			listing = true // judged below, once the added claims are known
		case strings.TrimSuffix(dir, "/") == fleettree.ClaimsDir && (strings.HasSuffix(file, ".yaml") || strings.HasSuffix(file, ".yml")):
			cs, ok := byFile[f]
			if !ok {
				if _, err := os.Stat(tree.Path(f)); err != nil {
					reasons = append(reasons, f+": removes a cluster claim (deletes a cluster)")
				} else {
					reasons = append(reasons, f+": not a WorkloadCluster claim")
				}
				continue
			}
			for _, c := range cs {
				touched[c.Claim.Metadata.Name] = true
				clusters = append(clusters, c.Claim.Metadata.Name)
				if c.Claim.Spec.Nodes.Max > pol.AutoApproveMaxNodes() {
					reasons = append(reasons, fmt.Sprintf("%s: nodes.max %d is above the auto-approval limit %d", f, c.Claim.Spec.Nodes.Max, pol.AutoApproveMaxNodes()))
				}
			}
		case !underAny(f, pol.AutoApprove.Paths):
			reasons = append(reasons, f+": outside the auto-approval paths "+strings.Join(pol.AutoApprove.Paths, ", "))
		case strings.HasPrefix(f, fleettree.WorkloadsDir+"/"):
			workloads = append(workloads, f) // judged below, once the touched claims are known
		default:
			reasons = append(reasons, f+": not something `fleet cluster add` writes (governance review)")
		}
	}
	// Workloads-tree files only as the scaffolding of a cluster this
	// request adds, and the listing only gaining those clusters' claims.
	for _, f := range workloads {
		if r := workloadsReason(tree, base, touched, f); r != "" {
			reasons = append(reasons, r)
		}
	}
	if listing {
		added := map[string]bool{}
		for name := range touched {
			if base != nil {
				if isNew, err := newCluster(base, name); err == nil && isNew {
					added[name] = true
				}
			}
		}
		if r := listingReason(tree, base, added); r != "" {
			reasons = append(reasons, r)
		}
	}
	sort.Strings(clusters)
	clusters = slices.Compact(clusters)
	if len(clusters) == 0 && len(reasons) == 0 {
		reasons = append(reasons, "no cluster claim added or changed")
	}
	if len(reasons) > 0 {
		return AutoApprove{Reasons: reasons, Clusters: clusters}
	}
	return AutoApprove{Eligible: true, Clusters: clusters,
		Reasons: []string{"only cluster claims (and their scaffolding) changed, every check passed, nodes within the auto-approval limit, the author a member of each owning team"}}
}

func underAny(f string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// transitionFindings checks each claim against its version on the base.
func transitionFindings(claims []fleettree.ClaimFile, base func(string) ([]byte, error)) ([]Finding, error) {
	var out []Finding
	olds := map[string][]*workloadcluster.Claim{}
	for _, c := range claims {
		prev, ok := olds[c.Rel]
		if !ok {
			b, err := base(c.Rel)
			if err != nil {
				return nil, fmt.Errorf("reading %s on the base: %w", c.Rel, err)
			}
			if b != nil {
				prev, _ = fleettree.ParseClaims(b) // a broken base file has no rules to keep
			}
			olds[c.Rel] = prev
		}
		for _, p := range prev {
			if p.Metadata.Name != c.Claim.Metadata.Name {
				continue
			}
			for _, v := range policy.CheckTransition(p, c.Claim) {
				v.File = c.Rel
				out = append(out, fromViolation(v))
			}
		}
	}
	return out, nil
}
