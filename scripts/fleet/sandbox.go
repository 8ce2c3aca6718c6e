package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox"
)

// localSandbox is `fleet sandbox` on internal/sandbox.
type localSandbox struct{}

var _ fleetcmd.Sandbox = localSandbox{}

func (localSandbox) Defaults() fleetcmd.SandboxPlace {
	return fleetcmd.SandboxPlace{Dir: sandbox.DefaultDir(), Network: sandbox.DefaultNetwork, Prefix: sandbox.DefaultPrefix.String()}
}

// config turns the flags into a sandbox.Config, naming a bad one.
func config(p fleetcmd.SandboxPlace) (sandbox.Config, error) {
	prefix, err := netip.ParsePrefix(p.Prefix)
	if err != nil {
		return sandbox.Config{}, fmt.Errorf("--prefix %q: want a private IPv4 /16 such as %s: %w", p.Prefix, sandbox.DefaultPrefix, err)
	}
	c := sandbox.Config{Dir: p.Dir, Network: p.Network, Prefix: prefix}
	return c, c.Validate()
}

func (localSandbox) Preflight(p fleetcmd.SandboxPlace) error {
	c, err := config(p)
	if err != nil {
		return err
	}
	return sandbox.Preflight(c)
}

func (localSandbox) Up(ctx context.Context, p fleetcmd.SandboxPlace, _ string, serve []string, out io.Writer) error {
	c, err := config(p)
	if err != nil {
		return err
	}
	return sandbox.Up(ctx, c, serve, out)
}

func (localSandbox) Serve(ctx context.Context, p fleetcmd.SandboxPlace, repoRoot string, out io.Writer) error {
	c, err := config(p)
	if err != nil {
		return err
	}
	return sandbox.Serve(ctx, c, repoRoot, out)
}

func (localSandbox) Push(ctx context.Context, p fleetcmd.SandboxPlace, repoRoot string, out io.Writer) error {
	c, err := config(p)
	if err != nil {
		return err
	}
	commit, err := sandbox.Push(ctx, c, repoRoot)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "pushed %s/manifests as commit %s; the hub's Flux fetches it now\n", repoRoot, commit)
	return nil
}

func (localSandbox) Status(ctx context.Context, p fleetcmd.SandboxPlace, out io.Writer) error {
	c, err := config(p)
	if err != nil {
		return err
	}
	st, err := sandbox.Status(ctx, c)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "phase\t%s\n", st.Phase)
	fmt.Fprintf(w, "hub kubeconfig\t%s\n", c.KubeconfigPath())
	fmt.Fprintf(w, "tree\t%s/manifests at %s\n", st.RepoRoot, st.Commit)
	fmt.Fprintf(w, "spokes' clusters\t%s\n", orNone(st.Spokes))
	for _, name := range st.Spokes {
		ks := st.SpokeFlux[name]
		fmt.Fprintf(w, "\t%s: its own Flux: %s\n", name, sandbox.FluxSummary(ks))
		for _, k := range ks {
			fmt.Fprintf(w, "\t  %s\n", k)
		}
	}
	fmt.Fprintf(w, "stand-in AWS account\t%d resources\n", len(st.Account))
	for _, r := range st.Account {
		fmt.Fprintf(w, "\t%s\n", r)
	}
	return w.Flush()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func (localSandbox) Down(ctx context.Context, p fleetcmd.SandboxPlace, out io.Writer) error {
	c, err := config(p)
	if err != nil {
		return err
	}
	return sandbox.Down(ctx, c, out)
}
