// Package rbacproof proves what a Flux Kustomization with
// spec.serviceAccountName needs from RBAC: kustomize-controller
// impersonates that account (fluxcd/pkg runtime/client impersonator) to
// apply its build with server-side apply (get, create, patch), to prune it
// (delete) and to health-check it with kstatus, whose status readers list
// what a workload owns (fluxcd/cli-utils pkg/kstatus/polling/statusreaders:
// a Deployment's ReplicaSets, a ReplicaSet's or StatefulSet's Pods).
//
// The account's rules are the Roles and ClusterRoles its bindings on the
// target cluster grant it, as the API server resolves them: a binding
// applies to the account when a subject names the ServiceAccount, its user
// name, or one of its groups (k8s.io/apiserver serviceaccount.MatchesUsername,
// MakeGroupNames). Whether those rules allow a request is decided by
// Kubernetes' own rule comparison (k8s.io/component-helpers
// auth/rbac/validation.Covers, the API server's escalation check).
package rbacproof

import (
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// Server-side apply reads (dry-run diff), creates and patches (Needs asks
// for get, patch on the object and create); PruneVerbs: garbage
// collection of removed objects and deletion.
var (
	PruneVerbs = []string{"delete"}
	ReadVerbs  = []string{"get", "list"}
)

// KstatusReads is what kstatus lists, with the applying identity, to
// compute a kind's health (fluxcd/cli-utils statusreaders: deployment.go,
// replicaset.go, statefulset.go).
var KstatusReads = map[schema.GroupKind][]schema.GroupResource{
	{Group: "apps", Kind: "Deployment"}:  {{Group: "apps", Resource: "replicasets"}, {Resource: "pods"}},
	{Group: "apps", Kind: "ReplicaSet"}:  {{Resource: "pods"}},
	{Group: "apps", Kind: "StatefulSet"}: {{Resource: "pods"}},
}

// Account is an impersonated ServiceAccount.
type Account struct{ Namespace, Name string }

// Policy is the RBAC objects on one cluster.
type Policy struct {
	Roles               map[string]*rbacv1.Role // namespace/name
	ClusterRoles        map[string]*rbacv1.ClusterRole
	RoleBindings        []*rbacv1.RoleBinding
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
}

// NewPolicy collects the RBAC objects among objs.
func NewPolicy(objs []*unstructured.Unstructured) (*Policy, error) {
	p := &Policy{Roles: map[string]*rbacv1.Role{}, ClusterRoles: map[string]*rbacv1.ClusterRole{}}
	for _, o := range objs {
		if o.GroupVersionKind().Group != rbacv1.GroupName {
			continue
		}
		var err error
		switch o.GetKind() {
		case "Role":
			r := &rbacv1.Role{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r); err == nil {
				p.Roles[r.Namespace+"/"+r.Name] = r
			}
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, r); err == nil {
				p.ClusterRoles[r.Name] = r
			}
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err == nil {
				p.RoleBindings = append(p.RoleBindings, b)
			}
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			if err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b); err == nil {
				p.ClusterRoleBindings = append(p.ClusterRoleBindings, b)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return p, nil
}

// appliesTo: does a binding subject name the account, as the API server's
// RBAC authorizer matches subjects for a service account user.
func appliesTo(subjects []rbacv1.Subject, bindingNamespace string, a Account) bool {
	u := serviceaccount.UserInfo(a.Namespace, a.Name, "")
	groups := append(u.GetGroups(), user.AllAuthenticated)
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns == a.Namespace && s.Name == a.Name {
				return true
			}
		case rbacv1.UserKind:
			if serviceaccount.MatchesUsername(a.Namespace, a.Name, s.Name) {
				return true
			}
		case rbacv1.GroupKind:
			for _, g := range groups {
				if g == s.Name {
					return true
				}
			}
		}
	}
	return false
}

