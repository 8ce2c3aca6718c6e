package aws

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Authorizer decides every call the stand-in makes for a provider as AWS
// would: with the real IAM evaluator (internal/iam/iamsim), the acting
// role's identity policies, its permissions boundary and its tags, on the
// resources the call names with their tags. Roles the Pulumi program made
// (the hub's) are given; roles made in the account (a spoke's, by the
// hub's Crossplane) are read from the Ledger with the policies put on and
// attached to them. Decisions are cached by request, so a resource at
// rest costs no evaluation.
type Authorizer struct {
	Eval *iamsim.Server
	// Policies are managed policies by ARN (the spokes' boundary, AWS
	// managed policies attached to roles made in the account).
	Policies map[string]policydoc.Document
	// Roles are roles made outside the stand-in, by ARN.
	Roles map[string]Role
	// ResourcePolicies are the resource-based policies of resources made
	// outside the stand-in, by ARN (a KMS key's key policy: KMS allows
	// nothing its key policy does not, whatever the caller's policies).
	ResourcePolicies map[string]policydoc.Document
	// Session names the web identity session of the acting roles.
	Session string
	// Catalogue is the AWS action catalogue's entry of every action the
	// calls make (NewAuthorizer reads it).
	Catalogue map[string]iamsim.Action

	mu    sync.Mutex
	cache map[string]string
	// prepared are the acting roles made ready for evaluation (documents
	// resolved), by ARN.
	prepared map[string]preparedRole
	// asked counts the requests decided, evaluated the ones the
	// evaluator ran (the rest were cached).
	asked, evaluated int
	// denied are the calls denied, in AWS's words.
	denied []string
}

// Role is an IAM role: its inline policies, the managed policies attached
// to it, its permissions boundary (ARN, or empty) and tags.
type Role struct {
	Inline   []policydoc.Document
	Attached []string
	Boundary string
	Tags     map[string]string
}

// NewAuthorizer starts the evaluator of the IAM tool in toolDir and reads
// the catalogue entry of every action providerCalls makes.
func NewAuthorizer(toolDir string, policies map[string]policydoc.Document, roles map[string]Role) (*Authorizer, error) {
	var actions []string
	for _, tc := range providerCalls {
		for _, l := range [][]call{tc.create, tc.observe, tc.update, tc.delete} {
			for _, c := range l {
				actions = append(actions, c.action)
			}
		}
	}
	actions = append(actions, "ec2:CreateTags")
	slices.Sort(actions)
	cat, err := iamsim.Expand(toolDir, slices.Compact(actions))
	if err != nil {
		return nil, err
	}
	if len(cat.Unmatched) > 0 {
		return nil, fmt.Errorf("stand-in: actions the AWS catalogue does not know: %v", cat.Unmatched)
	}
	byName := map[string]iamsim.Action{}
	for _, a := range cat.Actions {
		byName[strings.ToLower(a.Action)] = a
	}
	eval, err := iamsim.Serve(toolDir)
	if err != nil {
		return nil, err
	}
	return &Authorizer{Eval: eval, Policies: policies, Roles: roles, Catalogue: byName, Session: "aws-go-sdk-1764000000000000000"}, nil
}

// takesRequestTags reports whether IAM evaluates the request's tags on a
// resource of type typ for action, as the catalogue says (aws:RequestTag
// among the keys the action adds for the type, or among the action's own
// keys when it names no resource). A type the catalogue does not list for
// the action is the stand-in's error: its ARN would be evaluated wrongly.
func (a *Authorizer) takesRequestTags(action, typ string) (bool, error) {
	e, ok := a.Catalogue[strings.ToLower(action)]
	if !ok {
		return false, fmt.Errorf("stand-in: %s is not in the catalogue read", action)
	}
	const reqTag = "aws:RequestTag/${TagKey}"
	if typ == "*" {
		if len(e.ResourceTypes) > 0 && !e.WildcardOnly {
			return false, fmt.Errorf("stand-in: %s names resources (%v), not *", action, resourceTypeNames(e))
		}
		return slices.Contains(e.ConditionKeys, reqTag), nil
	}
	for _, rt := range e.ResourceTypes {
		if rt.Name == typ {
			// EC2 lists the request's tags on the type an action
			// creates; IAM, EKS and most others on the action.
			return slices.Contains(rt.ActionConditionKeys, reqTag) || slices.Contains(e.ConditionKeys, reqTag), nil
		}
	}
	return false, fmt.Errorf("stand-in: the catalogue lists no resource type %s for %s (%v)", typ, action, resourceTypeNames(e))
}

