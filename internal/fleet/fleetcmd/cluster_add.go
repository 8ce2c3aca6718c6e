package fleetcmd

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/deploykey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/cidralloc"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/sealing"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

type addFlags struct {
	region, version, cidr, nat, nodes string
	azs                               int
	instanceTypes                     []string
	cert, knownHosts, stack, team     string
	account                           string
	publicAccess, admins              []string
	tags                              map[string]string
	dryRun                            bool
}

func (a *app) clusterAddCmd() *cobra.Command {
	f := &addFlags{}
	c := &cobra.Command{
		Use:   "add NAME",
		Short: "Write a new cluster request (claim, workloads folder, sealed deploy key)",
		Long: `Writes, in one atomic change:
  gitops-system/workload-clusters/NAME.yaml           the WorkloadCluster claim
  gitops-system/workload-clusters/kustomization.yaml  lists it
  gitops-workloads/clusters/NAME/kustomization.yaml   the cluster's (empty) app list
  gitops-workloads/clusters/NAME/flux-system/          the spoke's read-only Git deploy key,
                                                      sealed for the environment (Secret
                                                      flux-system/flux-system)
and prints the public key to add to the Git host as a read-only deploy key.

Without --cidr it picks the lowest free block of the policy's size (cidr.prefixLength)
in the policy's pools that overlaps no other cluster, the hub's VPC or a reserved range.
Defaults come from the fleet policy (gitops-system/workload-clusters/fleet-policy.yaml):
first allowed region, default Kubernetes version, first allowed instance type.

It refuses a name or CIDR already in use and any value the API or the policy would
reject, and writes nothing then. The sealing certificate is the public half of the
environment's Sealed Secrets key (pulumi stack output, committed at
gitops-system/sealing-cert.pem); known_hosts holds the Git host's SSH keys
(e.g. ssh-keyscan github.com): --known-hosts, else gitops-system/known_hosts, else
the gitKnownHosts setting of the hub's stack file (Pulumi.<hub>.yaml next to manifests/,
or --stack), the same keys the hub's own Flux trusts.`,
		Example: `  fleet cluster add payments
  fleet cluster add payments --region eu-central-1 --version 1.35 --azs 3 --nat per-az \
      --nodes 2:3:6 --instance-types m7i.large,m7i.xlarge --cert sealing-cert.pem
  fleet cluster add batch --cidr 10.42.0.0/16 --known-hosts known_hosts --dry-run`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.clusterAdd(cmd.Context(), args[0], f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.region, "region", "", "AWS region (default: the policy's first region)")
	fl.StringVar(&f.version, "version", "", "Kubernetes version (default: "+versions.DefaultKubernetes+" if the policy allows it)")
	fl.StringVar(&f.cidr, "cidr", "", "VPC CIDR block, e.g. 10.42.0.0/16 (default: a free block from the policy's pools)")
	fl.IntVar(&f.azs, "azs", workloadcluster.MaxAvailabilityZones,
		fmt.Sprintf("number of availability zones (%d or %d)", workloadcluster.MinAvailabilityZones, workloadcluster.MaxAvailabilityZones))
	fl.StringVar(&f.nat, "nat", workloadcluster.NATSingle, "NAT gateways: single (one, cheaper) or per-az (one per AZ, no cross-AZ dependency)")
	fl.StringVar(&f.nodes, "nodes", "2:2:4", "node group size MIN:DESIRED:MAX")
	fl.StringSliceVar(&f.instanceTypes, "instance-types", nil, "node instance types, comma-separated (default: the policy's first)")
	fl.StringVar(&f.cert, "cert", "", "sealing certificate PEM (default: <tree>/"+fleettree.DefaultCertFile+")")
	fl.StringVar(&f.knownHosts, "known-hosts", "", "known_hosts file for the Git host (default: <tree>/"+fleettree.DefaultKnownHost+", else the hub stack's gitKnownHosts)")
	fl.StringVar(&f.stack, "stack", "", "Pulumi stack file whose gitKnownHosts to use (default: Pulumi.<hub>.yaml next to the tree)")
	fl.StringSliceVar(&f.publicAccess, "public-access-cidrs", nil, fmt.Sprintf(
		"your own networks allowed to reach the public API endpoint, comma-separated CIDRs, at most %d; "+
			"the hub's NAT egress IPs are always added by the Composition (cluster-info %s), so do not list them",
		policy.APIMaxPublic, clusterinfo.HubEgressCIDRs))
	fl.StringSliceVar(&f.admins, "admin-arns", nil, "IAM role/user ARNs given cluster-admin access entries")
	fl.StringToStringVar(&f.tags, "tags", nil, "AWS tags KEY=VALUE,... put on every resource (keys under AWS's, the fleet's, EKS's and the spokes' controllers' prefixes are refused)")
	fl.StringVar(&f.team, "team", "", "the team that owns the cluster, one of the fleet policy's spec.teams (label "+workloadcluster.TeamLabel+"): only its members' changes of the claim are auto-approved; without it every change of the claim needs the code owners")
	fl.StringVar(&f.account, "account", "", "AWS account of the spoke, one of the fleet policy's spec.accounts (default: the hub's account)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "check and print what would be written, write nothing")
	return c
}

// parseNodes reads MIN:DESIRED:MAX.
func parseNodes(s string) (workloadcluster.Nodes, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return workloadcluster.Nodes{}, usageErr("--nodes %q: want MIN:DESIRED:MAX, e.g. 2:3:6", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return workloadcluster.Nodes{}, usageErr("--nodes %q: %q is not a number (want MIN:DESIRED:MAX, e.g. 2:3:6)", s, p)
		}
		n[i] = v
	}
	return workloadcluster.Nodes{Min: n[0], Desired: n[1], Max: n[2]}, nil
}

func (a *app) clusterAdd(ctx context.Context, name string, f *addFlags) error {
	a.warmProof(ctx)
	t, err := a.openTree()
	if err != nil {
		return err
	}
	pol, err := a.loadPolicy(t)
	if err != nil {
		return err
	}
	info, err := a.info()
	if err != nil {
		return err
	}
	nodes, err := parseNodes(f.nodes)
	if err != nil {
		return err
	}
	if vs := pol.CheckName(name); len(vs) > 0 {
		return violationsErr("cluster add "+name, vs)
	}
	claims, err := t.Claims()
	if err != nil {
		return err
	}
	if c, ok := fleettree.FindClaim(claims, name); ok {
		return &exitError{code: ExitFailed, err: fmt.Errorf("cluster name %q is already used by %s: choose another NAME", name, c.Rel)}
	}
	for _, rel := range []string{fleettree.ClaimRel(name), fleettree.WorkloadsRel(name)} {
		if _, err := os.Stat(t.Path(rel)); err == nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("cluster name %q: %s already exists: choose another NAME or remove it", name, rel)}
		}
	}
	// Fill defaults from the policy.
	region := f.region
	if region == "" {
		region = pol.Regions[0]
	}
	version := f.version
	if version == "" {
		version = pol.DefaultVersion()
	}
	types := f.instanceTypes
	if len(types) == 0 {
		types = []string{pol.InstanceTypes[0]}
	}
	nodes.InstanceTypes = types
	cidr := f.cidr
	if cidr == "" {
		var used []netip.Prefix
		for _, c := range claims {
			if p, err := cidralloc.Parse(c.Claim.Spec.VPCCIDR); err == nil {
				used = append(used, p)
			}
		}
		for _, r := range pol.Reserved(info.HubVPCCIDR) {
			used = append(used, r.Prefix)
		}
		p, err := cidralloc.FindFree(pol.Pools(), pol.CIDR.PrefixLength, used)
		if err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		cidr = p.String()
	}
	claim := &workloadcluster.Claim{
		APIVersion: workloadcluster.APIVersion,
		Kind:       workloadcluster.ClaimKind,
		Metadata:   workloadcluster.Metadata{Name: name, Namespace: workloadcluster.ClaimNamespace, Labels: teamLabel(f.team)},
		Spec: workloadcluster.Spec{
			Account: f.account, Region: region, KubernetesVersion: version, VPCCIDR: cidr,
			AvailabilityZones: f.azs, NATMode: f.nat, Nodes: nodes,
			PublicAccessCIDRs: f.publicAccess, AdminPrincipalARNs: f.admins, Tags: f.tags,
		},
	}
	// The same checks fleet validate runs, on the fleet as it would be.
	vs := pol.CheckClaim(claim)
	members := []policy.Member{}
	for _, c := range claims {
		members = append(members, policy.MemberOf(c.Claim, c.Rel))
	}
	members = append(members, policy.MemberOf(claim, fleettree.ClaimRel(name)))
	for _, v := range pol.CheckFleet(members, policy.HubOf(info)) {
		if v.Cluster == name || strings.Contains(v.Message, "cluster "+name+" ") {
			vs = append(vs, v)
		}
	}
	if len(vs) > 0 {
		return violationsErr("cluster add "+name, vs)
	}
	// Sealing inputs.
	certPath := f.cert
	if certPath == "" {
		certPath = t.Path(fleettree.DefaultCertFile)
	}
	key, err := sealing.LoadCert(certPath)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w (pass --cert FILE: the environment's sealing certificate)", err)}
	}
	kh, khPath, err := knownHosts(t, f, info.HubName)
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	if err := deploykey.CheckKnownHosts(kh); err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("known_hosts from %s: %w", khPath, err)}
	}
	dk, err := deploykey.Generate("flux-"+info.HubName+"-"+name, a.deps.Rand)
	if err != nil {
		return err
	}
	sealed, err := sealing.SealSecret(dk.Secret(deploykey.SecretName, deploykey.SecretNamespace, kh), key)
	if err != nil {
		return err
	}
	// The change.
	ch := treeedit.New()
	claimYAML, err := fleettree.MarshalClaim(claim)
	if err != nil {
		return err
	}
	ch.Write(fleettree.ClaimRel(name), claimYAML)
	kpath := fleettree.ClaimsDir + "/" + fleettree.Kustomization
	kb, err := os.ReadFile(t.Path(kpath))
	if err != nil {
		kb = kustfile.New("WorkloadCluster claims, one file per spoke (fleet cluster add writes them).")
	}
	kb, err = kustfile.Add(kb, name+".yaml")
	if err != nil {
		return fmt.Errorf("%s: %w", kpath, err)
	}
	ch.Write(kpath, kb)
	for rel, b := range fleettree.WorkloadsScaffold(name) {
		ch.Write(rel, b)
	}
	ch.Write(fleettree.DeployKeyRel(name), fleettree.DeployKeyContent(name, dk.Public, sealed))

	if err := a.checkStaged(ctx, t, claims, ch, name); err != nil {
		return err
	}
	if f.dryRun {
		fmt.Fprintf(a.stdout, "dry run: would write\n")
		for _, p := range ch.Paths() {
			fmt.Fprintf(a.stdout, "  %s\n", p)
		}
		fmt.Fprintf(a.stdout, "\n%s", claimYAML)
		return nil
	}
	if err := ch.Apply(t.Root); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	where := "the hub's account"
	if f.account != "" {
		where = "account " + f.account
	}
	fmt.Fprintf(a.stdout, "cluster %s: %s, region %s, Kubernetes %s, VPC %s, %d AZs, NAT %s, nodes %d:%d:%d %s\n",
		name, where, region, version, cidr, f.azs, f.nat, nodes.Min, nodes.Desired, nodes.Max, strings.Join(types, ","))
	for _, p := range ch.Paths() {
		fmt.Fprintf(a.stdout, "  wrote %s\n", p)
	}
	fmt.Fprintf(a.stdout, "\nAdd this read-only deploy key to the Git repository (%s):\n%s\n", info.GitURL, dk.Public)
	if f.team == "" {
		fmt.Fprintf(a.stdout, "\nNo --team: the claim names no owning team, so no change of it (this request included) is auto-approved; the code owners review each.\n")
	}
	fmt.Fprintf(a.stdout, "\nNext: fleet validate, then open a pull request.\n")
	return nil
}

