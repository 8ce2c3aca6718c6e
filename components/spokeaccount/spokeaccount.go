// Package spokeaccount is the SpokeAccount component: what a hub needs in an
// AWS account of spokes other than its own, and nothing else. The
// spokes' permissions boundary (hubiam.SpokeBoundary of the account, under
// the name it has in the hub's account) and the role the hub's Crossplane
// assumes there (hubiam.AccountRoleName), trusted by the hub's Crossplane
// role alone and only with the account's external ID, holding the hub
// Crossplane's fence for that account's spokes. Its outputs are the fleet
// policy's entry for the account. A DeleteGuard keeps all of it while the
// account still holds anything of the hub's spokes (Args.DeleteCheck).
package spokeaccount

import (
	"context"
	"errors"
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/components/deleteguard"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
)

// Type is the component's Pulumi type token.
const Type = "eks-fleet:index:SpokeAccount"

// Args configures a SpokeAccount.
type Args struct {
	// Env is the hub in this account (hubiam.Env.InAccount): the hub's
	// name, partition and account, and this account's ID.
	Env hubiam.Env
	// ExternalID is what the hub's Crossplane must present to assume the
	// account role (its ProviderConfig's assumeRoleChain externalID).
	ExternalID string
	Tags       pulumi.StringMapInput
	// DeleteCheck refuses the account's deletion while it returns an
	// error: the hub's Crossplane deletes its spokes' resources in the
	// account through the account role, so the role may not go while any
	// remains (a DeleteGuard stands before every resource here).
	DeleteCheck func(ctx context.Context) error
}

// SpokeAccount is the boundary, the account role, its policy and the
// attachment.
type SpokeAccount struct {
	pulumi.ResourceState

	Boundary   *iam.Policy
	Role       *iam.Role
	Policy     *iam.Policy
	Attachment *iam.RolePolicyAttachment
	// Guard stands before the four on delete (DeleteCheck).
	Guard *deleteguard.DeleteGuard

	AccountID   pulumi.StringOutput `pulumi:"accountId"`
	RoleArn     pulumi.StringOutput `pulumi:"roleArn"`
	BoundaryArn pulumi.StringOutput `pulumi:"boundaryArn"`
	ExternalID  pulumi.StringOutput `pulumi:"externalId"`
}

// Check reports args that would build a wrong account: an Env that is not
// a spoke account's (the hub's own account, or holes in its ARNs) or an
// external ID STS refuses.
func (a Args) Check() error {
	var errs []error
	if err := a.Env.Validate(); err != nil {
		errs = append(errs, err)
	}
	if a.Env.HubAccountID == "" || a.Env.HubAccountID == a.Env.AccountID {
		errs = append(errs, fmt.Errorf("account %s is the hub's own (%q): a spoke account is another account (its hub's boundary and roles are the hub stack's)", a.Env.AccountID, a.Env.HubAccountID))
	}
	if err := hubiam.CheckExternalID(a.ExternalID); err != nil {
		errs = append(errs, err)
	}
	if a.DeleteCheck == nil {
		errs = append(errs, errors.New("no DeleteCheck: the account role would go while spokes it deletes remain"))
	}
	return errors.Join(errs...)
}

// Resources returns the component's custom resources, for DependsOn.
func (c *SpokeAccount) Resources() []pulumi.Resource {
	return []pulumi.Resource{c.Boundary, c.Role, c.Policy, c.Attachment}
}

// New registers a SpokeAccount.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*SpokeAccount, error) {
	if err := args.Check(); err != nil {
		return nil, fmt.Errorf("spokeaccount %s: %w", name, err)
	}
	e := args.Env
	boundary, err := hubiam.SpokeBoundary(e).JSON()
	if err != nil {
		return nil, fmt.Errorf("spokeaccount %s: boundary: %w", name, err)
	}
	policy, err := hubiam.Crossplane(e).JSON()
	if err != nil {
		return nil, fmt.Errorf("spokeaccount %s: policy: %w", name, err)
	}
	trust, err := hubiam.AccountRoleTrust(e, args.ExternalID).JSON()
	if err != nil {
		return nil, fmt.Errorf("spokeaccount %s: trust: %w", name, err)
	}
	c := &SpokeAccount{}
	if err := ctx.RegisterComponentResource(Type, name, c, opts...); err != nil {
		return nil, fmt.Errorf("register SpokeAccount %s: %w", name, err)
	}
	parent := pulumi.Parent(c)
	hub := e.HubName
	if c.Boundary, err = iam.NewPolicy(ctx, name+"-boundary", &iam.PolicyArgs{
		Name:        pulumi.String(hubiam.BoundaryPolicyName(hub)),
		Description: pulumi.String("Permissions boundary of every spoke IAM role of hub " + hub + " in this account"),
		Policy:      pulumi.String(boundary),
		Tags:        args.Tags,
	}, parent); err != nil {
		return nil, fmt.Errorf("spokeaccount %s: boundary: %w", name, err)
	}
	if c.Role, err = iam.NewRole(ctx, name, &iam.RoleArgs{
		Name:             pulumi.String(hubiam.AccountRoleName(hub)),
		Description:      pulumi.String("Assumed by hub " + hub + "'s Crossplane (" + e.CrossplaneRoleARN() + ") to manage its spokes in this account"),
		AssumeRolePolicy: pulumi.String(trust),
		Tags:             args.Tags,
	}, parent); err != nil {
		return nil, fmt.Errorf("spokeaccount %s: role: %w", name, err)
	}
	if c.Policy, err = iam.NewPolicy(ctx, name, &iam.PolicyArgs{
		Name:        pulumi.String(hubiam.AccountRoleName(hub)),
		Description: pulumi.String("What hub " + hub + "'s Crossplane may do in this account: its spokes only"),
		Policy:      pulumi.String(policy),
		Tags:        args.Tags,
	}, parent); err != nil {
		return nil, fmt.Errorf("spokeaccount %s: policy: %w", name, err)
	}
	if c.Attachment, err = iam.NewRolePolicyAttachment(ctx, name, &iam.RolePolicyAttachmentArgs{
		Role:      c.Role.Name,
		PolicyArn: c.Policy.Arn,
	}, parent); err != nil {
		return nil, fmt.Errorf("spokeaccount %s: attachment: %w", name, err)
	}
	if c.Guard, err = deleteguard.New(ctx, name+"-guard", deleteguard.Args{
		Guarded: c.Resources(), Check: args.DeleteCheck,
	}, parent); err != nil {
		return nil, fmt.Errorf("spokeaccount %s: %w", name, err)
	}
	c.AccountID = pulumi.String(e.AccountID).ToStringOutput()
	c.RoleArn = c.Role.Arn
	c.BoundaryArn = c.Boundary.Arn
	c.ExternalID = pulumi.String(args.ExternalID).ToStringOutput()
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"accountId":   c.AccountID,
		"roleArn":     c.RoleArn,
		"boundaryArn": c.BoundaryArn,
		"externalId":  c.ExternalID,
	}); err != nil {
		return nil, fmt.Errorf("spokeaccount %s: outputs: %w", name, err)
	}
	return c, nil
}