func resourceTypeNames(e iamsim.Action) []string {
	var out []string
	for _, rt := range e.ResourceTypes {
		out = append(out, rt.Name)
	}
	return out
}

// Close stops the evaluator.
func (a *Authorizer) Close() error { return a.Eval.Close() }

// Stats are how many requests were decided and how many of them the
// evaluator ran (the rest came from the cache).
func (a *Authorizer) Stats() (asked, evaluated int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked, a.evaluated
}

// Denied are the calls the Authorizer denied so far, in AWS's words.
func (a *Authorizer) Denied() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.denied)
}

// role is the role roleARN as IAM would evaluate it now.
func (a *Authorizer) role(roleARN string, l *Ledger) (Role, error) {
	if r, ok := a.Roles[roleARN]; ok {
		return r, nil
	}
	all := l.All()
	for _, r := range all {
		if r.Type != "aws_iam_role" || r.ARN != roleARN {
			continue
		}
		out := Role{Tags: maps.Clone(r.Tags)}
		out.Boundary, _ = r.Attrs["permissionsBoundary"].(string)
		for _, o := range all {
			if o.Attrs["role"] != r.Name {
				continue
			}
			switch o.Type {
			case "aws_iam_role_policy":
				s, _ := o.Attrs["policy"].(string)
				d, err := policydoc.Parse(s)
				if err != nil {
					return Role{}, fmt.Errorf("inline policy %s of role %s: %w", o.ID, r.Name, err)
				}
				out.Inline = append(out.Inline, d)
			case "aws_iam_role_policy_attachment":
				p, _ := o.Attrs["policyArn"].(string)
				out.Attached = append(out.Attached, p)
			}
		}
		sort.Strings(out.Attached)
		return out, nil
	}
	return Role{}, fmt.Errorf("InvalidIdentityToken: the role %s does not exist in the account", roleARN)
}

// Authorize decides one call of roleARN on resource with the request's
// condition keys (a role of Roles, or one made in the account l holds),
// and returns AWS's refusal when IAM would deny it.
func (a *Authorizer) Authorize(roleARN, account string, l *Ledger, action, resource string, keys map[string]any) error {
	return a.authorize(roleARN, account, l, []request{{action: action, resource: resource, context: keys}})
}

// preparedRole is a role's documents as the evaluator takes them, its
// principal keys and a digest of both, made once per role (a role made in
// the account again when the ledger changed).
type preparedRole struct {
	gen       uint64 // the ledger's generation; static roles: 0
	docs      map[string]policydoc.Document
	ids       []string
	boundary  string
	principal map[string]any
	digest    string
}

