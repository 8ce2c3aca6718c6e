package fleetcmd

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// Workloads-tree conventions shared with the app path.
const (
	TeamsDir = "gitops-workloads/teams"
	// SpokeToolsKustomization is the spoke's Kustomization that installs
	// spoke-tools/; every app depends on it.
	SpokeToolsKustomization = "spoke-tools"
	// RepoSource is the GitRepository of the fleet repository on a spoke.
	RepoSource = "flux-system"
	// AppTimeout is spec.timeout of an app's Kustomization: how long Flux
	// waits for the app to become ready and, with deletionPolicy
	// WaitForTermination, for its objects (AppInfrastructure claims, load
	// balancers) to be gone when the app or the spoke is deleted. It is the
	// first link of the teardown chain (test/teardown_test.go): shorter than
	// the spoke's workloads Kustomization (20m), which waits for it.
	AppTimeout = "15m"
	// AppDeletionPolicy makes deleting the app (or the spoke) wait until
	// its AWS resources are gone, before the node group and cluster go.
	AppDeletionPolicy = "WaitForTermination"
)

var refRE = regexp.MustCompile(`^(branch|tag|semver|commit):(.+)$`)

type appFlags struct {
	cluster, repo, path, ref, team, namespace string
	dryRun                                    bool
}

func (a *app) appCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "app",
		Short: "Put apps on clusters (the workloads tree)",
		Args:  maxArgs(0, ""),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.appAddCmd())
	return c
}

