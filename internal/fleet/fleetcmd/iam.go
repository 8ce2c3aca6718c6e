package fleetcmd

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitops-fleet/eks-fleet/components/irsarole"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// pendingIssuerID stands for a spoke's OIDC issuer id, which EKS assigns
// when it creates the cluster: 32 characters, as EKS's are, so sizes are
// the real ones.
var pendingIssuerID = strings.Repeat("X", 32)

// pendingDeployer stands for the role that runs pulumi up, which only the
// stack knows (its output fleetAccountScp names it): a role name of IAM's
// longest, so the size is the most it can be.
func pendingDeployer(e hubiam.Env) string {
	return fmt.Sprintf("arn:%s:iam::%s:role/%s", e.Partition, e.AccountID, strings.Repeat("X", hubiam.QuotaRoleName))
}

// pendingExternalID stands for a spoke account's external ID, a setting of
// its own stack: as long as a UUID, the form Pulumi.yaml suggests.
var pendingExternalID = strings.Repeat("X", 36)

// iamReport is what `fleet iam` prints.
type iamReport struct {
	Hub       string         `json:"hub"`
	Account   string         `json:"account"`
	Documents []hubiam.Usage `json:"documents"`
}

func (a *app) iamCmd() *cobra.Command {
	var stackFile, format string
	c := &cobra.Command{
		Use:   "iam [CLUSTER...]",
		Short: "Print every IAM document the fleet makes, with its size against AWS's quota",
		Long: `Prints the IAM documents of the hub, built by the program's own code
(internal/iam/hubiam) for the stack (--stack FILE: its hub name, region,
sealing secret name and spoke accounts, whose documents it prints too;
otherwise the --cluster-info values), and of each named
spoke, built as the composition function builds them (internal/iam/spokeiam) from
the cluster's claim: for each, the role, the kind (trust, inline, managed,
boundary, role-name), the ARN, the size IAM counts and the quota.

It also prints the service control policy to attach to every account of the
fleet (only the fleet's principals create EKS OIDC providers, launch templates,
clusters and node groups).

An OIDC issuer id (the hub's, a spoke's) is assigned by EKS, a spoke account's
external ID is its own stack's setting, and the identity that runs pulumi up is
the stack's (its output fleetAccountScp names it); all are shown as X's. Exit code 1 when
a document does not fit its quota.`,
		Example: `  fleet iam
  fleet iam payments --stack Pulumi.prod.yaml
  fleet iam payments orders -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usageErr("-o %q: allowed text, json", format)
			}
			rep, err := a.iamReport(stackFile, args)
			if err != nil {
				return err
			}
			if format == "json" {
				b, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(a.stdout, string(b))
			} else {
				printIAM(a, rep)
			}
			if err := hubiam.CheckUsages(rep.Documents); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return nil
		},
	}
	c.Flags().StringVar(&stackFile, "stack", "", "Pulumi stack file (Pulumi.<stack>.yaml) whose hub to describe")
	c.Flags().StringVarP(&format, "output", "o", "text", "output format: text or json")
	return c
}

func (a *app) iamReport(stackFile string, clusters []string) (*iamReport, error) {
	info, err := a.info()
	if err != nil {
		return nil, err
	}
	var spokeAccounts []string
	if stackFile != "" {
		cfg, errs := stacks.ParseFile(stackFile)
		if len(errs) > 0 {
			return nil, &exitError{code: ExitFailed, err: stacks.Join(stackFile, errs)}
		}
		name := cfg.SealingSecretName()
		if !strings.Contains(info.SealingSecretARN, ":secret:"+name+"-") || info.HubName != cfg.HubName || info.Region != cfg.Region {
			// the random suffix Secrets Manager adds is known after `pulumi up`
			info.SealingSecretARN = fmt.Sprintf("arn:%s:secretsmanager:%s:%s:secret:%s-??????", info.Partition, cfg.Region, info.AccountID, name)
		}
		info.HubName, info.Region = cfg.HubName, cfg.Region
		info.FluxRoleARN = fmt.Sprintf("arn:%s:iam::%s:role/%s", info.Partition, info.AccountID, hubiam.FluxRoleName(cfg.HubName))
		spokeAccounts = cfg.SpokeAccounts
	}
	env := hubiam.Env{Partition: info.Partition, AccountID: info.AccountID, Region: info.Region, HubName: info.HubName}
	if err := env.Validate(); err != nil {
		return nil, &exitError{code: ExitFailed, err: err}
	}
	rep := &iamReport{Hub: info.HubName, Account: info.AccountID, Documents: hubiam.Usages(env, info.SealingSecretARN, info.SealingKMSKeyARN)}
	// the hub's IRSA trust policies, as the program's IrsaRole writes them
	issuer := "oidc.eks." + info.Region + ".amazonaws.com/id/" + pendingIssuerID
	provider := fmt.Sprintf("arn:%s:iam::%s:oidc-provider/%s", info.Partition, info.AccountID, issuer)
	for _, r := range []struct {
		name string
		sas  []serviceaccounts.ServiceAccount
	}{
		{hubiam.CrossplaneRoleName(info.HubName), []serviceaccounts.ServiceAccount{serviceaccounts.HubCrossplaneAWS}},
		{hubiam.ExternalSecretsRoleName(info.HubName), []serviceaccounts.ServiceAccount{serviceaccounts.HubExternalSecrets}},
		{hubiam.FluxRoleName(info.HubName), serviceaccounts.HubFluxControllers()},
	} {
		d := irsarole.TrustPolicy(provider, issuer, r.sas)
		rep.Documents = append(rep.Documents, hubiam.Usage{Role: r.name, Kind: hubiam.KindTrust,
			ARN:  fmt.Sprintf("arn:%s:iam::%s:role/%s", info.Partition, info.AccountID, r.name),
			Size: policydoc.Size(d), Quota: hubiam.QuotaTrustPolicy, Document: d.MustJSON()})
	}
	// the service control policy of every account of the fleet, with the
	// identity that runs pulumi up (its stack output shows the real one)
	rep.Documents = append(rep.Documents, hubiam.FleetAccountSCPUsage(env, []string{pendingDeployer(env)}))
	// each spoke account's documents, as its spoke-account stack makes them
	if len(spokeAccounts) > 0 {
		rep.Documents = append(rep.Documents, hubiam.CrossplaneAccountsUsage(env, spokeAccounts))
		for _, id := range spokeAccounts {
			rep.Documents = append(rep.Documents, hubiam.AccountUsages(env.InAccount(id), pendingExternalID)...)
		}
	}
	if len(clusters) == 0 {
		return rep, nil
	}
	t, err := a.openTree()
	if err != nil {
		return nil, err
	}
	for _, name := range clusters {
		c, _, err := a.findClaim(t, name)
		if err != nil {
			return nil, err
		}
		spokeEnv := env
		if a := c.Claim.Spec.Account; a != "" {
			spokeEnv = env.InAccount(a)
		}
		s := spokeFor(spokeEnv, info, c.Claim.Metadata.Name, c.Claim.Spec.Region, c.Claim.Spec.AdminPrincipalARNs)
		s.SubnetIDs = spokeiam.PendingSubnetIDs(c.Claim.Spec.AvailabilityZones)
		us, err := spokeiam.Usages(s)
		if err != nil {
			return nil, &exitError{code: ExitFailed, err: fmt.Errorf("%s: %w", c.Rel, err)}
		}
		rep.Documents = append(rep.Documents, us...)
	}
	return rep, nil
}

func spokeFor(env hubiam.Env, info clusterinfo.Values[string], name, region string, admins []string) spokeiam.Spoke {
	return spokeiam.Spoke{
		Hub: env, Name: name, OIDCIssuer: "oidc.eks." + region + ".amazonaws.com/id/" + pendingIssuerID,
		AdminPrincipalARNs: admins, FluxRoleARN: info.FluxRoleARN,
	}
}

func printIAM(a *app, rep *iamReport) {
	fmt.Fprintf(a.stdout, "IAM documents of hub %s (account %s); sizes as IAM counts them (no white space)\n\n", rep.Hub, rep.Account)
	fmt.Fprintf(a.stdout, "%-48s %-9s %6s %6s  %s\n", "ROLE", "KIND", "SIZE", "QUOTA", "ARN")
	for _, u := range rep.Documents {
		mark := ""
		if !u.Fits() {
			mark = "  OVER QUOTA"
		}
		size := fmt.Sprint(u.Size)
		if u.Size == 0 && u.Document == "" && u.Kind != hubiam.KindRoleName {
			size = "-" // an attached policy measured where it is defined
		}
		fmt.Fprintf(a.stdout, "%-48s %-9s %6s %6d  %s%s\n", u.Role, u.Kind, size, u.Quota, u.ARN, mark)
	}
	for _, u := range rep.Documents {
		if u.Document == "" {
			continue
		}
		var v any
		_ = json.Unmarshal([]byte(u.Document), &v)
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(a.stdout, "\n# %s %s (%s)\n%s\n", u.Role, u.Kind, u.ARN, b)
	}
}