// prepare is roleARN ready for evaluation.
func (a *Authorizer) prepare(roleARN string, l *Ledger) (preparedRole, error) {
	_, static := a.Roles[roleARN]
	gen := uint64(0)
	if !static {
		gen = l.generation()
	}
	a.mu.Lock()
	p, ok := a.prepared[roleARN]
	a.mu.Unlock()
	if ok && p.gen == gen {
		return p, nil
	}
	role, err := a.role(roleARN, l)
	if err != nil {
		return preparedRole{}, err
	}
	p = preparedRole{gen: gen, docs: map[string]policydoc.Document{}}
	for i, d := range role.Inline {
		name := fmt.Sprintf("inline-%d", i)
		p.docs[name], p.ids = d, append(p.ids, name)
	}
	for _, arn := range role.Attached {
		d, ok := a.Policies[arn]
		if !ok {
			return preparedRole{}, fmt.Errorf("stand-in: the policy %s attached to %s is not known to the stand-in", arn, roleARN)
		}
		p.docs[arn], p.ids = d, append(p.ids, arn)
	}
	if role.Boundary != "" {
		d, ok := a.Policies[role.Boundary]
		if !ok {
			return preparedRole{}, fmt.Errorf("stand-in: the permissions boundary %s of %s is not known to the stand-in", role.Boundary, roleARN)
		}
		p.docs[role.Boundary], p.boundary = d, role.Boundary
	}
	p.principal = map[string]any{"aws:PrincipalArn": roleARN}
	for k, v := range role.Tags {
		p.principal["aws:PrincipalTag/"+k] = v
	}
	for name, d := range p.docs {
		p.docs[name] = iamsim.ResolvePrincipalTags(d, p.principal)
	}
	p.digest = digestOf(p.docs, p.principal)
	a.mu.Lock()
	if a.prepared == nil {
		a.prepared = map[string]preparedRole{}
	}
	a.prepared[roleARN] = p
	a.mu.Unlock()
	return p, nil
}

// request is one call on one resource, before evaluation.
type request struct {
	action, resource string
	context          map[string]any
	// account is the resource's account when it is not the caller's
	// (a role another account's ProviderConfig assumes).
	account string
}

// authorize evaluates reqs made by roleARN, and returns AWS's refusal of
// the first one denied.
func (a *Authorizer) authorize(roleARN, account string, l *Ledger, reqs []request) error {
	if len(reqs) == 0 {
		return nil
	}
	p, err := a.prepare(roleARN, l)
	if err != nil {
		return err
	}
	docs, ids, boundary, principal, digest := p.docs, p.ids, p.boundary, p.principal, p.digest
	var todo []iamsim.Request
	var keys []string
	var idx []int // the reqs index of each of todo
	decisions := make([]string, len(reqs))
	a.mu.Lock()
	if a.cache == nil {
		a.cache = map[string]string{}
	}
	a.asked += len(reqs)
	for i, r := range reqs {
		ctx := maps.Clone(principal)
		maps.Copy(ctx, r.context)
		k := digest + "\x00" + r.action + "\x00" + r.resource + "\x00" + digestOf(ctx)
		if d, ok := a.cache[k]; ok {
			decisions[i] = d
			continue
		}
		keys, idx = append(keys, k), append(idx, i)
		req := iamsim.Request{ID: fmt.Sprint(i), Principal: roleARN, Action: r.action, Resource: r.resource, AccountID: cmp.Or(r.account, account),
			Context: ctx, IdentityRefs: ids, BoundaryRef: boundary}
		if rp, ok := a.ResourcePolicies[r.resource]; ok {
			req.ResourcePolicy = &rp
		}
		todo = append(todo, req)
	}
	a.mu.Unlock()
	if len(todo) > 0 {
		res, err := a.Eval.Evaluate(docs, todo)
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.evaluated += len(res)
		for j, r := range res {
			if r.Decision == iamsim.Error {
				a.mu.Unlock()
				return fmt.Errorf("stand-in: the IAM evaluator cannot evaluate %s on %s: %v", todo[j].Action, todo[j].Resource, r.Errors)
			}
			a.cache[keys[j]] = r.Decision
			decisions[idx[j]] = r.Decision
		}
		a.mu.Unlock()
	}
	for i, d := range decisions {
		if d == iamsim.Allowed {
			continue
		}
		why := "because no identity-based policy allows the " + reqs[i].action + " action"
		if d == iamsim.ExplicitlyDenied {
			why = "with an explicit deny in an identity-based policy"
		} else if boundary != "" {
			// AWS names the boundary when the identity policies allow
			// the call and the boundary does not.
			without := todo[:0:0]
			ctx := maps.Clone(principal)
			maps.Copy(ctx, reqs[i].context)
			req := iamsim.Request{ID: "0", Principal: roleARN, Action: reqs[i].action, Resource: reqs[i].resource, AccountID: cmp.Or(reqs[i].account, account),
				Context: ctx, IdentityRefs: ids}
			if rp, ok := a.ResourcePolicies[reqs[i].resource]; ok {
				req.ResourcePolicy = &rp
			}
			without = append(without, req)
			if res, err := a.Eval.Evaluate(docs, without); err == nil && len(res) == 1 && res[0].Decision == iamsim.Allowed {
				why = "because no permissions boundary allows the " + reqs[i].action + " action"
			}
		}
		msg := deniedMessage(roleARN, a.Session, reqs[i].action, reqs[i].resource, why)
		a.mu.Lock()
		a.denied = append(a.denied, msg)
		a.mu.Unlock()
		return errors.New(msg)
	}
	return nil
}

