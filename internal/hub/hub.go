// Package hub wires the program's stacks: it loads and validates the
// stack's settings, then, for a hub, builds ManagementCluster, SealingKeys,
// the spoke permissions boundary, the hub's IRSA roles and FluxBootstrap,
// and for a spoke account (account.go) the SpokeAccount component; and
// exports the stack outputs. main.go only calls Run; tests run the same
// function under pulumi.WithMocks.
package hub

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws"
	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/secretsmanager"
	"github.com/pulumi/pulumi-tls/sdk/v5/go/tls"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/components/irsarole"
	"github.com/gitops-fleet/eks-fleet/components/managementcluster"
	"github.com/gitops-fleet/eks-fleet/components/sealingkeys"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// Stack output names.
const (
	OutClusterName       = "clusterName"
	OutKubeconfig        = "kubeconfig"
	OutOIDCProviderARN   = "oidcProviderArn"
	OutOIDCIssuer        = "oidcIssuer"
	OutCrossplaneRoleARN = "crossplaneRoleArn"
	OutESORoleARN        = "externalSecretsRoleArn"
	OutFluxRoleARN       = "fluxRoleArn"
	OutBoundaryARN       = "spokePermissionsBoundaryArn"
	OutSealingSecretName = "sealingSecretName"
	OutSealingSecretARN  = "sealingSecretArn"
	OutSealingCertPEM    = "sealingCertificate"
	OutDeployPublicKey   = "deployKeyPublicKey"
	OutNextSteps         = "nextStep"
	OutHubEgressCIDRs    = "hubEgressCidrs" // the NATs' public IPs as /32s
	// OutSpokeAddonVersions are the add-on versions cluster-info carries
	// (JSON), the value eks-fleet:spokeAddonVersions pins.
	OutSpokeAddonVersions = "spokeAddonVersions"
	// OutFleetAccountSCP is the service control policy to attach to every
	// account of the fleet (hubiam.FleetAccountSCP), with the identity
	// that ran this pulumi up as the deployer.
	OutFleetAccountSCP = preflight.SCPOutput
)

// Logical names of the top-level resources.
const (
	ClusterResource    = "hub"
	SealingResource    = "sealing"
	BoundaryResource   = "spoke-boundary"
	CrossplaneResource = "crossplane"
	// CrossplaneAccountsResource is the Crossplane role's policy on the
	// spoke accounts' roles.
	CrossplaneAccountsResource = "crossplane-spoke-accounts"
	ESOResource                = "external-secrets"
	FluxRoleResource           = "flux"
	FluxResource               = "flux"
	// DeployKeyResource is the hub Flux's deploy key (its name when
	// FluxBootstrap made it: flux-deploy-key).
	DeployKeyResource = FluxResource + "-deploy-key"
)

// Hub is everything the stack made.
type Hub struct {
	Config     stacks.Config
	Env        hubiam.Env
	Cluster    *managementcluster.ManagementCluster
	Sealing    *sealingkeys.SealingKeys
	Boundary   *iam.Policy
	Crossplane *irsarole.IrsaRole
	// CrossplaneAccounts lets Crossplane assume the spoke accounts' roles
	// (nil without spokeAccounts).
	CrossplaneAccounts *iam.RolePolicy
	ESO                *irsarole.IrsaRole
	FluxRole           *irsarole.IrsaRole
	// DeployKey is the Git deploy key of the hub's Flux.
	DeployKey *tls.PrivateKey
	Flux      *fluxbootstrap.FluxBootstrap
	// Outputs are the stack outputs, by name.
	Outputs map[string]pulumi.Output
}

// Program is the Pulumi program, with acct reading the deploying account
// for the pre-flight check (main passes the AWS SDK's reader, tests the
// mocks'): settings are loaded and validated before any resource is
// registered; a bad stack stops here with every problem listed. A
// spoke-account stack (stackKind spoke-account) builds BuildAccount
// instead.
func Program(acct preflight.Reader) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		raw := stacks.Read(ctx)
		if stacks.KindOf(raw) == stacks.KindSpokeAccount {
			cfg, errs := stacks.AccountFromValues(raw)
			if len(errs) > 0 {
				return stacks.Join(ctx.Stack(), errs)
			}
			_, err := BuildAccount(ctx, cfg, acct)
			return err
		}
		cfg, errs := stacks.FromValues(raw)
		if len(errs) > 0 {
			return stacks.Join(ctx.Stack(), errs)
		}
		_, err := Build(ctx, cfg, acct)
		return err
	}
}

