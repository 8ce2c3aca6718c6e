package fleetcmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
)

type validateFlags struct {
	format, changed, changedPrefix, baseRef, author string
	full                                            bool
}

func (a *app) validateCmd() *cobra.Command {
	f := &validateFlags{}
	c := &cobra.Command{
		Use:   "validate [DIR]",
		Short: "Check a tree: the offline proof plus the fleet policy; decide auto-approval",
		Long: `Runs on the tree (DIR, else --tree) everything the offline proof of the system
tree checks (kustomize builds with strict substitution, schema and CEL validation of
every object, every claim rendered through the Composition) and the fleet policy in
gitops-system/workload-clusters/fleet-policy.yaml: allowed regions, Kubernetes
versions and instance types, maximum nodes, CIDR blocks overlapping each other or
the hub's VPC or a reserved range, name rules, names used twice, claims not listed
in the kustomization and workloads folders without a claim.

Auto-approval: with --changed (the pull request's changed files, one per line, as
'git diff --name-only' prints them), validate says whether the request may be merged
without review. It is eligible only when every check passes, the proof ran, and
the request only adds or edits WorkloadCluster claims (plus their listing and the
new cluster's workloads folder) within autoApprove.maxNodes. Removing a cluster,
changing the policy, apps, or anything else needs a human.

With --base-ref (the pull request's base commit), claims that already exist there are
also checked against the API's update rules, which a schema check of the new file
alone cannot see: region, vpcCidr and availabilityZones are immutable, natMode only
goes from single to per-az, kubernetesVersion moves up one minor version at a time.

Pull-request mode: with --changed, when the change touches only cluster claims,
their listing, the policy and workloads folders, the proof renders only the changed
clusters (their claims and spoke directories in full) while the hub tree, every
claim's schema and the fleet-wide checks (names, CIDRs, policy, listing) run over
the whole fleet: the base branch was proven when it merged. Any other change (the
system tree, apps) proves every claim; --full forces that.

Formats: text (default), json, github (workflow annotations ::error file=...::; the
verdict goes to $GITHUB_OUTPUT as auto-approve=true|false when that is set).
Exit code 1 when any check fails.`,
		Example: `  fleet validate
  fleet validate ./manifests --format json
  git diff --name-only origin/main...HEAD > changed.txt
  fleet validate --format github --changed changed.txt --base-ref origin/main`,
		Args: maxArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				a.g.tree = args[0]
			}
			switch f.format {
			case "text", "json", "github":
			default:
				return usageErr("--format %q: allowed text, json, github", f.format)
			}
			return a.validate(cmd, f)
		},
	}
	c.Flags().StringVarP(&f.format, "format", "o", "text", "output: text, json or github")
	c.Flags().StringVar(&f.changed, "changed", "", "file listing the changed files of a pull request ('-': stdin); enables the auto-approval verdict")
	c.Flags().StringVar(&f.baseRef, "base-ref", "", "Git revision of the pull request's base: changed claims are checked against the API's update rules (immutable region, vpcCidr, availabilityZones; natMode single -> per-az only; one minor version up)")
	c.Flags().StringVar(&f.author, "author", "", "Git host login of the pull request's author: a changed claim is auto-approved only when the author is a member of its owning team (label "+workloadcluster.TeamLabel+", spec.teams of the base's fleet policy)")
	c.Flags().BoolVar(&f.full, "full", false, "with --changed, still render every claim (default: only the changed clusters when the change touches only claims, their listing, the policy and workloads folders)")
	c.Flags().StringVar(&f.changedPrefix, "changed-prefix", "", "prefix of the tree in --changed paths (default: the tree's path relative to the repository root, e.g. manifests/)")
	return c
}

func (a *app) validate(cmd *cobra.Command, f *validateFlags) error {
	root, err := a.treeRoot()
	if err != nil {
		return err
	}
	info, err := a.info()
	if err != nil {
		return err
	}
	prefix := f.changedPrefix
	if prefix == "" {
		prefix = treePrefix(root)
	}
	var changed []string
	if f.changed != "" {
		var r io.Reader
		if f.changed == "-" {
			r = cmd.InOrStdin()
		} else {
			fh, err := os.Open(f.changed)
			if err != nil {
				return usageErr("--changed: %v", err)
			}
			defer fh.Close()
			r = fh
		}
		changed = []string{}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if l == "" {
				continue
			}
			if rest, ok := strings.CutPrefix(l, prefix); ok && prefix != "" {
				l = rest
			} else if prefix != "" {
				l = "../" + l // outside the tree
			}
			changed = append(changed, l)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("--changed: %w", err)
		}
	}
	opts := fleetvalidate.Options{Tree: root, Info: info, Prover: a.deps.Prover, Changed: changed, Full: f.full, Author: f.author}
	if f.baseRef != "" {
		if opts.Base, err = gitBase(cmd.Context(), root, f.baseRef); err != nil {
			return err
		}
	}
	res, err := fleetvalidate.Run(cmd.Context(), opts)
	if err != nil {
		return err
	}
	switch f.format {
	case "json":
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	case "github":
		printGitHub(a.stdout, res, prefix)
		if out := os.Getenv("GITHUB_OUTPUT"); out != "" {
			fh, err := os.OpenFile(out, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				return fmt.Errorf("GITHUB_OUTPUT: %w", err)
			}
			fmt.Fprintf(fh, "auto-approve=%t\n", res.AutoApprove.Eligible)
			if err := fh.Close(); err != nil {
				return err
			}
		}
	default:
		printText(a.stdout, res)
	}
	if !res.OK() {
		return checksFailed(len(res.Findings))
	}
	return nil
}

