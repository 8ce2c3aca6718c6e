// Package policydoc is the IAM policy document as plain Go values: a
// Document of Statements rendered to the JSON IAM reads, parsed back, sized
// as IAM counts it against its quotas, and checked for wildcards that are
// never least privilege. The hub's (hubiam) and the spokes' (spokeiam)
// documents are built from it.
package policydoc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Document is an IAM policy document.
type Document struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one IAM policy statement. Condition maps an operator
// (StringEquals, StringLike, ...) to condition keys and their values.
type Statement struct {
	Sid       string                    `json:"Sid,omitempty"`
	Effect    string                    `json:"Effect"`
	Principal map[string]any            `json:"Principal,omitempty"`
	Action    []string                  `json:"Action"`
	Resource  []string                  `json:"Resource,omitempty"`
	Condition map[string]map[string]any `json:"Condition,omitempty"`
}

// MarshalJSON writes a one-element Action or Resource as a string, as IAM
// reads it: every character counts against IAM's size quotas.
func (s Statement) MarshalJSON() ([]byte, error) {
	type plain struct {
		Sid       string                    `json:"Sid,omitempty"`
		Effect    string                    `json:"Effect"`
		Principal map[string]any            `json:"Principal,omitempty"`
		Action    any                       `json:"Action"`
		Resource  any                       `json:"Resource,omitempty"`
		Condition map[string]map[string]any `json:"Condition,omitempty"`
	}
	one := func(l []string) any {
		if len(l) == 1 {
			return l[0]
		}
		if l == nil {
			return nil
		}
		return l
	}
	out := plain{Sid: s.Sid, Effect: s.Effect, Principal: s.Principal, Action: one(s.Action), Condition: s.Condition}
	if len(s.Resource) > 0 {
		out.Resource = one(s.Resource)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads Action and Resource as a string or a list, as IAM
// allows.
func (s *Statement) UnmarshalJSON(b []byte) error {
	var raw struct {
		Sid       string                    `json:"Sid"`
		Effect    string                    `json:"Effect"`
		Principal map[string]any            `json:"Principal"`
		Action    json.RawMessage           `json:"Action"`
		Resource  json.RawMessage           `json:"Resource"`
		Condition map[string]map[string]any `json:"Condition"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	actions, err := stringOrList(raw.Action)
	if err != nil {
		return fmt.Errorf("Action: %w", err)
	}
	resources, err := stringOrList(raw.Resource)
	if err != nil {
		return fmt.Errorf("Resource: %w", err)
	}
	*s = Statement{Sid: raw.Sid, Effect: raw.Effect, Principal: raw.Principal, Action: actions, Resource: resources, Condition: raw.Condition}
	return nil
}

// Effects.
const (
	Allow = "Allow"
	Deny  = "Deny"
)

// PolicyVersion is the only IAM policy language version in use.
const PolicyVersion = "2012-10-17"

// NewDocument returns a document holding statements.
func NewDocument(statements ...Statement) Document {
	return Document{Version: PolicyVersion, Statement: statements}
}

// JSON renders the document.
func (d Document) JSON() (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("render IAM policy document: %w", err)
	}
	return string(b), nil
}

// MustJSON renders the document; it panics only on a programming error
// (a value encoding/json cannot encode), never on input.
func (d Document) MustJSON() string {
	s, err := d.JSON()
	if err != nil {
		panic(err)
	}
	return s
}

// Parse reads a policy document. Action and Resource may be a string or a
// list, as IAM allows.
func Parse(s string) (Document, error) {
	var raw struct {
		Version   string            `json:"Version"`
		Statement []json.RawMessage `json:"Statement"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return Document{}, fmt.Errorf("parse IAM policy document: %w", err)
	}
	d := Document{Version: raw.Version}
	for i, b := range raw.Statement {
		var st Statement
		if err := json.Unmarshal(b, &st); err != nil {
			return Document{}, fmt.Errorf("statement %d %w", i, err)
		}
		d.Statement = append(d.Statement, st)
	}
	return d, nil
}

func stringOrList(m json.RawMessage) ([]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(m, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(m, &many); err != nil {
		return nil, fmt.Errorf("neither a string nor a list of strings: %s", m)
	}
	return many, nil
}

// CheckLeastPrivilege returns one error per Allow statement that grants
// every action ("*") or a whole service ("svc:*") on every resource ("*"),
// and per statement that is missing its Effect, Action or Resource.
func CheckLeastPrivilege(d Document) []error {
	var errs []error
	if d.Version != PolicyVersion {
		errs = append(errs, fmt.Errorf("policy Version %q: allowed %q", d.Version, PolicyVersion))
	}
	for i, st := range d.Statement {
		name := st.Sid
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if st.Effect != Allow && st.Effect != Deny {
			errs = append(errs, fmt.Errorf("statement %s: Effect %q: allowed Allow, Deny", name, st.Effect))
		}
		if len(st.Action) == 0 {
			errs = append(errs, fmt.Errorf("statement %s: no Action", name))
		}
		if st.Principal == nil && len(st.Resource) == 0 {
			errs = append(errs, fmt.Errorf("statement %s: no Resource", name))
		}
		if st.Effect != Allow {
			continue
		}
		allResources := slices.Contains(st.Resource, "*")
		for _, a := range st.Action {
			if a == "*" && (allResources || len(st.Resource) == 0) {
				errs = append(errs, fmt.Errorf("statement %s: Action \"*\" on Resource \"*\"", name))
			}
			if a == "*" && !allResources {
				errs = append(errs, fmt.Errorf("statement %s: Action \"*\" (name the actions)", name))
			}
			if strings.HasSuffix(a, ":*") && allResources {
				errs = append(errs, fmt.Errorf("statement %s: Action %q on Resource \"*\"", name, a))
			}
		}
	}
	return errs
}

// Actions returns every action the document allows, sorted and unique.
func (d Document) Actions() []string {
	var out []string
	for _, st := range d.Statement {
		if st.Effect == Allow {
			out = append(out, st.Action...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Size is the length IAM counts: the JSON without white space outside
// strings (the documents are rendered without any).
func Size(d Document) int {
	n := 0
	for _, r := range d.MustJSON() {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}