// AssumedRoleARN is the ARN of a session of the role roleARN as AWS names
// its caller (arn:PARTITION:sts::ACCOUNT:assumed-role/NAME/SESSION); with
// session "" it is the prefix every session of the role shares.
func AssumedRoleARN(roleARN, session string) string {
	return strings.Replace(strings.Replace(roleARN, ":iam::", ":sts::", 1), ":role/", ":assumed-role/", 1) + "/" + session
}

// deniedMessage is AWS's refusal: EC2's UnauthorizedOperation, every other
// service's AccessDenied(Exception), both naming the caller, the action and
// the resource ("User: ... is not authorized to perform: ... on resource:
// ... because ...", the form AWS's access denied messages take since 2021;
// EC2 appends an encoded authorization message, which is not modelled).
func deniedMessage(roleARN, session, action, resource, why string) string {
	sts := AssumedRoleARN(roleARN, session)
	body := fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s %s", sts, action, resource, why)
	svc, _, _ := strings.Cut(action, ":")
	switch svc {
	case "sts":
		// STS names no reason (aws-sdk-go-v2's AssumeRole error as the
		// provider's credential cache wraps it: provider-upjet-aws v2.7.0
		// internal/clients/creds_cache.go:127-134).
		return fmt.Sprintf("api error AccessDenied: User: %s is not authorized to perform: %s on resource: %s", sts, action, resource)
	case "ec2":
		return "api error UnauthorizedOperation: You are not authorized to perform this operation. " + body
	case "iam", "sqs":
		return "api error AccessDenied: " + body
	}
	return "api error AccessDeniedException: " + body
}

func digestOf(vs ...any) string {
	b, _ := json.Marshal(vs)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:12])
}

// actingRole is the role the provider's pods run as: the IRSA annotation
// of the ServiceAccounts Crossplane made for the provider revisions (the
// DeploymentRuntimeConfig puts it there). The family's providers share one
// runtime configuration: every annotated one must name the same role.
func (p *Provider) actingRole(ctx context.Context) (string, error) {
	// The suite's clients read the API server directly: the role is read
	// again every few seconds, not for every call.
	p.mu.Lock()
	role, at := p.role, p.roleAt
	p.mu.Unlock()
	if role != "" && time.Since(at) < roleEvery {
		return role, nil
	}
	role, err := p.readActingRole(ctx)
	if err == nil {
		p.mu.Lock()
		p.role, p.roleAt = role, time.Now()
		p.mu.Unlock()
	}
	return role, err
}

// roleEvery is how long the acting role read is used.
const roleEvery = 5 * time.Second

