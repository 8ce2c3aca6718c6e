// Package irsarole is the IrsaRole component: an IAM role that a set of
// Kubernetes service accounts (each one exact, or every account with a name
// prefix) assume through the cluster's OIDC provider (IRSA), with one
// managed policy and an optional permissions boundary.
package irsarole

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Type is the component's Pulumi type token.
const Type = "eks-fleet:index:IrsaRole"

// Audience is the token audience IRSA uses.
const Audience = "sts.amazonaws.com"

// Trust statement ids: exact subjects and subject prefixes need different
// condition operators, and IAM ANDs the operators of one statement, so each
// kind gets its own statement (IAM ORs statements).
const (
	SidExact  = "ServiceAccounts"
	SidPrefix = "ServiceAccountPrefixes"
)

// Args configures an IrsaRole.
type Args struct {
	// RoleName is the IAM role's (and its policy's) name.
	RoleName string
	// OIDCProviderARN is the cluster's IAM OIDC provider.
	OIDCProviderARN pulumi.StringInput
	// OIDCIssuer is the issuer host and path without https://
	// (oidc.eks.<region>.amazonaws.com/id/<id>).
	OIDCIssuer pulumi.StringInput
	// ServiceAccounts may assume the role (at least one, each once); one
	// with Prefix set lets every account whose name starts with Name.
	ServiceAccounts []serviceaccounts.ServiceAccount
	// PolicyJSON is the role's permissions policy document.
	PolicyJSON pulumi.StringInput
	// PermissionsBoundary is an optional managed policy ARN capping the role.
	PermissionsBoundary pulumi.StringPtrInput
	Tags                pulumi.StringMapInput
}

// IrsaRole is the role, its policy and the attachment.
type IrsaRole struct {
	pulumi.ResourceState

	Role       *iam.Role
	Policy     *iam.Policy
	Attachment *iam.RolePolicyAttachment

	RoleArn  pulumi.StringOutput `pulumi:"roleArn"`
	RoleName pulumi.StringOutput `pulumi:"roleName"`
}

// CheckServiceAccounts reports what makes sas unusable as a trust policy's
// subjects: none at all, an empty namespace or name, an IAM wildcard (* or
// ?) in either, or the same account twice.
func CheckServiceAccounts(sas []serviceaccounts.ServiceAccount) error {
	if len(sas) == 0 {
		return fmt.Errorf("ServiceAccounts is empty: list at least one service account")
	}
	seen := map[string]bool{}
	for i, sa := range sas {
		if sa.Namespace == "" || sa.Name == "" {
			return fmt.Errorf("ServiceAccounts[%d] %q: needs a namespace and a name", i, sa.Subject())
		}
		if strings.ContainsAny(sa.Namespace+sa.Name, "*?") {
			return fmt.Errorf("ServiceAccounts[%d] %q: * and ? are IAM wildcards; set Prefix instead", i, sa.Subject())
		}
		if seen[sa.Subject()] {
			return fmt.Errorf("ServiceAccounts[%d] %q: listed twice", i, sa.Subject())
		}
		seen[sa.Subject()] = true
	}
	return nil
}

// TrustPolicy is the role's trust policy: the OIDC provider may vouch for
// tokens whose audience is sts.amazonaws.com and whose subject is one of
// sas. Exact subjects go in one statement under StringEquals, prefixes
// ("...:name*") in another under StringLike; a list of subjects is an OR,
// and every statement also conditions on :aud. Subjects are sorted, and a
// lone subject is written as a string, so the document is stable.
func TrustPolicy(providerARN, issuer string, sas []serviceaccounts.ServiceAccount) policydoc.Document {
	var exact, prefixes []string
	for _, sa := range sas {
		if sa.Prefix {
			prefixes = append(prefixes, sa.Subject())
		} else {
			exact = append(exact, sa.Subject())
		}
	}
	statement := func(sid string) policydoc.Statement {
		return policydoc.Statement{
			Sid:       sid,
			Effect:    policydoc.Allow,
			Principal: map[string]any{"Federated": providerARN},
			Action:    []string{"sts:AssumeRoleWithWebIdentity"},
			Condition: map[string]map[string]any{
				"StringEquals": {issuer + ":aud": Audience},
			},
		}
	}
	var sts []policydoc.Statement
	if len(exact) > 0 {
		st := statement(SidExact)
		st.Condition["StringEquals"][issuer+":sub"] = subjects(exact)
		sts = append(sts, st)
	}
	if len(prefixes) > 0 {
		st := statement(SidPrefix)
		st.Condition["StringLike"] = map[string]any{issuer + ":sub": subjects(prefixes)}
		sts = append(sts, st)
	}
	return policydoc.NewDocument(sts...)
}

