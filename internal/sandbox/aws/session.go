package aws

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ProviderConfigGVK is the family's cluster-scoped ProviderConfig, which
// the fleet's cluster-scoped managed resources name (spec.providerConfigRef).
var ProviderConfigGVK = schema.GroupVersionKind{Group: "aws.upbound.io", Version: "v1beta1", Kind: "ProviderConfig"}

const (
	// errReconcileConnect is crossplane-runtime's (v2.4.0
	// pkg/reconciler/managed/reconciler.go:64): a failed Connect, which
	// runs after references are resolved and before the finalizer is
	// added (reconciler.go:1126, 1145, 1340).
	errReconcileConnect = "connect failed"
	// errTerraformSetup is upjet's wrap of the provider's setup function
	// (provider-upjet-aws v2.7.0 internal/clients/aws.go:94-160,
	// SelectTerraformSetup).
	errTerraformSetup = "cannot get terraform setup"
	// errGetProviderConfig is provider-upjet-aws v2.7.0
	// internal/clients/pc_resolver.go:20.
	errGetProviderConfig = "cannot get referenced ProviderConfig"
	// errAssumeRole is how the provider reports a refused step of the
	// assumeRoleChain: the chain's credentials are retrieved through the
	// IRSA credential cache (internal/clients/creds_cache.go:127-134,
	// "cannot retrieve the AWS credentials"; aws.go:111-125, "cache
	// manager failure"); the rest is the SDK's wrap of STS's refusal as
	// the provider's go.mod pins it: smithy-go v1.27.3 errors.go:60
	// ("operation error %s: %s, %v") around aws-sdk-go-v2 v1.42.1's
	// aws/transport/http/response_error.go ("https response error
	// StatusCode: %d, ..."). The refusal's own text after it
	// ("api error AccessDenied: User: ... is not authorized to perform:
	// sts:AssumeRole on resource: ...") is STS's.
	errAssumeRole = "cache manager failure: cannot retrieve the AWS credentials: operation error STS: AssumeRole, https response error StatusCode: 403"
)

// session is who a managed resource's calls are made as, and where: the
// account its ProviderConfig reaches, that account's ledger, and the role
// acting there (empty when the provider runs without IAM).
type session struct {
	account string
	ledger  *Ledger
	role    string
}

// session connects as the provider does for u (provider-upjet-aws v2.7.0
// internal/clients/aws.go SelectTerraformSetup, provider_config.go
// GetAWSConfigWithoutTracking and GetRoleChainConfig): the ProviderConfig
// u names (default: "default"), its IRSA credentials (the role the
// providers' pods run as, in Account), then each step of its
// assumeRoleChain in order, every one an sts:AssumeRole the Authorizer
// must allow (the caller's policies and the role's trust, with the step's
// external ID), landing in that role's account. Only the IRSA source is
// modelled, as the fleet uses only it.
func (p *Provider) session(ctx context.Context, u *unstructured.Unstructured) (*session, error) {
	name, _, _ := unstructured.NestedString(u.Object, "spec", "providerConfigRef", "name")
	if name == "" {
		name = "default"
	}
	pc, ok := p.configs[name]
	if !ok {
		// what the API server answers; the list is read again with the
		// kinds, so a ProviderConfig applied later is found then
		nf := apierrors.NewNotFound(schema.GroupResource{Group: ProviderConfigGVK.Group, Resource: "providerconfigs"}, name)
		return nil, fmt.Errorf("%s: %w", errGetProviderConfig, nf)
	}
	if src, _, _ := unstructured.NestedString(pc.Object, "spec", "credentials", "source"); src != "IRSA" {
		return nil, fmt.Errorf("stand-in: ProviderConfig %s's credentials source %q is not modelled (only IRSA is)", name, src)
	}
	s := &session{account: p.Account, ledger: p.Ledger}
	if p.IAM != nil {
		role, err := p.actingRole(ctx)
		if err != nil {
			return nil, err
		}
		s.role = role
	}
	chain, _, _ := unstructured.NestedSlice(pc.Object, "spec", "assumeRoleChain")
	for i, step := range chain {
		m, _ := step.(map[string]any)
		target, _ := m["roleARN"].(string)
		external, _ := m["externalID"].(string)
		account := accountOf(target)
		if account == "" {
			return nil, fmt.Errorf("ProviderConfig %s: spec.assumeRoleChain[%d].roleARN %q is not a role ARN", name, i, target)
		}
		if p.IAM != nil {
			if err := p.IAM.AssumeRole(s.role, s.account, s.ledger, target, external); err != nil {
				return nil, fmt.Errorf("%s, %w", errAssumeRole, err)
			}
		}
		l := p.Ledger
		if account != p.Account {
			if l = p.Accounts[account]; l == nil {
				// only without IAM: with it, a role in an account the
				// stand-in does not hold has no trust policy to allow it
				return nil, fmt.Errorf("stand-in: no account %s (ProviderConfig %s, %s)", account, name, target)
			}
		}
		s = &session{account: account, ledger: l, role: target}
	}
	return s, nil
}

// providerConfigs lists the family's ProviderConfigs by name; none when
// the kind is not served yet (no package has installed its CRD).
func (p *Provider) providerConfigs(ctx context.Context) (map[string]*unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(ProviderConfigGVK.GroupVersion().WithKind(ProviderConfigGVK.Kind + "List"))
	if err := p.Client.List(ctx, l); err != nil {
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			return map[string]*unstructured.Unstructured{}, nil
		}
		return nil, fmt.Errorf("list ProviderConfigs: %w", err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range l.Items {
		out[l.Items[i].GetName()] = &l.Items[i]
	}
	return out, nil
}

// accountOf is the account ID of an IAM ARN ("" if it is not one).
func accountOf(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" {
		return ""
	}
	return parts[4]
}

// AssumeRole decides sts:AssumeRole of target by roleARN (acting in
// account, whose roles made in the account l holds) with externalID, as
// IAM decides it across accounts: roleARN's policies must allow it, and
// target's trust policy (ResourcePolicies[target]; a role without one
// trusts no one) must allow roleARN, its condition on sts:ExternalId
// holding. The evaluator requires both when the accounts differ.
func (a *Authorizer) AssumeRole(roleARN, account string, l *Ledger, target, externalID string) error {
	ctx := map[string]any{}
	if externalID != "" {
		ctx["sts:ExternalId"] = externalID
	}
	return a.authorize(roleARN, account, l, []request{{action: "sts:AssumeRole", resource: target, context: ctx, account: accountOf(target)}})
}
