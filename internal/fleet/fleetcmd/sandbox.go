package fleetcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
)

// SandboxPlace is where a sandbox runs (the sandbox command's flags).
type SandboxPlace struct {
	Dir, Network, Prefix string
}

// Sandbox runs the fleet on this machine on the real controllers
// (internal/sandbox, wired by scripts/fleet).
type Sandbox interface {
	// Defaults is the place used for flags left unset.
	Defaults() SandboxPlace
	// Preflight refuses bad flags and a machine the sandbox cannot run on
	// (or where one runs already), before anything is checked or made.
	Preflight(p SandboxPlace) error
	// Up starts the background process with the command line serve and
	// returns once the hub is synced.
	Up(ctx context.Context, p SandboxPlace, repoRoot string, serve []string, out io.Writer) error
	// Serve is the background process.
	Serve(ctx context.Context, p SandboxPlace, repoRoot string, out io.Writer) error
	// Push makes repoRoot's manifests/ the hub's next commit.
	Push(ctx context.Context, p SandboxPlace, repoRoot string, out io.Writer) error
	// Status prints the running sandbox's state.
	Status(ctx context.Context, p SandboxPlace, out io.Writer) error
	// Down stops it and removes everything it made.
	Down(ctx context.Context, p SandboxPlace, out io.Writer) error
}

func (a *app) sandboxCmd() *cobra.Command {
	var p SandboxPlace
	if a.deps.Sandbox != nil {
		p = a.deps.Sandbox.Defaults()
	}
	c := &cobra.Command{
		Use:   "sandbox",
		Short: "Run the fleet on this machine: a hub and its spokes on the real controllers, AWS stood in",
		Long: `fleet sandbox runs a hub on this machine as 'pulumi up -s mgmt' brings one up
on AWS, on the controllers at the releases this repository pins (etcd and
Kubernetes, Flux, Crossplane with the composition function, External Secrets,
Sealed Secrets; built from their Go modules once, then cached), syncing the
manifests/ of this checkout from a local Git server. AWS is stood in: the
Crossplane providers and the AWS APIs the hub calls are played against a local
account, IAM included, and each spoke's EKS cluster is a second local API server
(kwok plays the nodes), which the hub bootstraps and whose own Flux runs the
spoke's tools and apps. docs/sandbox.md says what it does not model.

Needs Linux, root (it makes a bridge and network namespaces), ip and git.

  fleet sandbox up        start the hub; returns once it is synced
  fleet cluster add ...   ask for a spoke, as on AWS (--cert and --known-hosts
                          from the sandbox: 'up' prints them)
  fleet sandbox push      this checkout's manifests/ becomes the hub's next commit
  fleet status            the spokes from the hub's conditions
  fleet sandbox status    the spokes' clusters and the stand-in AWS account
  fleet sandbox down      stop everything, remove every namespace, bridge and file`,
		Args: maxArgs(0, ""),
	}
	c.PersistentFlags().StringVar(&p.Dir, "dir", p.Dir, "the sandbox's directory: state, log, the hub's kubeconfig, every process's files")
	c.PersistentFlags().StringVar(&p.Network, "network", p.Network, "name of the sandbox's bridge (its network namespaces are named after it)")
	c.PersistentFlags().StringVar(&p.Prefix, "prefix", p.Prefix, "the sandbox's addresses: a private IPv4 /16 no interface of this machine uses")
	need := func() error {
		if a.deps.Sandbox == nil {
			return fmt.Errorf("this fleet binary was built without the sandbox")
		}
		return nil
	}
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the hub from this checkout's tree; returns once it is synced",
		Long: `Checks the tree as 'fleet validate' does (nothing starts when a check fails),
then starts the sandbox in the background and shows its progress: each upstream
program built (the first time: about 40 minutes on 2 cores), the hub's
'pulumi up', each of the hub's Kustomizations Ready. Prints the hub's kubeconfig
and what to run next. Ctrl-C stops the sandbox and removes what it made.`,
		Example: `  sudo fleet sandbox up
  sudo fleet sandbox up --network fleet-b --prefix 10.241.0.0/16 --dir /var/tmp/fleet-b`,
		Args: maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			if err := a.deps.Sandbox.Preflight(p); err != nil {
				return err
			}
			repo, err := a.sandboxCheckout(cmd.Context())
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			serve := []string{exe, "sandbox", "serve", "--dir", p.Dir, "--network", p.Network, "--prefix", p.Prefix, "--repo", repo}
			return a.deps.Sandbox.Up(cmd.Context(), p, repo, serve, a.stdout)
		},
	}
	var repo string
	serve := &cobra.Command{
		Use:     "serve --repo CHECKOUT",
		Short:   "The sandbox's background process (started by 'up')",
		Hidden:  true,
		Example: `  fleet sandbox serve --repo /src/eks-fleet   # what 'fleet sandbox up' starts`,
		Args:    maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			if !filepath.IsAbs(repo) {
				return usageErr("--repo %q: want the checkout's absolute path", repo)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return a.deps.Sandbox.Serve(ctx, p, repo, a.stdout)
		},
	}
	serve.Flags().StringVar(&repo, "repo", "", "the checkout whose manifests/ the hub syncs")
	push := &cobra.Command{
		Use:   "push",
		Short: "Make this checkout's manifests/ the hub's next commit",
		Long: `Checks the tree as 'fleet validate' does and, when it passes, commits this
checkout's manifests/ (committed or not) to the sandbox's Git server and asks the
hub's Flux to fetch it now, as a Git host's push webhook does through Flux's
Receiver. Nothing is pushed when a check fails.`,
		Example: `  fleet cluster add team-b-dev --team payments --cert ~/.local/state/eks-fleet/sandbox/sealing.crt \
    --known-hosts ~/.local/state/eks-fleet/sandbox/known_hosts
  sudo fleet sandbox push`,
		Args: maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			repo, err := a.sandboxCheckout(cmd.Context())
			if err != nil {
				return err
			}
			return a.deps.Sandbox.Push(cmd.Context(), p, repo, a.stdout)
		},
	}
	status := &cobra.Command{
		Use:     "status",
		Short:   "Show the sandbox: its phase, the spokes' clusters, the stand-in AWS account",
		Example: `  sudo fleet sandbox status`,
		Args:    maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			return a.deps.Sandbox.Status(cmd.Context(), p, a.stdout)
		},
	}
	down := &cobra.Command{
		Use:     "down",
		Short:   "Stop the sandbox and remove every process, namespace, bridge and file it made",
		Example: `  sudo fleet sandbox down`,
		Args:    maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			return a.deps.Sandbox.Down(cmd.Context(), p, a.stdout)
		},
	}
	c.AddCommand(up, serve, push, status, down)
	return c
}

