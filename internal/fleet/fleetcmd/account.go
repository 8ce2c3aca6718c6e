package fleetcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/accounts"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

func (a *app) accountCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "account",
		Short: "List AWS accounts other than the hub's where spokes may live",
		Long: `A spoke account is prepared by a spoke-account stack of the Pulumi program
(Pulumi.acct-<name>.yaml, eks-fleet:stackKind spoke-account), listed in the hub
stack's eks-fleet:spokeAccounts, and listed in the fleet policy with the hub's
ProviderConfig for it. Claims then name it in spec.account (fleet cluster add
--account).`,
		Args: maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.accountAddCmd())
	return c
}

func (a *app) accountAddCmd() *cobra.Command {
	var entry string
	var dryRun bool
	c := &cobra.Command{
		Use:   "add --entry JSON",
		Short: "List a spoke account in the fleet policy and write the hub's ProviderConfig for it",
		Long: `Writes, in one atomic change:
  gitops-system/workload-clusters/fleet-policy.yaml        the account in spec.accounts
  ` + accounts.Dir + `/<id>.yaml   the hub's ProviderConfig for it
  ` + accounts.Dir + `/kustomization.yaml   lists it

--entry is the spoke-account stack's output fleetPolicyAccount: the account ID,
the role the hub's Crossplane assumes there and the external ID. A change of the
fleet policy always needs the code owners' review.`,
		Example: `  fleet account add --entry "$(pulumi stack output fleetPolicyAccount -s acct-payments)"`,
		Args:    maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if entry == "" {
				return usageErr("--entry is required: the spoke-account stack's output (pulumi stack output fleetPolicyAccount -s acct-<name>)")
			}
			var acct spokeaccounts.Account
			dec := json.NewDecoder(bytes.NewReader([]byte(entry)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&acct); err != nil {
				return usageErr(`--entry %q: want the JSON object {"id": ..., "roleArn": ..., "externalId": ...} of pulumi stack output fleetPolicyAccount: %v`, entry, err)
			}
			return a.accountAdd(acct, dryRun)
		},
	}
	c.Flags().StringVar(&entry, "entry", "", "the spoke-account stack's output fleetPolicyAccount (JSON)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "check and print what would be written, write nothing")
	return c
}

func (a *app) accountAdd(acct spokeaccounts.Account, dryRun bool) error {
	t, err := a.openTree()
	if err != nil {
		return err
	}
	info, err := a.info()
	if err != nil {
		return err
	}
	if acct.ID == info.AccountID {
		return &exitError{code: ExitFailed, err: fmt.Errorf("account %s is the hub's own (cluster-info %s): its spokes need no entry, leave their spec.account empty", acct.ID, clusterinfo.AccountID)}
	}
	ch, err := accounts.Add(t, acct)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("account add %s: %w; nothing written", acct.ID, err)}
	}
	// The changed tree's account findings (every one is this change's:
	// the tree had none before, or they are reported as they were).
	st := t.With(ch)
	pol, err := a.loadPolicy(st)
	if err != nil {
		return err
	}
	var vs []policy.Violation
	for _, f := range accounts.Findings(st, pol) {
		vs = append(vs, policy.Violation{Family: policy.FamilyFleet, Rule: "account-provider-config", File: f.File, Message: f.Message})
	}
	if len(vs) > 0 {
		return violationsErr("account add "+acct.ID, vs)
	}
	if dryRun {
		fmt.Fprintf(a.stdout, "dry run: would write\n")
		for _, p := range ch.Paths() {
			fmt.Fprintf(a.stdout, "  %s\n", p)
		}
		return nil
	}
	if err := ch.Apply(t.Root); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	fmt.Fprintf(a.stdout, "account %s: role %s\n", acct.ID, acct.RoleARN)
	for _, p := range ch.Paths() {
		fmt.Fprintf(a.stdout, "  wrote %s\n", p)
	}
	if ids, err := clusterinfo.ParseAccounts(info.SpokeAccounts); err == nil && !slices.Contains(ids, acct.ID) {
		fmt.Fprintf(a.stdout, "\nThe hub's Crossplane may not assume into %s yet (cluster-info %s): add it to the hub stack's eks-fleet:spokeAccounts and run pulumi up.\n",
			acct.ID, clusterinfo.SpokeAccounts)
	}
	fmt.Fprintf(a.stdout, "\nNext: fleet validate, then open a pull request (a change of the fleet policy needs the code owners).\n")
	return nil
}