func (a *app) appAddCmd() *cobra.Command {
	f := &appFlags{}
	c := &cobra.Command{
		Use:   "add APP --cluster NAME --repo URL --path PATH [--ref REF]",
		Short: "Onboard an app to a cluster",
		Long: `Writes gitops-workloads/clusters/NAME/APP.yaml and lists it in that folder's
kustomization.yaml. The file holds a Flux Kustomization (namespace flux-system on the
spoke) that:
  - builds PATH from the repository (the fleet repository's own GitRepository
    flux-system when --repo is this repository or "self", else a GitRepository APP
    written next to it),
  - applies into --namespace (targetNamespace) as the team's Flux identity
    serviceAccountName team-<team>, never Flux's own cluster-admin identity,
  - dependsOn the spoke's spoke-tools Kustomization, so the app's AWS resources'
    API exists first, and substitutes the spoke's spoke-info variables,
  - has deletionPolicy WaitForTermination and timeout 15m: removing the app (or
    the spoke) waits until its AppInfrastructure claims' AWS resources and its
    load balancers are gone, before the spoke's node group and cluster go.
The team's folder gitops-workloads/teams/<team>/ (namespace, identity, Role) is
listed in the cluster's kustomization too when it exists.

--ref is branch:NAME (default branch:main), tag:NAME, semver:RANGE or commit:SHA;
a bare value is a branch.`,
		Example: `  fleet app add payment-app --cluster apps-staging --repo self \
      --path ./manifests/apps/payment-app/overlays/staging --team payments
  fleet app add web --cluster apps-prod --repo https://github.com/example-org/web \
      --path ./deploy/production --ref tag:v1.4.2`,
		Args: exactArgs("APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, r := range []struct{ flag, v string }{{"--cluster", f.cluster}, {"--repo", f.repo}, {"--path", f.path}} {
				if r.v == "" {
					return usageErr("%s is required", r.flag)
				}
			}
			return a.appAdd(cmd.Context(), args[0], f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.cluster, "cluster", "", "cluster (spoke) NAME to put the app on (required)")
	fl.StringVar(&f.repo, "repo", "", `Git repository URL of the app, or "self" for the fleet repository (required)`)
	fl.StringVar(&f.path, "path", "", "path of the app's kustomization in the repository (required)")
	fl.StringVar(&f.ref, "ref", "", "branch:NAME (default branch:main), tag:NAME, semver:RANGE or commit:SHA")
	fl.StringVar(&f.team, "team", "", "owning team: its Flux identity team-<team> applies the app (default: APP)")
	fl.StringVar(&f.namespace, "namespace", "", "targetNamespace of the app (default: the team)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "check and print, write nothing")
	return c
}

func (a *app) appAdd(ctx context.Context, name string, f *appFlags) error {
	a.warmProof(ctx)
	t, err := a.openTree()
	if err != nil {
		return err
	}
	info, err := a.info()
	if err != nil {
		return err
	}
	bad := func(flag, v, allowed string) error {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%s %q: %s", flag, v, allowed)}
	}
	if !dnsLabelRE.MatchString(name) || len(name) > 63 {
		return bad("APP", name, "use lower-case letters, digits and '-' (at most 63), starting with a letter")
	}
	team := f.team
	if team == "" {
		team = name
	}
	if !dnsLabelRE.MatchString(team) || len(team) > 58 {
		return bad("--team", team, "use lower-case letters, digits and '-', starting with a letter")
	}
	ns := f.namespace
	if ns == "" {
		ns = team
	}
	if !dnsLabelRE.MatchString(ns) || ns == "flux-system" || ns == "kube-system" {
		return bad("--namespace", ns, "a DNS label other than flux-system and kube-system")
	}
	_, claims, err := a.findClaim(t, f.cluster)
	if err != nil {
		return err
	}
	wl := fleettree.WorkloadsRel(f.cluster)
	if st, err := os.Stat(t.Path(wl)); err != nil || !st.IsDir() {
		return &exitError{code: ExitFailed, err: fmt.Errorf("--cluster %s: no workloads folder %s (run fleet cluster add first)", f.cluster, wl)}
	}
	appRel := wl + "/" + name + ".yaml"
	if _, err := os.Stat(t.Path(appRel)); err == nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("app %s is already on cluster %s (%s)", name, f.cluster, appRel)}
	}
	p := path.Clean("/" + strings.TrimPrefix(f.path, "./"))
	if strings.Contains(f.path, "..") || p == "/" {
		return bad("--path", f.path, "a path inside the repository, e.g. ./deploy/production")
	}
	refKind, refVal := "branch", "main"
	if f.ref != "" {
		if m := refRE.FindStringSubmatch(f.ref); m != nil {
			refKind, refVal = m[1], m[2]
		} else if strings.Contains(f.ref, ":") {
			return bad("--ref", f.ref, "branch:NAME, tag:NAME, semver:RANGE or commit:SHA")
		} else {
			refVal = f.ref
		}
	}
	self := f.repo == "self" || f.repo == info.GitURL
	var docs []map[string]any
	source := RepoSource
	if !self {
		u, err := url.Parse(f.repo)
		if err != nil || (u.Scheme != "https" && u.Scheme != "ssh" && u.Scheme != "http") || u.Host == "" {
			return bad("--repo", f.repo, `an https:// or ssh:// Git URL, or "self"`)
		}
		source = name
		gr := map[string]any{
			"apiVersion": "source.toolkit.fluxcd.io/v1",
			"kind":       "GitRepository",
			"metadata":   map[string]any{"name": name, "namespace": "flux-system"},
			"spec": map[string]any{
				"interval": "5m",
				"url":      f.repo,
				"ref":      map[string]any{refKind: refVal},
			},
		}
		if u.Scheme == "ssh" {
			// The spoke's deploy key reads the fleet repository; another
			// repository needs its own key, sealed into a Secret named
			// after the app.
			gr["spec"].(map[string]any)["secretRef"] = map[string]any{"name": name + "-git"}
		}
		docs = append(docs, gr)
	} else if f.ref != "" {
		return bad("--ref", f.ref, "not allowed with --repo self: the spoke follows the fleet repository's branch")
	}
	docs = append(docs, map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": name, "namespace": "flux-system"},
		"spec": map[string]any{
			"interval":           "10m",
			"retryInterval":      "2m",
			"timeout":            AppTimeout,
			"sourceRef":          map[string]any{"kind": "GitRepository", "name": source},
			"path":               "./" + strings.TrimPrefix(p, "/"),
			"targetNamespace":    ns,
			"serviceAccountName": "team-" + team,
			"prune":              true,
			"deletionPolicy":     AppDeletionPolicy,
			"wait":               true,
			"dependsOn":          []any{map[string]any{"name": SpokeToolsKustomization}},
			"postBuild": map[string]any{"substituteFrom": []any{
				map[string]any{"kind": "ConfigMap", "name": spokeinfo.Name},
			}},
		},
	})
	var body strings.Builder
	fmt.Fprintf(&body, "# %s on spoke %s, applied as team %s's Flux identity (never Flux's\n# own admin identity), after the spoke's tools. Written by `fleet app add`.\n", name, f.cluster, team)
	for i, d := range docs {
		if i > 0 {
			body.WriteString("---\n")
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		body.Write(b)
	}
	ch := treeedit.New()
	ch.Write(appRel, []byte(body.String()))
	kpath := wl + "/" + fleettree.Kustomization
	kb, err := os.ReadFile(t.Path(kpath))
	if err != nil {
		kb = kustfile.New("Apps on spoke " + f.cluster + ".")
	}
	teamRel := TeamsDir + "/" + team
	if st, err := os.Stat(t.Path(teamRel)); err == nil && st.IsDir() {
		if kb, err = kustfile.Add(kb, "../../teams/"+team); err != nil {
			return fmt.Errorf("%s: %w", kpath, err)
		}
	} else {
		fmt.Fprintf(a.stderr, "warning: %s does not exist: team %s needs its namespace, ServiceAccount team-%s and Role on the spoke before the app applies\n", teamRel, team, team)
	}
	if kb, err = kustfile.Add(kb, name+".yaml"); err != nil {
		return fmt.Errorf("%s: %w", kpath, err)
	}
	ch.Write(kpath, kb)
	if err := a.checkStaged(ctx, t, claims, ch, f.cluster); err != nil {
		return err
	}
	if f.dryRun {
		fmt.Fprintf(a.stdout, "dry run: would write %s and %s\n\n%s", appRel, kpath, body.String())
		return nil
	}
	if err := ch.Apply(t.Root); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	fmt.Fprintf(a.stdout, "app %s on cluster %s: wrote %s, listed in %s\n", name, f.cluster, appRel, kpath)
	return nil
}

var dnsLabelRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
