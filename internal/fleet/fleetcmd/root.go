// Package fleetcmd is the `fleet` command line: cobra commands that edit
// and check the GitOps tree of an EKS fleet. Tests and other packages run
// it in-process with NewRootCommand and ExitCode.
package fleetcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // a check or an operation failed
	ExitUsage  = 2 // bad usage: unknown command or flag, wrong arguments, unparsable flag value
)

// exitError carries an exit code; silent errors were already reported.
type exitError struct {
	code   int
	err    error
	silent bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// errChecksFailed ends a command whose failures were already printed.
func checksFailed(n int) error {
	return &exitError{code: ExitFailed, silent: true, err: fmt.Errorf("%d check(s) failed", n)}
}

// ExitCode maps an error returned by the root command's Execute to the
// process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// cobra's own argument errors
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "required flag", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, p) {
			return ExitUsage
		}
	}
	return ExitFailed
}

// Renderer renders one claim into everything the hub creates for it
// (internal/proof/xrender.RenderClaim).
type Renderer interface {
	RenderClaim(ctx context.Context, req RenderRequest) ([]*unstructured.Unstructured, error)
}

// RenderRequest is one claim to render: the claim file at ClaimPath of the
// tree at Tree, with the hub's cluster-info Info. Prune, when set, leaves
// those paths of the tree out of the build (a request's scope: the other
// clusters' claims and workloads).
type RenderRequest struct {
	Tree, ClaimPath string
	Info            clusterinfo.Values[string]
	Prune           []string
}

// StackValidator validates a Pulumi stack config file offline, the way the
// program does (package stacks).
type StackValidator interface {
	ValidateStackFile(path string) error
}

// Deps are fleet's connections to the other parts of the system; tests
// swap them for fakes.
type Deps struct {
	Prover   fleetvalidate.Prover // nil: proof engine not available
	Renderer Renderer             // nil: rendering not available
	Stacks   StackValidator       // nil: stack validation not available
	// Dynamic returns a client for the hub; kubeconfig may be empty.
	Dynamic func(kubeconfig string) (dynamic.Interface, error)
	Now     func() time.Time
	Rand    io.Reader // nil: crypto/rand
	// Sandbox runs the fleet on this machine; nil: `fleet sandbox` says
	// this binary has none.
	Sandbox Sandbox
	// Cleanup runs after a command (stops function processes the
	// renderer started).
	Cleanup func()
}

// DefaultDeps wires the real proof engine, renderer and stack validator.
func DefaultDeps() Deps {
	d := Deps{Dynamic: hubClient, Now: time.Now}
	wireEngines(&d)
	return d
}

// NewRootCommand returns the fleet command with the real dependencies.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	return NewRootCommandWithDeps(stdout, stderr, DefaultDeps())
}

// Run executes fleet with args and returns the exit code; errors are
// printed to stderr. main and scenario tests use it.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunWithDeps(ctx, args, stdout, stderr, DefaultDeps())
}

// RunWithDeps is Run with chosen dependencies.
func RunWithDeps(ctx context.Context, args []string, stdout, stderr io.Writer, d Deps) int {
	cmd := NewRootCommandWithDeps(stdout, stderr, d)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if d.Cleanup != nil {
		d.Cleanup()
	}
	code := ExitCode(err)
	var ee *exitError
	if err != nil && !(errors.As(err, &ee) && ee.silent) {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		if code == ExitUsage {
			fmt.Fprintln(stderr, "Run 'fleet --help' or 'fleet COMMAND --help' for usage.")
		}
	}
	return code
}

type globals struct {
	tree        string
	clusterInfo string
}

// app is the state shared by the commands.
type app struct {
	stdout, stderr io.Writer
	deps           Deps
	g              globals
}