func (p *Policy) roleRules(ref rbacv1.RoleRef, namespace string) []rbacv1.PolicyRule {
	switch ref.Kind {
	case "Role":
		if r := p.Roles[namespace+"/"+ref.Name]; r != nil {
			return r.Rules
		}
	case "ClusterRole":
		if r := p.ClusterRoles[ref.Name]; r != nil {
			return r.Rules
		}
	}
	return nil
}

// RulesFor is what the account may do in namespace ("" for cluster-scoped
// objects: ClusterRoleBindings only).
func (p *Policy) RulesFor(a Account, namespace string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, b := range p.ClusterRoleBindings {
		if appliesTo(b.Subjects, "", a) {
			rules = append(rules, p.roleRules(b.RoleRef, "")...)
		}
	}
	if namespace == "" {
		return rules
	}
	for _, b := range p.RoleBindings {
		if b.Namespace == namespace && appliesTo(b.Subjects, b.Namespace, a) {
			rules = append(rules, p.roleRules(b.RoleRef, namespace)...)
		}
	}
	return rules
}

// Need is one permission the account must have.
type Need struct {
	Namespace string
	Rule      rbacv1.PolicyRule
	Why       string
}

// Needs lists what applying, pruning and health-checking objs needs.
// namespaced tells whether a kind is namespaced (objects without a
// namespace of a namespaced kind get the Kustomization's namespace from
// kustomize-controller's targetNamespace/default; callers pass built
// objects, which carry it).
func Needs(objs []*unstructured.Unstructured, wait bool) []Need {
	var out []Need
	seen := map[string]bool{}
	add := func(n Need) {
		k := fmt.Sprint(n.Namespace, n.Rule.APIGroups, n.Rule.Resources, n.Rule.ResourceNames, n.Rule.Verbs)
		if !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		obj := fmt.Sprintf("%s %s", o.GetKind(), strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/"))
		rule := func(verbs []string, group, resource string) rbacv1.PolicyRule {
			return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
		}
		// get, patch and delete name the object (a rule's resourceNames
		// may allow them); create cannot be restricted by name.
		named := func(verbs []string) rbacv1.PolicyRule {
			r := rule(verbs, gvk.Group, plural.Resource)
			r.ResourceNames = []string{o.GetName()}
			return r
		}
		add(Need{o.GetNamespace(), rule([]string{"create"}, gvk.Group, plural.Resource), "apply " + obj})
		add(Need{o.GetNamespace(), named([]string{"get", "patch"}), "apply " + obj})
		add(Need{o.GetNamespace(), named(PruneVerbs), "prune " + obj})
		if !wait {
			continue
		}
		for _, gr := range KstatusReads[gvk.GroupKind()] {
			add(Need{o.GetNamespace(), rule(ReadVerbs, gr.Group, gr.Resource), "health-check " + obj + " (kstatus lists its " + gr.Resource + ")"})
		}
	}
	return out
}

// Missing returns, for each need the account's rules do not cover, a
// message naming the verbs that are missing.
func (p *Policy) Missing(a Account, needs []Need) []string {
	var out []string
	cache := map[string][]rbacv1.PolicyRule{}
	for _, n := range needs {
		rules, ok := cache[n.Namespace]
		if !ok {
			rules = p.RulesFor(a, n.Namespace)
			cache[n.Namespace] = rules
		}
		if covered, uncovered := validation.Covers(rules, []rbacv1.PolicyRule{n.Rule}); !covered {
			var verbs []string
			for _, r := range uncovered {
				verbs = append(verbs, r.Verbs...)
			}
			sort.Strings(verbs)
			where := "cluster-wide"
			if n.Namespace != "" {
				where = "in namespace " + n.Namespace
			}
			group := n.Rule.APIGroups[0]
			if group == "" {
				group = "core"
			}
			out = append(out, fmt.Sprintf("%s: service account %s/%s may not %s %s.%s %s",
				n.Why, a.Namespace, a.Name, strings.Join(verbs, ","), n.Rule.Resources[0], group, where))
		}
	}
	return out
}
