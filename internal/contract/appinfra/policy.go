package appinfra

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// PolicyDocument is the part of an IAM policy document the checks read.
// Action, Resource and their Not* forms may be a string or a list in IAM.
type PolicyDocument struct {
	Version   string       `json:"Version"`
	Statement statementSet `json:"Statement"`
}

// Statement is one IAM policy statement.
type Statement struct {
	Sid          string                       `json:"Sid,omitempty"`
	Effect       string                       `json:"Effect"`
	Principal    json.RawMessage              `json:"Principal,omitempty"`
	NotPrincipal json.RawMessage              `json:"NotPrincipal,omitempty"`
	Action       stringSet                    `json:"Action,omitempty"`
	NotAction    stringSet                    `json:"NotAction,omitempty"`
	Resource     stringSet                    `json:"Resource,omitempty"`
	NotResource  stringSet                    `json:"NotResource,omitempty"`
	Condition    map[string]map[string]string `json:"Condition,omitempty"`
}

// stringSet decodes IAM's "string or list of strings".
type stringSet []string

func (s *stringSet) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*s = many
	return nil
}

// statementSet decodes IAM's "statement or list of statements".
type statementSet []Statement

func (s *statementSet) UnmarshalJSON(b []byte) error {
	var many []Statement
	if err := json.Unmarshal(b, &many); err == nil {
		*s = many
		return nil
	}
	var one Statement
	if err := json.Unmarshal(b, &one); err != nil {
		return fmt.Errorf("Statement: want a statement or a list of statements: %w", err)
	}
	*s = []Statement{one}
	return nil
}

// ParsePolicy decodes an IAM policy document.
func ParsePolicy(doc string) (*PolicyDocument, error) {
	var p PolicyDocument
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("parse IAM policy document: %w", err)
	}
	if p.Version != "2012-10-17" {
		return nil, fmt.Errorf("IAM policy Version %q: want 2012-10-17", p.Version)
	}
	if len(p.Statement) == 0 {
		return nil, fmt.Errorf("IAM policy has no Statement")
	}
	return &p, nil
}

// AppResources are the ARNs of one claim's composed resources, as AWS
// reports them (status.atProvider.arn).
type AppResources struct {
	TableARN           string
	QueueARN           string
	DeadLetterQueueARN string
}

// allowedActions maps each of the app's ARNs to the actions allowed on it.
func (r AppResources) allowedActions() (map[string][]string, error) {
	m := map[string][]string{}
	for _, e := range []struct {
		field, arn string
		actions    []string
	}{
		{"table", r.TableARN, TableActions},
		{"queue", r.QueueARN, QueueActions},
		{"dead-letter queue", r.DeadLetterQueueARN, DeadLetterQueueActions},
	} {
		if e.arn == "" {
			return nil, fmt.Errorf("the %s's ARN is unknown", e.field)
		}
		if _, dup := m[e.arn]; dup {
			return nil, fmt.Errorf("the %s's ARN %q is also another resource's ARN", e.field, e.arn)
		}
		m[e.arn] = e.actions
	}
	return m, nil
}

// CheckRolePolicy enforces least privilege on an app role's inline policy:
// only Allow statements with explicit Action and Resource lists, every
// resource exactly one of the app's own table and queue ARNs (no wildcard,
// nothing else), every action one the app needs on that resource, and every
// one of the app's resources reachable.
func CheckRolePolicy(doc string, own AppResources) error {
	allowed, err := own.allowedActions()
	if err != nil {
		return fmt.Errorf("role policy: %w", err)
	}
	p, err := ParsePolicy(doc)
	if err != nil {
		return fmt.Errorf("role policy: %w", err)
	}
	covered := map[string]bool{}
	for i, s := range p.Statement {
		where := fmt.Sprintf("role policy Statement[%d]", i)
		if s.Sid != "" {
			where += fmt.Sprintf(" (%s)", s.Sid)
		}
		switch {
		case s.Effect != "Allow":
			return fmt.Errorf("%s: Effect %q: only Allow statements are expected", where, s.Effect)
		case len(s.NotAction) > 0 || len(s.NotResource) > 0 || len(s.NotPrincipal) > 0:
			return fmt.Errorf("%s: NotAction/NotResource/NotPrincipal grant everything else: not allowed", where)
		case len(s.Principal) > 0:
			return fmt.Errorf("%s: an identity policy has no Principal", where)
		case len(s.Action) == 0 || len(s.Resource) == 0:
			return fmt.Errorf("%s: needs explicit Action and Resource", where)
		}
		for _, res := range s.Resource {
			actions, ok := allowed[res]
			if !ok {
				return fmt.Errorf("%s: Resource %q is not one of the app's own resources (allowed: %s)",
					where, res, joinSorted(sortedKeys(allowed)))
			}
			for _, a := range s.Action {
				if !slices.Contains(actions, a) {
					return fmt.Errorf("%s: Action %q on %q is not allowed (allowed: %s)", where, a, res, joinSorted(actions))
				}
			}
			covered[res] = true
		}
	}
	for _, arn := range sortedKeys(allowed) {
		if !covered[arn] {
			return fmt.Errorf("role policy never grants access to the app's own resource %q", arn)
		}
	}
	return nil
}

// CheckTrustPolicy enforces that an app role trusts exactly one
// ServiceAccount (namespace/name) through the spoke's OIDC provider.
func CheckTrustPolicy(doc, oidcProviderARN, issuer, namespace, serviceAccount string) error {
	p, err := ParsePolicy(doc)
	if err != nil {
		return fmt.Errorf("trust policy: %w", err)
	}
	if len(p.Statement) != 1 {
		return fmt.Errorf("trust policy: %d statements, want exactly 1", len(p.Statement))
	}
	s := p.Statement[0]
	if s.Effect != "Allow" || len(s.NotPrincipal) > 0 || len(s.NotAction) > 0 {
		return fmt.Errorf("trust policy: want a plain Allow statement")
	}
	var principal map[string]string
	if err := json.Unmarshal(s.Principal, &principal); err != nil {
		return fmt.Errorf("trust policy: Principal: want {\"Federated\": ARN}: %w", err)
	}
	if len(principal) != 1 || principal["Federated"] != oidcProviderARN {
		return fmt.Errorf("trust policy: Principal %v: want only Federated %q", principal, oidcProviderARN)
	}
	if len(s.Action) != 1 || s.Action[0] != "sts:AssumeRoleWithWebIdentity" {
		return fmt.Errorf("trust policy: Action %v: want only sts:AssumeRoleWithWebIdentity", []string(s.Action))
	}
	want := map[string]string{
		issuer + ":sub": ServiceAccountSubject(namespace, serviceAccount),
		issuer + ":aud": "sts.amazonaws.com",
	}
	if len(s.Condition) != 1 {
		return fmt.Errorf("trust policy: Condition %v: want only StringEquals %v", s.Condition, want)
	}
	got, ok := s.Condition["StringEquals"]
	if !ok || len(got) != len(want) {
		return fmt.Errorf("trust policy: Condition %v: want only StringEquals %v", s.Condition, want)
	}
	for k, v := range want {
		if got[k] != v {
			return fmt.Errorf("trust policy: Condition StringEquals %q = %q, want %q", k, got[k], v)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
