// Package aws stands in for AWS and for the provider-upjet-aws family's
// controllers in the real-controller suite: no AWS account is reachable,
// and the providers' controllers embed the Terraform AWS provider, which
// the module proxy does not serve. It reconciles every managed resource of
// the kinds the installed and activated provider packages serve (a kind no
// installed provider serves has no CRD, so composing it fails as it would
// on AWS) against a Ledger of what exists in the account, and serves the
// AWS endpoints the fleet's other controllers call (Secrets Manager and
// STS for External Secrets).
//
// Reproduced, with their sources:
//   - crossplane-runtime v2.4.0 pkg/reconciler/managed/reconciler.go: the
//     finalizer "finalizer.managedresource.crossplane.io" (line 47), Synced
//     and Ready conditions (ReconcileSuccess/ReconcileError,
//     Creating/Available/Deleting), references resolved on every reconcile
//     before anything else and persisted with an update (api.go:249,
//     "cannot resolve references"), the external name written after a
//     create again on the latest object when the update conflicts
//     (api.go:283-301, RetryingCriticalAnnotationUpdater), deletionPolicy
//     Orphan leaving the external resource: the finalizer removed without
//     observing or deleting it (lines 1029-1057; policies.go:245-270,
//     ShouldDelete false for Orphan with the default management policy "*");
//   - crossplane-runtime v2.4.0 pkg/reference/reference.go: a value already
//     set is not resolved again unless the reference's policy is Always
//     (IsNoOp, lines 212-237); a reference names its target, a selector
//     picks the first match (Resolve, lines 338-377); an empty extracted
//     value is an error;
//   - provider-upjet-aws v2.7.0 apis/cluster/*/zz_generated.resolvers.go:
//     which field references which kind and how the value is extracted
//     (ReadPackage parses them);
//   - upjet v2.3.0 pkg/controller/external_tfpluginsdk.go:719-753: an
//     update to an argument Terraform marks RequiresNew is refused ("refuse
//     to update the external resource because the following update
//     requires replacing it: cannot change the value of the argument %q
//     from %q to %q", the first differing flattened key), the resource left
//     Synced False; the external name of a resource AWS names is the ID
//     set after create (provider-upjet-aws config/externalname.go, read by
//     ReadNaming). The provider's own pinned upjet pseudo-version is not
//     served by the module proxy; v2.3.0 is the nearest release. Which
//     arguments are ForceNew (the ForceNew table) follows AWS's update APIs
//     (an argument no update call takes cannot change in place); the
//     Terraform provider fork the family builds,
//     github.com/upbound/terraform-provider-aws, is not served either, so
//     its schema cannot be read;
//   - AWS: IDs and ARNs in AWS's formats (an SQS queue's ID is its URL, as
//     CreateQueue returns it and terraform-provider-aws
//     internal/service/sqs/queue.go sets it; an EKS cluster's endpoint and
//     OIDC issuer follow from its ARN and name, EKSCluster, so a suite can
//     start the cluster that plays it with that issuer), creation taking
//     time (a delay per kind), the dependency refusals of deletes (a VPC
//     with subnets, a subnet with a NAT gateway, associations or a load
//     balancer), DynamoDB's refusal to delete a table with deletion
//     protection on (until an update turns it off), and a
//     launch template's
//     versions (each update is a new version, which the template makes its
//     default when asked to; EC2 CreateLaunchTemplateVersion).
//   - EKS's rules (eksrules.go): no node group or add-on created before its
//     cluster is ACTIVE (the message eksctl-io/eksctl#2244 quotes);
//     UpdateClusterVersion one minor version at a time and only with every
//     node group at the cluster's version (the message
//     hashicorp/terraform-provider-aws#19478 quotes),
//     no node group newer than its cluster, and an add-on version only if
//     DescribeAddonVersions offers it for the cluster's version (here the
//     versions the suite's hub looked up); refusals are reported as failed
//     external calls and listed (Provider.Refusals). AWS's own messages for
//     the last two are paraphrased; an update takes Provider.UpdateTakes,
//     during which AWS reports the old version;
//   - faults the suite injects (Provider.Fail): an AWS error on a create or
//     update is reported as crossplane-runtime reports a failed external
//     call, the managed resource Synced False with "create failed: <error>"
//     or "update failed: <error>" (reconciler.go:66-67) and the call tried
//     again on the next reconcile; Provider.Hold stops reconciling a kind,
//     as when its provider's pod is down.
//   - IAM (authorize.go, calls.go), with an Authorizer: every call the
//     provider makes for a managed resource, as the Terraform AWS provider
//     makes it for the resource's type on create, observe (Terraform's
//     Read, on every poll), update (the calls for the arguments that
//     changed, tags through the tagging interceptor's UpdateTags) and
//     delete (each call cited by file and line in calls.go), is evaluated
//     by the real IAM evaluator (internal/iam/iamsim) as the role the
//     provider's pods run as (the IRSA annotation Crossplane puts on the
//     providers' ServiceAccounts from the DeploymentRuntimeConfig): its
//     inline and attached policies and its permissions boundary, for a
//     role made in the account as the hub composed them, with its tags
//     as principal tags; on every resource the call names, with that
//     resource's tags, the request's tags where the action catalogue says
//     the action takes them, an EC2 create's tags also as ec2:CreateTags
//     with ec2:CreateAction, and the service keys AWS sets
//     (iam:PermissionsBoundary, iam:PolicyARN, iam:PassedToService,
//     eks:principalArn, eks:policyArn, eks:accessScope,
//     eks:bootstrapClusterCreatorAdminPermissions with EKS's default true;
//     each on every call whose action the catalogue lists it for, and a
//     role's own boundary on calls that act on the role as it is,
//     servicekeys_test.go).
//     A denied call fails the managed resource as the provider reports
//     it ("create failed: ", "observe failed: ", "update failed: ",
//     "delete failed: ") with AWS's refusal naming the caller, the action
//     and the resource, and changes nothing; decisions are cached per
//     request, so a resource at rest costs no evaluation. A route table's
//     delete disassociates its subnets first (Terraform's
//     resourceRouteTableDelete) and takes its routes with it (EC2).
//   - provider-upjet-aws v2.7.0 internal/clients (session.go): each
//     managed resource connects as the ProviderConfig it names (default
//     "default"; "cannot get referenced ProviderConfig" when it does not
//     exist, pc_resolver.go:20): its IRSA role, then each step of its
//     assumeRoleChain (provider_config.go:293-314, GetRoleChainConfig) as
//     an sts:AssumeRole the Authorizer decides as IAM does across
//     accounts: the caller's policies must allow it and the role's trust
//     policy must allow the caller with the step's sts:ExternalId. The
//     resource is then made in that role's account (its Ledger), as that
//     role. A refused step or a missing ProviderConfig fails the resource
//     with the provider's connect error ("connect failed: cannot get
//     terraform setup: ..."), before crossplane-runtime would add its
//     finalizer (reconciler.go:1145, 1340). An EKS cluster reports its CA
//     (certificateAuthority, a CA of its own) and endpoint once ACTIVE.
//
// Endpoints serves STS and Secrets Manager (see its doc), and the APIs
// that read an account (STS GetCallerIdentity, EC2 DescribeRegions and
// DescribeLaunchTemplates, IAM's role and OIDC provider lists, the Tagging
// API's GetResources; accountapi.go) from each caller's Ledger, for the
// program's pre-flight check and a spoke account's delete guard.
//
// Not modelled: IAM's own checks beyond the policies (service control
// policies, session policies, resource policies of the resources called
// but a spoke account role's trust policy),
// a create that fails part way (a create's calls are authorized together
// before anything is made, where Terraform would leave a tainted resource
// after a later call of the create is denied), the service-linked roles
// EKS creates on the first cluster and node group, the calls EKS itself
// makes with the passed roles, quotas, regions
// and zones, eventual consistency, drift from changes outside Crossplane,
// an Elastic IP's release refused while a NAT gateway uses it (the
// fleet's Usages delete the NAT gateway first), and every field AWS
// computes but the fleet does not read, credential sources other than
// IRSA, and STS's session duration, tags and source identity. Several
// Providers (a hub's and its spokes' Crossplane) may share one Ledger: one
// account; a Provider reaches the other accounts of its Accounts.
package aws