func (p *Provider) readActingRole(ctx context.Context) (string, error) {
	l := &corev1.ServiceAccountList{}
	if err := p.Client.List(ctx, l); err != nil {
		return "", err
	}
	var roles []string
	for _, sa := range l.Items {
		owned := slices.ContainsFunc(sa.OwnerReferences, func(o metav1.OwnerReference) bool {
			return o.Kind == "ProviderRevision" && strings.HasPrefix(o.APIVersion, "pkg.crossplane.io/")
		})
		if r := sa.Annotations[fluxbootstrap.RoleARNAnnotation]; owned && r != "" && !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	switch len(roles) {
	case 0:
		return "", errors.New("failed to retrieve credentials: no provider ServiceAccount carries " + fluxbootstrap.RoleARNAnnotation + " (IRSA)")
	case 1:
		return roles[0], nil
	}
	return "", fmt.Errorf("stand-in: the providers' ServiceAccounts name different roles %v", roles)
}

// callRequests builds the requests of calls made for the resource r (of
// Terraform type tf, with arguments args; r.Tags its tags in AWS, none
// before it is created) as IAM evaluates them: one per resource each call
// names, with the request's tags on a resource type the catalogue says the
// action takes aws:RequestTag for, and each existing resource's own tags.
// created says r is being created (its tags are what the call sends);
// newTags are the tags an update sets.
func (p *Provider) callRequests(s *session, calls []call, tf string, r *Resource, args map[string]any, created bool, newTags map[string]string) ([]request, error) {
	var out []request
	for _, c := range calls {
		if c.when != nil && !c.when(args) {
			continue
		}
		var sent map[string]string
		var tagKeys []string
		switch {
		case created:
			if c.tags {
				sent = r.Tags
			}
		case slices.Contains(c.changed, "tags"):
			// updateTags: TagResource with the added or changed tags,
			// UntagResource with the removed keys, each only if any.
			sent = map[string]string{}
			for k, v := range newTags {
				if cur, ok := r.Tags[k]; !ok || cur != v {
					sent[k] = v
				}
			}
			for k := range r.Tags {
				if _, ok := newTags[k]; !ok {
					tagKeys = append(tagKeys, k)
				}
			}
			sort.Strings(tagKeys)
			if c.tags && len(sent) == 0 || !c.tags && len(tagKeys) == 0 {
				continue
			}
			if !c.tags {
				sent = nil
			}
		}
		for _, t := range c.on {
			res, rt, err := p.targetOf(s, t, r, args)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.action, err)
			}
			takesTags, err := p.IAM.takesRequestTags(c.action, t.typ)
			if err != nil {
				return nil, err
			}
			ctx := map[string]any{}
			if takesTags {
				addRequestTags(ctx, sent)
				if len(tagKeys) > 0 {
					ctx["aws:TagKeys"] = tagKeys
				}
			}
			if !(t.arg == "" && created && c.creates) {
				// what the creating call makes has no tags yet; every
				// later call finds it with the tags it was made with
				addResourceTags(ctx, rt)
			}
			for _, k := range c.keys {
				if v, ok := p.serviceKey(s, k, c, tf, r, args); ok {
					ctx[k] = v
				}
			}
			out = append(out, request{action: c.action, resource: res, context: ctx})
			if c.tagOnCreate && created && c.creates && t.arg == "" && len(sent) > 0 {
				tc := map[string]any{"ec2:CreateAction": strings.TrimPrefix(c.action, "ec2:")}
				addRequestTags(tc, sent)
				out = append(out, request{action: "ec2:CreateTags", resource: res, context: tc})
			}
		}
	}
	return out, nil
}

func addRequestTags(ctx map[string]any, tags map[string]string) {
	if len(tags) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(tags))
	for _, k := range keys {
		ctx["aws:RequestTag/"+k] = tags[k]
	}
	ctx["aws:TagKeys"] = keys
}

func addResourceTags(ctx map[string]any, tags map[string]string) {
	for k, v := range tags {
		ctx["aws:ResourceTag/"+k] = v
	}
}