// teamLabel is the claim's labels for its owning team (none without one).
func teamLabel(team string) map[string]string {
	if team == "" {
		return nil
	}
	return map[string]string{workloadcluster.TeamLabel: team}
}

// knownHosts finds the Git host keys: --known-hosts, the tree's file, or
// the hub's stack config (gitKnownHosts), in that order.
func knownHosts(t *fleettree.Tree, f *addFlags, hub string) ([]byte, string, error) {
	if f.knownHosts != "" {
		b, err := os.ReadFile(f.knownHosts)
		if err != nil {
			return nil, "", fmt.Errorf("--known-hosts: %w", err)
		}
		return b, f.knownHosts, nil
	}
	if f.stack == "" {
		if b, err := os.ReadFile(t.Path(fleettree.DefaultKnownHost)); err == nil {
			return b, t.Path(fleettree.DefaultKnownHost), nil
		}
	}
	stack := f.stack
	if stack == "" {
		stack = filepath.Join(filepath.Dir(filepath.Clean(t.Root)), "Pulumi."+hub+".yaml")
	}
	b, err := os.ReadFile(stack)
	if err != nil {
		return nil, "", fmt.Errorf("no known_hosts: pass --known-hosts FILE (e.g. from ssh-keyscan github.com), add %s, or pass --stack with gitKnownHosts (%v)", fleettree.DefaultKnownHost, err)
	}
	vals, err := stacks.ParseStackYAML(b)
	if err != nil {
		return nil, "", fmt.Errorf("--stack %s: %w", stack, err)
	}
	kh := vals[stacks.FullKey(stacks.GitKnownHostsKey)]
	if kh == "" || strings.HasPrefix(kh, "<secure>") {
		return nil, "", fmt.Errorf("--stack %s: no plain %s setting: pass --known-hosts FILE", stack, stacks.FullKey(stacks.GitKnownHostsKey))
	}
	return []byte(kh), stack + " (" + stacks.FullKey(stacks.GitKnownHostsKey) + ")", nil
}