// sandboxCheckout is the checkout whose tree the sandbox syncs: the
// repository holding the tree (--tree, or manifests/ around the current
// directory), once the tree passes the checks `fleet validate` runs; the
// findings are printed when it does not.
func (a *app) sandboxCheckout(ctx context.Context) (string, error) {
	root, err := a.treeRoot()
	if err != nil {
		return "", err
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return "", err
	}
	repo := filepath.Dir(root)
	if filepath.Base(root) != "manifests" {
		return "", usageErr("--tree %s: the sandbox syncs a checkout's manifests/ folder, with the checkout's Pulumi.mgmt.yaml", root)
	}
	if _, err := os.Stat(filepath.Join(repo, "Pulumi.mgmt.yaml")); err != nil {
		return "", usageErr("the sandbox runs the hub with the checkout's Pulumi.mgmt.yaml: %v", err)
	}
	info, err := a.info()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(a.stdout, "checking %s as 'fleet validate' does\n", root)
	if p, ok := a.deps.Prover.(proofPreparer); ok {
		if err := p.Prepare(ctx, func(format string, args ...any) { fmt.Fprintf(a.stdout, format+"\n", args...) }); err != nil {
			return "", err
		}
	}
	res, err := fleetvalidate.Run(ctx, fleetvalidate.Options{Tree: root, Info: info, Prover: a.deps.Prover})
	if err != nil {
		return "", err
	}
	if !res.OK() {
		printText(a.stdout, res)
		return "", &exitError{code: ExitFailed, err: fmt.Errorf("the tree fails %d check(s): nothing was started or pushed", len(res.Findings))}
	}
	return repo, nil
}
