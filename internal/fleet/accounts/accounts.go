// Package accounts is the tree's side of the fleet's spoke accounts: each
// account of the fleet policy (spec.accounts) has the hub's ProviderConfig
// for it in AccountsDir, generated from the entry (the hub Crossplane's
// IRSA credentials, then the account's role with its external ID). Add
// writes both in one change; Findings reports a tree where they differ.
package accounts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// Dir holds one ProviderConfig per spoke account and a kustomization
// listing them, applied by the hub's crossplane-config Kustomization.
const Dir = "gitops-system/infrastructure/crossplane-config/accounts"

// ProviderConfigRel is account id's ProviderConfig file.
func ProviderConfigRel(id string) string { return Dir + "/" + id + ".yaml" }

// ProviderConfig is the hub's ProviderConfig for account a, as fleet
// writes it (provider-upjet-aws aws.upbound.io/v1beta1: credentials
// source IRSA, then assumeRoleChain, internal/clients/provider_config.go
// GetRoleChainConfig).
func ProviderConfig(a spokeaccounts.Account) []byte {
	return []byte(fmt.Sprintf(`# The hub Crossplane's way into spoke account %[1]s: its own IRSA role, then
# the account's role with the account's external ID. Written by
# fleet account add from the fleet policy's entry; fleet validate keeps them equal.
apiVersion: aws.upbound.io/v1beta1
kind: ProviderConfig
metadata:
  name: %[2]s
spec:
  credentials:
    source: IRSA
  assumeRoleChain:
    - roleARN: %[3]s
      externalID: %[4]q
`, a.ID, spokeaccounts.ProviderConfigName(a.ID), a.RoleARN, a.ExternalID))
}

// Add is the change that lists account a in the fleet policy and writes
// its ProviderConfig. The policy file keeps its comments and layout.
func Add(t *fleettree.Tree, a spokeaccounts.Account) (*treeedit.Change, error) {
	b, err := t.ReadFile(policy.RelPath)
	if err != nil {
		return nil, err
	}
	pol, err := policy.Parse(b, policy.RelPath)
	if err != nil {
		return nil, err
	}
	if _, ok := pol.Account(a.ID); ok {
		return nil, fmt.Errorf("account %s is already a spoke account of the fleet policy (spec.accounts)", a.ID)
	}
	edited, err := appendAccount(b, a)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", policy.RelPath, err)
	}
	// The result must be a policy the checks accept (the entry's form).
	if _, err := policy.Parse(edited, policy.RelPath); err != nil {
		return nil, err
	}
	kpath := Dir + "/" + fleettree.Kustomization
	k, err := t.ReadFile(kpath)
	if err != nil {
		return nil, err
	}
	k, err = kustfile.Add(k, path.Base(ProviderConfigRel(a.ID)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kpath, err)
	}
	c := treeedit.New()
	c.Write(policy.RelPath, edited)
	c.Write(ProviderConfigRel(a.ID), ProviderConfig(a))
	c.Write(kpath, k)
	return c, nil
}

// appendAccount adds a to spec.accounts of the policy document b.
func appendAccount(b []byte, a spokeaccounts.Account) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("not one YAML document")
	}
	spec := value(doc.Content[0], "spec")
	if spec == nil || spec.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("no spec mapping")
	}
	list := value(spec, "accounts")
	if list == nil {
		list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		spec.Content = append(spec.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "accounts"}, list)
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("spec.accounts is not a list")
	}
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	// The ID in quotes: 12 digits would otherwise read as a number.
	id := str(a.ID)
	id.Style = yaml.DoubleQuotedStyle
	list.Content = append(list.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		str("id"), id, str("roleArn"), str(a.RoleARN), str("externalId"), str(a.ExternalID),
	}})
	list.Style = 0 // block style, also when the list was "[]"
	var out bytes.Buffer
	e := yaml.NewEncoder(&out)
	e.SetIndent(2)
	if err := e.Encode(&doc); err != nil {
		return nil, err
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// value is the value of key in mapping m (nil if absent).
func value(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Finding is one way the tree's ProviderConfigs differ from the policy.
type Finding struct {
	File    string
	Message string
}

// Findings reports every account of pol without exactly its generated
// ProviderConfig listed in Dir, and every file or listing in Dir for an
// account pol does not have.
func Findings(t *fleettree.Tree, pol *policy.Policy) []Finding {
	var out []Finding
	kpath := Dir + "/" + fleettree.Kustomization
	k, err := t.ReadFile(kpath)
	if errors.Is(err, fs.ErrNotExist) && len(pol.Accounts) == 0 {
		return nil // a tree without spoke accounts needs none
	}
	if err != nil {
		return []Finding{{File: kpath, Message: fmt.Sprintf("cannot read: %v (the hub's ProviderConfigs of the spoke accounts are listed there)", err)}}
	}
	listed, err := kustfile.Resources(k)
	if err != nil {
		return []Finding{{File: kpath, Message: err.Error()}}
	}
	want := map[string]bool{}
	for _, a := range pol.Accounts {
		rel := ProviderConfigRel(a.ID)
		want[path.Base(rel)] = true
		got, err := t.ReadFile(rel)
		switch {
		case err != nil:
			out = append(out, Finding{File: rel, Message: fmt.Sprintf("account %s of the fleet policy has no ProviderConfig: the hub's Crossplane cannot reach it (fleet account add writes both)", a.ID)})
		case !bytes.Equal(got, ProviderConfig(a)):
			out = append(out, Finding{File: rel, Message: fmt.Sprintf("differs from the fleet policy's entry for account %s (role, external ID): write it again with fleet account add after removing both, or restore it", a.ID)})
		}
		if !slices.Contains(listed, path.Base(rel)) {
			out = append(out, Finding{File: kpath, Message: fmt.Sprintf("does not list %s, so Flux never applies account %s's ProviderConfig", path.Base(rel), a.ID)})
		}
	}
	entries, _ := t.ReadDir(Dir)
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || n == fleettree.Kustomization || !strings.HasSuffix(n, ".yaml") {
			continue
		}
		if !want[n] {
			out = append(out, Finding{File: Dir + "/" + n, Message: fmt.Sprintf("a ProviderConfig for account %s, which the fleet policy does not list (spec.accounts): remove it or list the account", strings.TrimSuffix(n, ".yaml"))})
		}
	}
	for _, r := range listed {
		if !want[r] {
			out = append(out, Finding{File: kpath, Message: fmt.Sprintf("lists %s, which is not the ProviderConfig of an account of the fleet policy", r)})
		}
	}
	return out
}
