package hub

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/components/spokeaccount"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// Outputs of a spoke-account stack.
const (
	OutAccountID           = "accountId"
	OutAccountRoleARN      = "crossplaneAccountRoleArn"
	OutAccountExternalID   = "externalId"
	OutAccountBoundaryARN  = OutBoundaryARN
	OutFleetPolicyAccount  = "fleetPolicyAccount"
	OutAccountSCP          = OutFleetAccountSCP
	OutAccountNextSteps    = OutNextSteps
	AccountResource        = "account"
	accountDescriptionHint = "the hub's own account needs no spoke-account stack: its spokes use the hub stack's boundary and Crossplane role"
)

// Account is everything a spoke-account stack made.
type Account struct {
	Config  stacks.AccountConfig
	Env     hubiam.Env
	Account *spokeaccount.SpokeAccount
	// Outputs are the stack outputs, by name.
	Outputs map[string]pulumi.Output
}

// BuildAccount registers what hub cfg.HubName needs in the deploying
// account, which must be another than the hub's and, as acct reads it,
// hold nothing of another's the fence depends on; and exports the stack
// outputs.
func BuildAccount(ctx *pulumi.Context, cfg stacks.AccountConfig, acct preflight.Reader) (*Account, error) {
	if errs := stacks.ValidateAccount(cfg); len(errs) > 0 {
		return nil, stacks.Join(ctx.Stack(), errs)
	}
	dep, err := lookUpDeployer(ctx)
	if err != nil {
		return nil, err
	}
	if dep.AccountID == cfg.HubAccountID {
		return nil, stacks.Join(ctx.Stack(), []error{&stacks.Error{
			Field: stacks.FullKey(stacks.HubAccountIDKey), Value: cfg.HubAccountID,
			Allowed: "an account other than the one this stack deploys into (" + dep.AccountID + "): " + accountDescriptionHint,
		}})
	}
	if err := checkAccount(ctx, acct, preflight.Fleet{Hub: cfg.HubName}, dep.AccountID, cfg.Region); err != nil {
		return nil, err
	}
	env := hubiam.Env{Partition: dep.Partition, AccountID: cfg.HubAccountID, Region: cfg.Region, HubName: cfg.HubName}.InAccount(dep.AccountID)
	if err := env.Validate(); err != nil {
		return nil, err
	}
	tags := map[string]string{}
	for k, v := range cfg.Tags {
		tags[k] = v
	}
	tags[stacks.HubTagKey] = cfg.HubName
	tags[stacks.StackTagKey] = ctx.Stack()
	a := &Account{Config: cfg, Env: env}
	q := query(ctx, dep.AccountID, cfg.Region)
	a.Account, err = spokeaccount.New(ctx, AccountResource, spokeaccount.Args{
		Env: env, ExternalID: cfg.ExternalID, Tags: pulumi.ToStringMap(tags),
		DeleteCheck: func(c context.Context) error {
			return preflight.CheckNoSpokes(c, acct, ctx.Stack(), cfg.HubName, hubiam.AccountRoleName(cfg.HubName), clusterinfo.SpokeRolePrefixFor(cfg.HubName), q)
		},
	})
	if err != nil {
		return nil, err
	}
	entry := a.Account.RoleArn.ApplyT(func(role string) (string, error) {
		b, err := json.Marshal(spokeaccounts.Account{ID: env.AccountID, RoleARN: role, ExternalID: cfg.ExternalID})
		return string(b), err
	}).(pulumi.StringOutput)
	a.Outputs = map[string]pulumi.Output{
		OutAccountID:          a.Account.AccountID,
		OutAccountRoleARN:     a.Account.RoleArn,
		OutAccountExternalID:  a.Account.ExternalID,
		OutAccountBoundaryARN: a.Account.BoundaryArn,
		OutFleetPolicyAccount: entry,
		OutAccountSCP:         pulumi.String(hubiam.FleetAccountSCP(env, []string{dep.IssuerARN}).MustJSON()).ToStringOutput(),
		OutAccountNextSteps:   pulumi.String(AccountNextSteps(cfg, env.AccountID)).ToStringOutput(),
	}
	for name, o := range a.Outputs {
		ctx.Export(name, o)
	}
	return a, nil
}

// AccountNextSteps is what the platform team does after a spoke account's
// first `pulumi up`.
func AccountNextSteps(cfg stacks.AccountConfig, account string) string {
	return strings.Join([]string{
		"1. Let hub " + cfg.HubName + "'s Crossplane assume this account's role: in the hub's stack,",
		"     pulumi config set --path '" + stacks.SpokeAccountsKey + "[<n>]' " + account + " && pulumi up",
		"2. List the account in the fleet policy (spec.accounts), with this stack's output:",
		"     pulumi stack output " + OutFleetPolicyAccount,
		"3. Claims may then name spec.account " + account + " (fleet cluster add --account " + account + ").",
		"4. From the organization's management account, attach the service control policy",
		"     pulumi stack output " + OutAccountSCP,
		"   to this account (and the hub's): only the fleet's principals then create EKS OIDC providers, launch templates, clusters and node groups there.",
	}, "\n")
}