// NewRootCommandWithDeps builds the command tree.
func NewRootCommandWithDeps(stdout, stderr io.Writer, d Deps) *cobra.Command {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Dynamic == nil {
		d.Dynamic = hubClient
	}
	a := &app{stdout: stdout, stderr: stderr, deps: d}
	root := &cobra.Command{
		Use:   "fleet",
		Short: "Edit and check the GitOps tree of an EKS fleet",
		Long: `fleet writes the Git changes that ask for, change and remove workload (spoke)
clusters and put apps on them, and checks a tree the way CI does before merge.

Every command works on the manifests tree (--tree, default: manifests/ of the
repository containing the current directory). Nothing is written unless the
whole change passes the same checks 'fleet validate' runs.

Exit codes: 0 ok, 1 a check or operation failed, 2 bad usage.`,
		Example: `  fleet cluster add payments --region eu-west-1 --cert sealing-cert.pem
  fleet render payments
  fleet validate
  fleet validate --format github --changed changed-files.txt`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: err}
	})
	root.PersistentFlags().StringVar(&a.g.tree, "tree", "", "manifests tree to work on (default: manifests/ of the repository around the current directory)")
	root.PersistentFlags().StringVar(&a.g.clusterInfo, "cluster-info", "", "YAML file with the hub's cluster-info ConfigMap (or its data map) to use instead of the built-in example values")
	root.AddCommand(a.clusterCmd(), a.accountCmd(), a.appCmd(), a.sealCmd(), a.validateCmd(), a.renderCmd(), a.stackCmd(), a.statusCmd(), a.iamCmd(), a.sandboxCmd())
	return root
}

// exactArgs is cobra.ExactArgs with a usage exit code and the names of
// the missing arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErr("%s takes %d argument(s) (%s), got %d", cmd.CommandPath(), len(names), strings.Join(names, " "), len(args))
		}
		return nil
	}
}

func maxArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return usageErr("%s takes at most %d argument(s) (%s), got %d", cmd.CommandPath(), n, names, len(args))
		}
		return nil
	}
}

// treeRoot resolves --tree.
func (a *app) treeRoot() (string, error) {
	if a.g.tree != "" {
		return a.g.tree, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return fleettree.Find(wd)
}

func (a *app) openTree() (*fleettree.Tree, error) {
	root, err := a.treeRoot()
	if err != nil {
		return nil, err
	}
	return fleettree.Open(root)
}

// info returns the cluster-info values: the example values, overridden by
// --cluster-info.
func (a *app) info() (clusterinfo.Values[string], error) {
	v := clusterinfo.Example()
	if a.g.clusterInfo == "" {
		return v, nil
	}
	b, err := os.ReadFile(a.g.clusterInfo)
	if err != nil {
		return v, fmt.Errorf("--cluster-info: %w", err)
	}
	var cm struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		return v, fmt.Errorf("--cluster-info %s: %w", a.g.clusterInfo, err)
	}
	data := cm.Data
	if cm.Kind == "" && data == nil {
		if err := yaml.Unmarshal(b, &data); err != nil {
			return v, fmt.Errorf("--cluster-info %s: %w", a.g.clusterInfo, err)
		}
	}
	return overrideInfo(v, data, a.g.clusterInfo)
}

// overrideInfo sets fields by their cluster-info variable name. The
// name-to-field mapping is learned from Values.Map, so it never drifts from
// package clusterinfo.
func overrideInfo(v clusterinfo.Values[string], data map[string]string, src string) (clusterinfo.Values[string], error) {
	rv := reflect.ValueOf(&v).Elem()
	field := map[string]int{}
	for i := 0; i < rv.NumField(); i++ {
		var probe clusterinfo.Values[string]
		const mark = "\x00probe"
		reflect.ValueOf(&probe).Elem().Field(i).SetString(mark)
		for k, val := range probe.Map() {
			if val == mark {
				field[k] = i
			}
		}
	}
	for k, val := range data {
		i, ok := field[k]
		if !ok {
			return v, fmt.Errorf("--cluster-info %s: unknown variable %q: known %s", src, k, strings.Join(clusterinfo.Names(), ", "))
		}
		rv.Field(i).SetString(val)
	}
	return v, nil
}
