// Package secretstore decides which namespaces a ClusterSecretStore serves,
// as External Secrets Operator does.
//
// The rule is ESO's own, at the pinned release (external-secrets v0.20.4,
// pkg/controllers/secretstore/client_manager.go, shouldProcessSecret, lines
// 227-279): a ClusterSecretStore without spec.conditions serves every
// namespace; otherwise a namespace is served when, for any condition, its
// labels match the namespaceSelector or the label
// kubernetes.io/metadata.name equals one of namespaces, or its name matches
// one of namespaceRegexes. ESO is not imported: the function is unexported
// and the module would pull every secret provider into fleet; the
// selectors are evaluated with the same apimachinery code ESO calls.
package secretstore

import (
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// NameLabel is the label the API server sets on every Namespace.
const NameLabel = "kubernetes.io/metadata.name"

// condition is one entry of spec.conditions (ESO v1 ClusterSecretStoreCondition).
type condition struct {
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	Namespaces        []string              `json:"namespaces,omitempty"`
	NamespaceRegexes  []string              `json:"namespaceRegexes,omitempty"`
}

// Store is a ClusterSecretStore's namespace conditions.
type Store struct {
	Name       string
	conditions []condition
}

// FromObject reads a ClusterSecretStore.
func FromObject(o *unstructured.Unstructured) (*Store, error) {
	raw, _, err := unstructured.NestedSlice(o.Object, "spec", "conditions")
	if err != nil {
		return nil, fmt.Errorf("ClusterSecretStore %s: spec.conditions: %w", o.GetName(), err)
	}
	s := &Store{Name: o.GetName()}
	for i, c := range raw {
		m, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ClusterSecretStore %s: spec.conditions[%d] is not an object", o.GetName(), i)
		}
		var cond condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond); err != nil {
			return nil, fmt.Errorf("ClusterSecretStore %s: spec.conditions[%d]: %w", o.GetName(), i, err)
		}
		s.conditions = append(s.conditions, cond)
	}
	return s, nil
}

// Unconditioned reports whether the store serves every namespace.
func (s *Store) Unconditioned() bool { return len(s.conditions) == 0 }

// NamedNamespaces are the namespaces the conditions list by name: each is
// served once it exists, whether or not the tree creates it.
func (s *Store) NamedNamespaces() []string {
	var out []string
	for _, c := range s.conditions {
		out = append(out, c.Namespaces...)
	}
	return out
}

// Serves reports whether ESO lets an ExternalSecret in namespace ns (with
// the Namespace's labels nsLabels; NameLabel is added as the API server
// does) use the store.
func (s *Store) Serves(ns string, nsLabels map[string]string) (bool, error) {
	if s.Unconditioned() {
		return true, nil
	}
	set := labels.Set{}
	for k, v := range nsLabels {
		set[k] = v
	}
	// The API server always sets this label to the name: it cannot be forged.
	set[NameLabel] = ns
	for _, c := range s.conditions {
		var sels []*metav1.LabelSelector
		if c.NamespaceSelector != nil {
			sels = append(sels, c.NamespaceSelector)
		}
		for _, n := range c.Namespaces {
			sels = append(sels, &metav1.LabelSelector{MatchLabels: map[string]string{NameLabel: n}})
		}
		for _, ls := range sels {
			sel, err := metav1.LabelSelectorAsSelector(ls)
			if err != nil {
				return false, fmt.Errorf("ClusterSecretStore %s: label selector %v: %w", s.Name, ls, err)
			}
			if sel.Matches(set) {
				return true, nil
			}
		}
		for _, re := range c.NamespaceRegexes {
			ok, err := regexp.MatchString(re, ns)
			if err != nil {
				return false, fmt.Errorf("ClusterSecretStore %s: namespaceRegexes %q: %w", s.Name, re, err)
			}
			if ok {
				return true, nil
			}
		}
	}
	return false, nil
}