// checkAccount is the pre-flight check of the deploying account (package
// preflight), run before the first resource is registered.
func checkAccount(ctx *pulumi.Context, acct preflight.Reader, f preflight.Fleet, accountID, region string) error {
	return preflight.Check(ctx.Context(), acct, ctx.Stack(), f, query(ctx, accountID, region))
}

// query is how the account checks read the deploying account.
func query(ctx *pulumi.Context, accountID, region string) preflight.Query {
	return preflight.Query{AccountID: accountID, Region: region, Profile: config.Get(ctx, stacks.ProfileKey)}
}

// Build registers the hub for a valid cfg, once acct shows the deploying
// account holds nothing of another's the fence depends on, and exports
// the stack outputs.
func Build(ctx *pulumi.Context, cfg stacks.Config, acct preflight.Reader) (*Hub, error) {
	if errs := stacks.Validate(cfg); len(errs) > 0 {
		return nil, stacks.Join(ctx.Stack(), errs)
	}
	dep, err := lookUpDeployer(ctx)
	if err != nil {
		return nil, err
	}
	if slices.Contains(cfg.SpokeAccounts, dep.AccountID) {
		return nil, stacks.Join(ctx.Stack(), []error{&stacks.Error{
			Field: stacks.FullKey(stacks.SpokeAccountsKey), Value: dep.AccountID,
			Allowed: "accounts other than the hub's own: " + accountDescriptionHint,
		}})
	}
	// pulumi-eks v2.8.1 always makes the creating identity cluster admin
	// (bootstrapClusterCreatorAdminPermissions, pulumi/pulumi-eks#2373);
	// a second access entry for it fails with 409 halfway through up.
	if err := CheckDeployer(cfg, dep.IssuerARN); err != nil {
		return nil, stacks.Join(ctx.Stack(), []error{err})
	}
	deployed, err := deployedHub(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := checkUpgrade(deployed, cfg); err != nil {
		return nil, stacks.Join(ctx.Stack(), []error{err})
	}
	if err := checkAccount(ctx, acct, preflight.Fleet{Hub: cfg.HubName, HubIssuer: hubIssuer(deployed)}, dep.AccountID, cfg.Region); err != nil {
		return nil, err
	}
	spokeRegions, err := NewSpokeRegions(ctx, cfg)
	if err != nil {
		return nil, err
	}
	spokeZones, err := SpokeZoneIDs(ctx, cfg, spokeRegions)
	if err != nil {
		return nil, stacks.Join(ctx.Stack(), []error{err})
	}
	spokeAddons, err := SpokeAddonVersions(ctx, cfg, spokeRegions)
	if err != nil {
		return nil, stacks.Join(ctx.Stack(), []error{err})
	}
	env := hubiam.Env{Partition: dep.Partition, AccountID: dep.AccountID, Region: cfg.Region, HubName: cfg.HubName}
	if err := env.Validate(); err != nil {
		return nil, err
	}
	h := &Hub{Config: cfg, Env: env}
	// Validation refuses stack tags with the program's keys, so these win.
	tags := map[string]string{}
	for k, v := range cfg.Tags {
		tags[k] = v
	}
	tags[stacks.HubTagKey] = cfg.HubName
	tags[stacks.StackTagKey] = ctx.Stack()
	tagInput := pulumi.ToStringMap(tags)

	h.Cluster, err = managementcluster.New(ctx, ClusterResource, managementcluster.Args{
		ClusterName:        cfg.HubName,
		Region:             cfg.Region,
		Partition:          env.Partition,
		VPCCIDR:            cfg.VPCCIDR,
		AvailabilityZones:  cfg.AvailabilityZones,
		NATMode:            cfg.NATMode,
		KubernetesVersion:  cfg.KubernetesVersion,
		InstanceTypes:      cfg.Nodes.InstanceTypes,
		AMIType:            stacks.AMIType(cfg.Nodes.InstanceTypes),
		MinSize:            cfg.Nodes.Min,
		DesiredSize:        cfg.Nodes.Desired,
		MaxSize:            cfg.Nodes.Max,
		PublicAccessCIDRs:  cfg.PublicAccessCIDRs,
		AdminPrincipalARNs: cfg.AdminPrincipalARNs,
		LogRetentionDays:   cfg.LogRetentionDays,
		Tags:               tags,
	})
	if err != nil {
		return nil, err
	}

	h.Sealing, err = sealingkeys.New(ctx, SealingResource, sealingkeys.Args{
		SecretName:         cfg.SealingSecretName(),
		RecoveryWindowDays: cfg.Sealing.RecoveryWindowDays,
		KeyIDs:             cfg.Sealing.KeyIDs,
		KMSAlias:           cfg.HubName + "-sealing",
		Partition:          env.Partition,
		AccountID:          env.AccountID,
		Tags:               tagInput,
	})
	if err != nil {
		return nil, err
	}

	sealingDoc := func(build func(e hubiam.Env, secretARN, keyARN string) policydoc.Document) pulumi.StringOutput {
		return pulumi.All(h.Sealing.SecretArn, h.Sealing.KMSKeyArn).ApplyT(func(v []any) (string, error) {
			return build(env, v[0].(string), v[1].(string)).JSON()
		}).(pulumi.StringOutput)
	}
	boundary, err := hubiam.SpokeBoundary(env).JSON()
	if err != nil {
		return nil, fmt.Errorf("spoke permissions boundary: %w", err)
	}
	h.Boundary, err = iam.NewPolicy(ctx, BoundaryResource, &iam.PolicyArgs{
		Name:        pulumi.String(hubiam.BoundaryPolicyName(cfg.HubName)),
		Description: pulumi.String("Permissions boundary of every spoke IAM role of hub " + cfg.HubName),
		Policy:      pulumi.String(boundary),
		Tags:        tagInput,
	})
	if err != nil {
		return nil, fmt.Errorf("spoke permissions boundary: %w", err)
	}

	irsa := func(res, role string, sas []serviceaccounts.ServiceAccount, policy pulumi.StringInput) (*irsarole.IrsaRole, error) {
		return irsarole.New(ctx, res, irsarole.Args{
			RoleName:        role,
			OIDCProviderARN: h.Cluster.OIDCProviderArn,
			OIDCIssuer:      h.Cluster.OIDCIssuer,
			ServiceAccounts: sas,
			PolicyJSON:      policy,
			Tags:            tagInput,
		})
	}
	if h.Crossplane, err = irsa(CrossplaneResource, hubiam.CrossplaneRoleName(cfg.HubName),
		[]serviceaccounts.ServiceAccount{serviceaccounts.HubCrossplaneAWS}, pulumi.String(hubiam.Crossplane(env).MustJSON())); err != nil {
		return nil, err
	}
	// The spoke accounts' roles, the only roles the hub's Crossplane may
	// assume (a second policy: the first is at its quota).
	if len(cfg.SpokeAccounts) > 0 {
		if h.CrossplaneAccounts, err = iam.NewRolePolicy(ctx, CrossplaneAccountsResource, &iam.RolePolicyArgs{
			Name:   pulumi.String(hubiam.CrossplaneAccountsPolicyName),
			Role:   h.Crossplane.RoleName,
			Policy: pulumi.String(hubiam.CrossplaneAccounts(env, cfg.SpokeAccounts).MustJSON()),
		}, pulumi.Parent(h.Crossplane)); err != nil {
			return nil, fmt.Errorf("crossplane spoke accounts policy: %w", err)
		}
	}
	if h.ESO, err = irsa(ESOResource, hubiam.ExternalSecretsRoleName(cfg.HubName),
		[]serviceaccounts.ServiceAccount{serviceaccounts.HubExternalSecrets}, sealingDoc(hubiam.ExternalSecrets)); err != nil {
		return nil, err
	}
	// One role for every Flux controller that applies onto spokes
	// (Kustomizations and the spoke bootstrap's HelmReleases): each spoke's
	// access entry names this one role, and FluxBootstrap annotates the
	// same service accounts with it.
	if h.FluxRole, err = irsa(FluxRoleResource, hubiam.FluxRoleName(cfg.HubName),
		serviceaccounts.HubFluxControllers(), pulumi.String(hubiam.Flux(env).MustJSON())); err != nil {
		return nil, err
	}

	// HubEgressCIDRs: the Composition adds them to every spoke's
	// publicAccessCidrs, since the hub's Flux reaches the spokes' public
	// endpoints through the hub's NAT gateways.
	info := clusterinfo.Values[pulumi.StringInput]{
		AccountID:              pulumi.String(env.AccountID),
		Region:                 pulumi.String(env.Region),
		Partition:              pulumi.String(env.Partition),
		HubName:                h.Cluster.ClusterName,
		HubVPCCIDR:             pulumi.String(cfg.VPCCIDR),
		HubEgressCIDRs:         h.Cluster.EgressCIDRs.ApplyT(clusterinfo.FormatCIDRs).(pulumi.StringOutput),
		OIDCProviderARN:        h.Cluster.OIDCProviderArn,
		OIDCIssuer:             h.Cluster.OIDCIssuer,
		CrossplaneRoleARN:      h.Crossplane.RoleArn,
		ExternalSecretsRoleARN: h.ESO.RoleArn,
		FluxRoleARN:            h.FluxRole.RoleArn,
		SpokeRolePrefix:        pulumi.String(env.SpokeRolePrefix()),
		SpokeBoundaryARN:       h.Boundary.Arn,
		SealingSecretName:      h.Sealing.SecretName,
		SealingSecretARN:       h.Sealing.SecretArn,
		SealingKMSKeyARN:       h.Sealing.KMSKeyArn,
		// The key Secrets' names are literals, carried by the SecretVersion
		// that holds their keys: cluster-info (and so the ExternalSecret of
		// a new key) changes only after Secrets Manager holds the new key.
		// Otherwise External Secrets could copy the old key into the new
		// Secret and the controller, which loads a key Secret when it
		// appears, would never load the new key.
		SealingActiveKeySecret: afterKeys(h.Sealing.Version, sealingkey.ActiveSecretName(cfg.ActiveKeyID())),
		SealingPreviousKeySecret: afterKeys(h.Sealing.Version,
			sealingkey.PreviousSecretName(cfg.ActiveKeyID(), cfg.PreviousKeyID())),
		GitURL:              pulumi.String(cfg.Git.URL),
		GitBranch:           pulumi.String(cfg.Git.Branch),
		SystemPath:          pulumi.String(cfg.SystemPath()),
		FluxVersion:         pulumi.String(versions.Flux),
		FluxOperatorVersion: pulumi.String(versions.FluxOperator),
		LogRetentionDays:    pulumi.String(strconv.Itoa(cfg.LogRetentionDays)),
		FunctionRegistry:    pulumi.String(cfg.FunctionRegistry),
		SpokeZoneIDs:        pulumi.String(clusterinfo.FormatZoneIDs(spokeZones)),
		SpokeAddonVersions:  pulumi.String(clusterinfo.FormatAddonVersions(spokeAddons)),
		SpokeAddonWaves:     pulumi.String(clusterinfo.FormatAddonWaves(cfg.SpokeAddonWaves)),
		SpokeAccounts:       pulumi.String(clusterinfo.FormatAccounts(cfg.SpokeAccounts)),
	}
	if h.DeployKey, err = NewDeployKey(ctx); err != nil {
		return nil, err
	}
	h.Flux, err = fluxbootstrap.New(ctx, FluxResource, fluxbootstrap.Args{
		DeployKey: fluxbootstrap.DeployKey{
			PrivateKeyOpenSSH: h.DeployKey.PrivateKeyOpenssh,
			PublicKeyOpenSSH:  h.DeployKey.PublicKeyOpenssh,
		},
		GitURL:       cfg.Git.URL,
		GitBranch:    cfg.Git.Branch,
		GitPath:      cfg.Git.Path,
		KnownHosts:   pulumi.String(cfg.Git.KnownHosts),
		FluxRoleARN:  h.FluxRole.RoleArn,
		ClusterInfo:  info,
		ClusterReady: []pulumi.Resource{h.Cluster.NodeGroup},
		Concurrency:  cfg.FluxConcurrency,
		// Everything Flux and Crossplane need while they delete the spokes.
		// Custom resources, not the IrsaRole components: see
		// irsarole.IrsaRole.Resources.
		TeardownAfter: slices.Concat(
			h.Crossplane.Resources(), h.ESO.Resources(), h.FluxRole.Resources(),
			[]pulumi.Resource{h.Boundary, h.Sealing.Secret, h.Sealing.Version, h.Cluster.NodeGroup},
			h.crossplaneAccounts(),
		),
	}, pulumi.Provider(h.Cluster.Provider))
	if err != nil {
		return nil, err
	}

	h.Outputs = map[string]pulumi.Output{
		OutClusterName:        h.Cluster.ClusterName,
		OutKubeconfig:         h.Cluster.Kubeconfig,
		OutOIDCProviderARN:    h.Cluster.OIDCProviderArn,
		OutOIDCIssuer:         h.Cluster.OIDCIssuer,
		OutCrossplaneRoleARN:  h.Crossplane.RoleArn,
		OutESORoleARN:         h.ESO.RoleArn,
		OutFluxRoleARN:        h.FluxRole.RoleArn,
		OutBoundaryARN:        h.Boundary.Arn,
		OutSealingSecretName:  h.Sealing.SecretName,
		OutSealingSecretARN:   h.Sealing.SecretArn,
		OutSealingCertPEM:     h.Sealing.ActiveCertPEM,
		OutDeployPublicKey:    h.Flux.DeployPublicKey,
		OutNextSteps:          pulumi.String(NextSteps(cfg)).ToStringOutput(),
		OutHubEgressCIDRs:     h.Cluster.EgressCIDRs,
		OutSpokeAddonVersions: pulumi.String(clusterinfo.FormatAddonVersions(spokeAddons)).ToStringOutput(),
		OutFleetAccountSCP:    pulumi.String(hubiam.FleetAccountSCP(env, []string{dep.IssuerARN}).MustJSON()).ToStringOutput(),
	}
	for name, o := range h.Outputs {
		ctx.Export(name, o)
	}
	return h, nil
}

// NewDeployKey registers the hub Flux's Git deploy key (resource
// DeployKeyResource). Up to this release FluxBootstrap made it as its own
// child; the alias to that URN keeps an existing stack's key (a new key
// would lock the hub's Flux out of Git until the new public key is
// registered again).
func NewDeployKey(ctx *pulumi.Context) (*tls.PrivateKey, error) {
	key, err := tls.NewPrivateKey(ctx, DeployKeyResource, &tls.PrivateKeyArgs{
		Algorithm: pulumi.String(fluxbootstrap.DeployKeyAlgorithm),
	}, pulumi.Aliases([]pulumi.Alias{{
		ParentURN: pulumi.CreateURN(pulumi.String(FluxResource), pulumi.String(fluxbootstrap.Type), nil,
			pulumi.String(ctx.Project()), pulumi.String(ctx.Stack())),
	}}))
	if err != nil {
		return nil, fmt.Errorf("flux deploy key: %w", err)
	}
	return key, nil
}

// checkUpgrade refuses a kubernetesVersion EKS would refuse for the
// deployed cluster (a skipped minor or a downgrade), before anything is
// created. The deployed version is read from EKS itself (getClusters, then
// getCluster), not from Pulumi state or a setting: it is the version EKS
// compares against, even after an upgrade made outside Pulumi.
func checkUpgrade(deployed *awseks.LookupClusterResult, cfg stacks.Config) error {
	if deployed == nil {
		return nil // first deployment
	}
	return CheckVersion(deployed.Version, cfg.KubernetesVersion)
}

// deployedHub is the hub's EKS cluster as EKS has it, nil before the first
// deployment.
func deployedHub(ctx *pulumi.Context, cfg stacks.Config) (*awseks.LookupClusterResult, error) {
	list, err := awseks.GetClusters(ctx)
	if err != nil {
		return nil, fmt.Errorf("list EKS clusters: %w", err)
	}
	if !slices.Contains(list.Names, cfg.HubName) {
		return nil, nil
	}
	cl, err := awseks.LookupCluster(ctx, &awseks.LookupClusterArgs{Name: cfg.HubName})
	if err != nil {
		return nil, fmt.Errorf("read EKS cluster %s: %w", cfg.HubName, err)
	}
	return cl, nil
}

// hubIssuer is the deployed hub's OIDC issuer without https://, "" when
// there is none.
func hubIssuer(deployed *awseks.LookupClusterResult) string {
	if deployed == nil {
		return ""
	}
	for _, id := range deployed.Identities {
		for _, o := range id.Oidcs {
			if o.Issuer != "" {
				return strings.TrimPrefix(o.Issuer, "https://")
			}
		}
	}
	return ""
}

// CheckVersion is the upgrade rule for a deployed version: the same, or the
// next minor.
func CheckVersion(deployed, wanted string) error {
	if deployed == wanted {
		return nil
	}
	if err := versions.CheckUpgrade(deployed, wanted); err != nil {
		next := "the next minor"
		if maj, minor, perr := versions.ParseMinor(deployed); perr == nil {
			next = fmt.Sprintf("%d.%d", maj, minor+1)
		}
		return &stacks.Error{
			Field: stacks.FullKey(stacks.KubernetesVersionKey), Value: wanted,
			Allowed: fmt.Sprintf("%s (deployed) or %s: %v", deployed, next, err),
		}
	}
	return nil
}

// CheckDeployer refuses a stack that lists the deploying identity (the IAM
// role or user behind the caller's session, issuerArn) as an admin: EKS
// already gives the cluster creator an admin access entry of its own.
func CheckDeployer(cfg stacks.Config, issuerARN string) error {
	if slices.Contains(cfg.AdminPrincipalARNs, issuerARN) {
		return &stacks.Error{
			Field: stacks.FullKey(stacks.AdminPrincipalARNsKey), Value: issuerARN,
			Allowed: "principals other than the identity running pulumi: EKS makes the cluster creator admin by itself " +
				"(pulumi-eks bootstrapClusterCreatorAdminPermissions) and refuses a second access entry for it (409); " +
				"remove it from the list, or run pulumi as another role",
		}
	}
	return nil
}

// NextSteps is what the platform team does after the first `pulumi up`.
func NextSteps(cfg stacks.Config) string {
	repo := cfg.Git.URL
	return strings.Join([]string{
		"1. Add the deploy key as a read-only deploy key of " + repo + ":",
		"     pulumi stack output " + OutDeployPublicKey,
		"   Flux retries until the key is accepted, then applies " + cfg.Git.Path + ".",
		"2. Reach the cluster (the kubeconfig runs aws eks get-token):",
		"     pulumi stack output " + OutKubeconfig + " --show-secrets > kubeconfig && export KUBECONFIG=$PWD/kubeconfig",
		"     kubectl -n flux-system get fluxinstance,gitrepository,kustomization",
		"3. Seal secrets for the fleet with the active sealing certificate:",
		"     pulumi stack output " + OutSealingCertPEM + " > sealing-cert.pem && kubeseal --cert sealing-cert.pem",
		"4. Request a spoke: add a WorkloadCluster claim under manifests/gitops-system/workload-clusters/ (fleet cluster add).",
	}, "\n")
}

// deployer is who runs pulumi up: the account the stack deploys into, its
// partition, and the IAM role or user behind the caller's session.
type deployer struct {
	AccountID, Partition, IssuerARN string
}

// lookUpDeployer reads the deployer from AWS (GetCallerIdentity,
// GetPartition, GetSessionContext); both stack kinds start with it.
func lookUpDeployer(ctx *pulumi.Context) (deployer, error) {
	caller, err := aws.GetCallerIdentity(ctx, nil)
	if err != nil {
		return deployer{}, fmt.Errorf("look up the AWS account: %w", err)
	}
	part, err := aws.GetPartition(ctx, nil)
	if err != nil {
		return deployer{}, fmt.Errorf("look up the AWS partition: %w", err)
	}
	session, err := iam.GetSessionContext(ctx, &iam.GetSessionContextArgs{Arn: caller.Arn})
	if err != nil {
		return deployer{}, fmt.Errorf("look up the deploying identity %s: %w", caller.Arn, err)
	}
	return deployer{AccountID: caller.AccountId, Partition: part.Partition, IssuerARN: session.IssuerArn}, nil
}

// crossplaneAccounts is the Crossplane accounts policy, if any, for
// DependsOn.
func (h *Hub) crossplaneAccounts() []pulumi.Resource {
	if h.CrossplaneAccounts == nil {
		return nil
	}
	return []pulumi.Resource{h.CrossplaneAccounts}
}

// afterKeys is value, known once version (the sealing keys' document in
// Secrets Manager) is written: whatever takes it depends on version.
func afterKeys(version *secretsmanager.SecretVersion, value string) pulumi.StringOutput {
	return version.VersionId.ApplyT(func(string) string { return value }).(pulumi.StringOutput)
}