// subjects is a condition value: one string, or a sorted list.
func subjects(s []string) any {
	slices.Sort(s)
	if len(s) == 1 {
		return s[0]
	}
	return s
}

// describe names the accounts, sorted like the trust policy's subjects,
// for the role's and policy's descriptions.
func describe(sas []serviceaccounts.ServiceAccount) string {
	names := make([]string, 0, len(sas))
	for _, sa := range sas {
		names = append(names, sa.Subject())
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Resources returns the role, its policy and the attachment: the custom
// resources to name in another resource's DependsOn. Depending on the
// component itself is not enough: the Go SDK expands a component into its
// children while the dependent registers, concurrently with the children's
// own registration, so a child may be missed.
func (c *IrsaRole) Resources() []pulumi.Resource {
	return []pulumi.Resource{c.Role, c.Policy, c.Attachment}
}

// New registers an IrsaRole.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*IrsaRole, error) {
	if args.RoleName == "" || args.OIDCProviderARN == nil || args.OIDCIssuer == nil || args.PolicyJSON == nil {
		return nil, fmt.Errorf("irsarole %s: RoleName, OIDCProviderARN, OIDCIssuer and PolicyJSON are required", name)
	}
	if err := CheckServiceAccounts(args.ServiceAccounts); err != nil {
		return nil, fmt.Errorf("irsarole %s: %w", name, err)
	}
	c := &IrsaRole{}
	if err := ctx.RegisterComponentResource(Type, name, c, opts...); err != nil {
		return nil, fmt.Errorf("register IrsaRole %s: %w", name, err)
	}
	parent := pulumi.Parent(c)
	sas := slices.Clone(args.ServiceAccounts)
	trust := pulumi.All(args.OIDCProviderARN, args.OIDCIssuer).ApplyT(func(v []any) (string, error) {
		return TrustPolicy(v[0].(string), v[1].(string), sas).JSON()
	}).(pulumi.StringOutput)

	role, err := iam.NewRole(ctx, name, &iam.RoleArgs{
		Name:                pulumi.String(args.RoleName),
		Description:         pulumi.String("IRSA role of " + describe(sas)),
		AssumeRolePolicy:    trust,
		PermissionsBoundary: args.PermissionsBoundary,
		Tags:                args.Tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("irsarole %s: role: %w", name, err)
	}
	// A name prefix: the description is ForceNew, and a replacement is
	// created before the old policy is deleted, so it needs a new name.
	policy, err := iam.NewPolicy(ctx, name, &iam.PolicyArgs{
		NamePrefix:  pulumi.String(args.RoleName + "-"),
		Description: pulumi.String("Permissions of " + describe(sas)),
		Policy:      args.PolicyJSON,
		Tags:        args.Tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("irsarole %s: policy: %w", name, err)
	}
	att, err := iam.NewRolePolicyAttachment(ctx, name, &iam.RolePolicyAttachmentArgs{
		Role:      role.Name,
		PolicyArn: policy.Arn,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("irsarole %s: attachment: %w", name, err)
	}
	c.Role, c.Policy, c.Attachment = role, policy, att
	c.RoleArn, c.RoleName = role.Arn, role.Name
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"roleArn":   role.Arn,
		"roleName":  role.Name,
		"policyArn": policy.Arn,
	}); err != nil {
		return nil, fmt.Errorf("irsarole %s: outputs: %w", name, err)
	}
	return c, nil
}