// targetOf is the ARN of the resource t names, and its tags.
func (p *Provider) targetOf(s *session, t target, r *Resource, args map[string]any) (string, map[string]string, error) {
	switch {
	case t.typ == "*":
		return "*", nil, nil
	case t.arg == "":
		if r.ARN == "" {
			return "", nil, fmt.Errorf("stand-in: %s %s has no ARN", r.Type, r.ID)
		}
		return r.ARN, r.Tags, nil
	}
	v, _ := args[t.arg].(string)
	if v == "" {
		return "", nil, fmt.Errorf("stand-in: argument %s is empty", t.arg)
	}
	for _, o := range s.ledger.All() {
		if o.Type != t.tf {
			continue
		}
		match := o.ID == v || o.Name == v || o.ARN == v
		if t.tf == "aws_eks_access_entry" {
			match = o.Attrs["principalArn"] == v && o.Attrs["clusterName"] == args["clusterName"]
		}
		if match {
			if o.ARN == "" {
				return "", nil, fmt.Errorf("stand-in: %s %s has no ARN", o.Type, o.ID)
			}
			return o.ARN, o.Tags, nil
		}
	}
	// AWS authorizes on the ARN the request names even when nothing has it.
	if strings.HasPrefix(v, "arn:") {
		return v, nil, nil
	}
	return "", nil, fmt.Errorf("stand-in: no %s %q in the account for argument %s", t.tf, v, t.arg)
}

// serviceKey is the value AWS sets for a service condition key of call c
// on r, made with args.
func (p *Provider) serviceKey(in *session, key string, c call, tf string, r *Resource, args map[string]any) (any, bool) {
	s := func(k string) (any, bool) { v, ok := args[k].(string); return v, ok && v != "" }
	switch key {
	case keyBoundary:
		if tf == "aws_iam_role" {
			// the boundary the request sets (CreateRole,
			// PutRolePermissionsBoundary), else the role's own
			if c.creates || c.action == "iam:PutRolePermissionsBoundary" || r == nil {
				return s("permissionsBoundary")
			}
			v, ok := r.Attrs["permissionsBoundary"].(string)
			return v, ok && v != ""
		}
		// the boundary of the role the call acts on
		for _, o := range in.ledger.All() {
			if o.Type == "aws_iam_role" && o.Name == args["role"] {
				v, ok := o.Attrs["permissionsBoundary"].(string)
				return v, ok && v != ""
			}
		}
	case keyPolicyARN:
		return s("policyArn")
	case keyPassedToEKS:
		return "eks.amazonaws.com", true
	case keyBootstrap:
		// EKS's default is true (CreateCluster, accessConfig)
		v := true
		if ac, ok := args["accessConfig"].(map[string]any); ok {
			if b, ok := ac["bootstrapClusterCreatorAdminPermissions"].(bool); ok {
				v = b
			}
		}
		if l, ok := args["accessConfig"].([]any); ok && len(l) > 0 {
			if ac, ok := l[0].(map[string]any); ok {
				if b, ok := ac["bootstrapClusterCreatorAdminPermissions"].(bool); ok {
					v = b
				}
			}
		}
		return fmt.Sprint(v), true
	case keyPrincipalARN:
		return s("principalArn")
	case keyPolicyARNEKS:
		return s("policyArn")
	case keyAccessScope:
		if m, ok := args["accessScope"].(map[string]any); ok {
			v, ok := m["type"].(string)
			return v, ok
		}
		if l, ok := args["accessScope"].([]any); ok && len(l) > 0 {
			if m, ok := l[0].(map[string]any); ok {
				v, ok := m["type"].(string)
				return v, ok
			}
		}
	}
	return nil, false
}

// authorizeCalls authorizes the calls of op on r; nil when the provider
// runs without an Authorizer.
func (p *Provider) authorizeCalls(s *session, calls []call, tf string, r *Resource, args map[string]any, created bool, newTags map[string]string) error {
	if p.IAM == nil || len(calls) == 0 {
		return nil
	}
	reqs, err := p.callRequests(s, calls, tf, r, args, created, newTags)
	if err != nil {
		return err
	}
	return p.IAM.authorize(s.role, s.account, s.ledger, reqs)
}