// gitBase reads tree files as they are at ref, with git.
func gitBase(ctx context.Context, tree, ref string) (func(string) ([]byte, error), error) {
	check := exec.CommandContext(ctx, "git", "-C", tree, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if out, err := check.CombinedOutput(); err != nil {
		return nil, usageErr("--base-ref %q: not a commit in the repository of %s (%v %s)", ref, tree, err, strings.TrimSpace(string(out)))
	}
	return func(rel string) ([]byte, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "git", "-C", tree, "show", ref+":./"+rel)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			msg := stderr.String()
			if strings.Contains(msg, "does not exist") || strings.Contains(msg, "exists on disk, but not in") {
				return nil, nil
			}
			return nil, fmt.Errorf("git show %s:./%s: %v: %s", ref, rel, err, strings.TrimSpace(msg))
		}
		return stdout.Bytes(), nil
	}, nil
}

// treePrefix is the tree's path relative to the repository root (the
// directory holding go.mod or .git), with a trailing slash.
func treePrefix(root string) string {
	abs, err := filepath.Abs(root)
	if err != nil {
		return ""
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		for _, m := range []string{"go.mod", ".git"} {
			if _, err := os.Stat(filepath.Join(d, m)); err == nil {
				rel, err := filepath.Rel(d, abs)
				if err != nil {
					return ""
				}
				return filepath.ToSlash(rel) + "/"
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func printText(w io.Writer, r *fleetvalidate.Result) {
	for _, f := range r.Findings {
		loc := f.File
		if loc == "" {
			loc = "(tree)"
		}
		obj := ""
		if f.Object != "" {
			obj = " " + f.Object
		}
		if f.Field != "" {
			obj += " " + f.Field
		}
		fmt.Fprintf(w, "FAIL %s [%s]%s: %s\n", loc, f.Check, obj, f.Message)
	}
	proof := "offline proof: not available in this build (policy checks only)"
	if r.ProofRan {
		proof = fmt.Sprintf("offline proof: ran on %d objects", r.Objects)
		if r.Scoped {
			proof += fmt.Sprintf(" (pull-request mode: rendered %d changed cluster(s) %s; --full renders all)", len(r.Scope), strings.Join(r.Scope, ", "))
		}
	}
	status := "PASS"
	if !r.OK() {
		status = "FAIL"
	}
	fmt.Fprintf(w, "%s: %d claim(s), %d finding(s); %s\n", status, r.Claims, len(r.Findings), proof)
	verdict := "not eligible"
	if r.AutoApprove.Eligible {
		verdict = "ELIGIBLE"
	}
	fmt.Fprintf(w, "auto-approval: %s", verdict)
	if len(r.AutoApprove.Clusters) > 0 {
		fmt.Fprintf(w, " (clusters: %s)", strings.Join(r.AutoApprove.Clusters, ", "))
	}
	fmt.Fprintln(w)
	for _, why := range r.AutoApprove.Reasons {
		fmt.Fprintf(w, "  - %s\n", why)
	}
	for _, n := range r.AutoApprove.Notices {
		fmt.Fprintf(w, "  ! %s\n", n)
	}
}

// GitHub workflow command escaping.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

func printGitHub(w io.Writer, r *fleetvalidate.Result, prefix string) {
	for _, f := range r.Findings {
		props := "title=" + ghProp("fleet "+f.Check)
		if f.File != "" {
			props = "file=" + ghProp(prefix+f.File) + "," + props
		}
		msg := f.Message
		if f.Object != "" {
			msg = f.Object + ": " + msg
		}
		if f.Field != "" {
			msg = f.Field + ": " + msg
		}
		fmt.Fprintf(w, "::error %s::%s\n", props, ghData(msg))
	}
	if !r.ProofRan {
		fmt.Fprintf(w, "::warning title=fleet validate::%s\n", ghData("offline proof not available in this build: policy checks only, no auto-approval"))
	}
	verdict := "not eligible for auto-approval: " + strings.Join(r.AutoApprove.Reasons, "; ")
	if r.AutoApprove.Eligible {
		verdict = "eligible for auto-approval: " + strings.Join(r.AutoApprove.Reasons, "; ")
	}
	fmt.Fprintf(w, "::notice title=fleet validate::%s\n", ghData(fmt.Sprintf("%d claim(s), %d finding(s); %s", r.Claims, len(r.Findings), verdict)))
	for _, n := range r.AutoApprove.Notices {
		fmt.Fprintf(w, "::warning title=fleet validate: what this edit does::%s\n", ghData(n))
	}
}
