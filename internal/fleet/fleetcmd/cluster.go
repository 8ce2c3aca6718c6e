package fleetcmd

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/deploykey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/cidralloc"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetvalidate"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/sealing"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// Deploy key Secret the spoke's Flux GitRepository reads.
const (
	DeployKeySecret    = deploykey.SecretName
	DeployKeyNamespace = deploykey.SecretNamespace
)

func (a *app) clusterCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cluster",
		Short: "Ask for, upgrade and remove workload clusters",
		Long: `A workload (spoke) cluster is one WorkloadCluster claim file in
gitops-system/workload-clusters/ plus its folder in gitops-workloads/clusters/.
After the merge, the hub's Flux applies the claim and Crossplane builds the cluster.`,
		Example: `  fleet cluster add payments --region eu-west-1
  fleet cluster upgrade payments --version 1.36
  fleet cluster remove payments`,
		Args: maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.clusterAddCmd(), a.clusterUpgradeCmd(), a.clusterRemoveCmd(), a.clusterBreakGlassCmd())
	return c
}

type addFlags struct {
	region, version, cidr, nat, nodes string
	azs                               int
	instanceTypes                     []string
	cert, knownHosts, stack           string
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
	fl.IntVar(&f.azs, "azs", 3, "number of availability zones (2 or 3)")
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
	fl.StringToStringVar(&f.tags, "tags", nil, "AWS tags KEY=VALUE,... put on every resource")
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

// violationsErr turns policy violations into one error naming each.
func violationsErr(what string, vs []policy.Violation) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problem(s), nothing written:", what, len(vs))
	for _, v := range vs {
		b.WriteString("\n  - " + v.Error())
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("%s", b.String())}
}

func (a *app) loadPolicy(t *fleettree.Tree) (*policy.Policy, error) {
	b, err := t.ReadFile(policy.RelPath)
	if err != nil {
		return nil, fmt.Errorf("reading fleet policy: %w", err)
	}
	return policy.Parse(b, t.Path(policy.RelPath))
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
		Metadata:   workloadcluster.Metadata{Name: name, Namespace: workloadcluster.ClaimNamespace},
		Spec: workloadcluster.Spec{
			Region: region, KubernetesVersion: version, VPCCIDR: cidr,
			AvailabilityZones: f.azs, NATMode: f.nat, Nodes: nodes,
			PublicAccessCIDRs: f.publicAccess, AdminPrincipalARNs: f.admins, Tags: f.tags,
		},
	}
	// The same checks fleet validate runs, on the fleet as it would be.
	vs := pol.CheckClaim(claim)
	members := []policy.Member{}
	for _, c := range claims {
		members = append(members, policy.Member{Name: c.Claim.Metadata.Name, File: c.Rel, CIDR: c.Claim.Spec.VPCCIDR, Admins: c.Claim.Spec.AdminPrincipalARNs})
	}
	members = append(members, policy.Member{Name: name, File: fleettree.ClaimRel(name), CIDR: cidr, Admins: f.admins})
	for _, v := range pol.CheckFleet(members, policy.Hub{VPCCIDR: info.HubVPCCIDR, AccountID: info.AccountID}) {
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
	sealed, err := sealing.SealSecret(dk.Secret(DeployKeySecret, DeployKeyNamespace, kh), key)
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
	wl := fleettree.WorkloadsRel(name)
	ch.Write(wl+"/"+fleettree.Kustomization, kustfile.New(
		"Apps on spoke "+name+": the governance team adds one entry per app\n(fleet app add APP --cluster "+name+" ...). The spoke's own Flux applies this folder."))
	ch.Write(wl+"/"+fleettree.DeployKeyDir+"/"+fleettree.Kustomization, kustfile.New(
		"The spoke's read-only Git deploy key, sealed for this environment. The hub\napplies it onto the spoke during bootstrap, before the spoke's GitRepository.",
		fleettree.DeployKeyFile))
	ch.Write(fleettree.DeployKeyRel(name), append([]byte("# Deploy key of spoke "+name+" (public part: "+dk.Public+")\n"), sealed...))

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
	fmt.Fprintf(a.stdout, "cluster %s: %s %s, Kubernetes %s, VPC %s, %d AZs, NAT %s, nodes %d:%d:%d %s\n",
		name, "region", region, version, cidr, f.azs, f.nat, nodes.Min, nodes.Desired, nodes.Max, strings.Join(types, ","))
	for _, p := range ch.Paths() {
		fmt.Fprintf(a.stdout, "  wrote %s\n", p)
	}
	fmt.Fprintf(a.stdout, "\nAdd this read-only deploy key to the Git repository (%s):\n%s\n", info.GitURL, dk.Public)
	fmt.Fprintf(a.stdout, "\nNext: fleet validate, then open a pull request.\n")
	return nil
}

// warmProof lets a Prover that can (proof.Warm) start its shared set-up
// while the command prepares its change.
func (a *app) warmProof(ctx context.Context) {
	if w, ok := a.deps.Prover.(interface{ Warm(context.Context) }); ok {
		w.Warm(ctx)
	}
}

// checkStaged runs the offline proof on the tree with the change applied,
// and fails on findings about the cluster's files or objects. claims are
// the tree's claims before the change.
func (a *app) checkStaged(ctx context.Context, t *fleettree.Tree, claims []fleettree.ClaimFile, ch *treeedit.Change, name string) error {
	// Policy listing checks on the changed tree always run; the proof only
	// when available. Both read the tree with the change pending: nothing
	// is staged on disk, and the proof copies only what it reaches.
	st := t.With(ch)
	pol, err := a.loadPolicy(st)
	if err != nil {
		return err
	}
	vinfo, err := a.info()
	if err != nil {
		return err
	}
	var problems []fleetvalidate.Finding
	// Each cluster's own deploy key is checked for the clusters whose
	// findings relevant keeps (the others are unchanged and dropped).
	keyClusters := []string{name}
	for _, c := range claims {
		if n := c.Claim.Metadata.Name; strings.HasPrefix(n, name+"-") {
			keyClusters = append(keyClusters, n)
		}
	}
	pf, _, err := fleetvalidate.PolicyFindingsFor(st, pol, policy.Hub{VPCCIDR: vinfo.HubVPCCIDR, AccountID: vinfo.AccountID}, keyClusters)
	if err != nil {
		return err
	}
	problems = append(problems, relevant(pf, ch, name)...)
	if a.deps.Prover != nil {
		// Only the change's own cluster renders (its claim and spoke
		// directories in full); the hub tree builds and validates with
		// the claims in scope only (the other clusters' claim files and
		// workloads folders are left out: requestPrune), and the
		// fleet-wide invariants are the policy findings above over every
		// claim, so the cost does not grow with the fleet's spokes.
		scope := []string{name}
		rep, err := a.deps.Prover.Prove(ctx, fleetvalidate.ProofRequest{Tree: t.Root, Info: vinfo, Scoped: true, Claims: scope, Quick: true,
			Change: ch, Prune: requestPrune(t, claims, ch, scope)})
		if err != nil {
			return fmt.Errorf("offline proof of the changed tree: %w", err)
		}
		found := relevant(rep.Findings, ch, name)
		if len(found) > 0 {
			// Tell apart what this change causes from what the system
			// tree already gets wrong for every spoke: prove the tree as
			// it is and compare, with spoke names abstracted.
			var names []string
			for _, c := range claims {
				names = append(names, c.Claim.Metadata.Name)
			}
			// One existing spoke stands for all of them.
			scope := names[:min(1, len(names))]
			base, err := a.deps.Prover.Prove(ctx, fleetvalidate.ProofRequest{Tree: t.Root, Info: vinfo, Scoped: true, Claims: scope, Quick: true,
				Prune: requestPrune(t, claims, nil, scope)})
			if err != nil {
				return fmt.Errorf("offline proof of the tree: %w", err)
			}
			known := map[string]bool{}
			for _, f := range base.Findings {
				known[findingKey(f, names)] = true
			}
			var shared []fleetvalidate.Finding
			for _, f := range found {
				if known[findingKey(f, []string{name})] {
					shared = append(shared, f)
				} else {
					problems = append(problems, f)
				}
			}
			if len(shared) > 0 {
				fmt.Fprintf(a.stderr, "warning: %d problem(s) of the system tree that every spoke has, not caused by this change (fleet validate fails until the platform team fixes them):\n", len(shared))
				for _, p := range shared {
					fmt.Fprintf(a.stderr, "  - %s: [%s] %s %s\n", p.File, p.Check, p.Object, p.Message)
				}
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the change fails %d check(s), nothing written:", len(problems))
	for _, p := range problems {
		fmt.Fprintf(&b, "\n  - %s: [%s] %s %s", p.File, p.Check, p.Object, p.Message)
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("%s", b.String())}
}

// requestPrune lists what the proof of a request for the clusters in scope
// does not reach: the claim files of the tree (claims, before the change)
// that hold no claim in scope, and the workloads folders of the other
// clusters, unless the change touches them. Each of those clusters is
// unchanged; what relates it to the ones in scope (names, CIDRs, listing,
// folders) is the policy findings over every claim.
func requestPrune(t *fleettree.Tree, claims []fleettree.ClaimFile, ch *treeedit.Change, scope []string) []string {
	touched := func(rel string) bool {
		if ch == nil {
			return false
		}
		for _, p := range ch.Paths() {
			if p == rel || strings.HasPrefix(p, rel+"/") || strings.HasPrefix(rel, p+"/") {
				return true
			}
		}
		return false
	}
	inScope := map[string]bool{}
	for _, c := range claims {
		if slices.Contains(scope, c.Claim.Metadata.Name) {
			inScope[c.Rel] = true
		}
	}
	out := []string{} // never nil: a request's proof is always scoped
	for _, c := range claims {
		if !inScope[c.Rel] && !touched(c.Rel) && !slices.Contains(out, c.Rel) {
			inScope[c.Rel] = true // listed once
			out = append(out, c.Rel)
		}
	}
	entries, _ := os.ReadDir(t.Path(fleettree.WorkloadsDir))
	for _, e := range entries {
		rel := fleettree.WorkloadsRel(e.Name())
		if e.IsDir() && !slices.Contains(scope, e.Name()) && !touched(rel) {
			out = append(out, rel)
		}
	}
	return out
}

// findingKey identifies a finding with the given spoke names replaced, so
// the same problem on two spokes has the same key.
func findingKey(f fleetvalidate.Finding, names []string) string {
	sorted := slices.Clone(names)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	k := f.Check + "|" + f.File + "|" + f.Object
	for _, n := range sorted {
		k = strings.ReplaceAll(k, n, "<spoke>")
	}
	return k
}

// relevant keeps findings about the files a change touches or the cluster,
// and about the build of a directory holding a file it touches (the
// claims Kustomization fails as a whole when one claim's post-build
// substitution fails, and the finding names the directory).
func relevant(fs []fleetvalidate.Finding, ch *treeedit.Change, name string) []fleetvalidate.Finding {
	paths := ch.Paths()
	var out []fleetvalidate.Finding
	for _, f := range fs {
		hit := f.Object == name || strings.HasPrefix(f.Object, name+"-") || strings.Contains(f.Object, "/"+name)
		for _, p := range paths {
			if f.File == p || strings.HasPrefix(f.File, p+"/") || (f.File != "" && strings.HasPrefix(p, f.File+"/")) {
				hit = true
			}
		}
		if hit {
			out = append(out, f)
		}
	}
	return out
}

func (a *app) clusterUpgradeCmd() *cobra.Command {
	var version string
	var dryRun bool
	c := &cobra.Command{
		Use:   "upgrade NAME --version V",
		Short: "Move a cluster to the next Kubernetes minor version",
		Long: `Sets spec.kubernetesVersion of the cluster's claim to V. EKS moves one minor
version at a time and never down, so V must be the next minor version and allowed by
the policy.

After the merge, the composition function sets spec.kubernetesVersion on both the EKS
Cluster and the managed NodeGroup. The control plane upgrades first: EKS refuses a
node group version newer than its control plane, so the NodeGroup's update fails
and Crossplane retries it until the control plane reports the new version; then
the node group rolls its nodes (respecting PodDisruptionBudgets). Upgrade again
only when 'fleet status' shows the cluster Ready and Synced.`,
		Example: `  fleet cluster upgrade payments --version 1.36
  fleet cluster upgrade payments --version 1.36 --dry-run`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == "" {
				return usageErr("--version is required: the target Kubernetes version, one of %s", strings.Join(versions.Kubernetes(), ", "))
			}
			return a.clusterUpgrade(cmd.Context(), args[0], version, dryRun)
		},
	}
	c.Flags().StringVar(&version, "version", "", "target Kubernetes version (the next minor: "+strings.Join(versions.Kubernetes(), ", ")+")")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "check and print, write nothing")
	return c
}

func (a *app) findClaim(t *fleettree.Tree, name string) (fleettree.ClaimFile, []fleettree.ClaimFile, error) {
	claims, err := t.Claims()
	if err != nil {
		return fleettree.ClaimFile{}, nil, err
	}
	c, ok := fleettree.FindClaim(claims, name)
	if !ok {
		var names []string
		for _, c := range claims {
			names = append(names, c.Claim.Metadata.Name)
		}
		sort.Strings(names)
		return c, nil, &exitError{code: ExitFailed, err: fmt.Errorf("cluster %q: no claim in %s (clusters: %s)", name, fleettree.ClaimsDir, strings.Join(names, ", "))}
	}
	return c, claims, nil
}

func (a *app) clusterUpgrade(ctx context.Context, name, to string, dryRun bool) error {
	a.warmProof(ctx)
	t, err := a.openTree()
	if err != nil {
		return err
	}
	pol, err := a.loadPolicy(t)
	if err != nil {
		return err
	}
	c, claims, err := a.findClaim(t, name)
	if err != nil {
		return err
	}
	from := c.Claim.Spec.KubernetesVersion
	if err := versions.CheckUpgrade(from, to); err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("cluster %s: --version %s: %w", name, to, err)}
	}
	if !slices.Contains(pol.Versions(), to) {
		return &exitError{code: ExitFailed, err: fmt.Errorf("cluster %s: --version %s is not allowed by the fleet policy: allowed %s", name, to, strings.Join(pol.Versions(), ", "))}
	}
	b, err := os.ReadFile(t.Path(c.Rel))
	if err != nil {
		return err
	}
	nb, err := setClaimVersion(b, name, to)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Rel, err)
	}
	next := *c.Claim
	next.Spec.KubernetesVersion = to
	if vs := pol.CheckClaim(&next); len(vs) > 0 {
		return violationsErr("cluster upgrade "+name, vs)
	}
	ch := treeedit.New()
	ch.Write(c.Rel, nb)
	if err := a.checkStaged(ctx, t, claims, ch, name); err != nil {
		return err
	}
	if dryRun {
		fmt.Fprintf(a.stdout, "dry run: cluster %s would go from %s to %s (%s)\n", name, from, to, c.Rel)
		return nil
	}
	if err := ch.Apply(t.Root); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	fmt.Fprintf(a.stdout, "cluster %s: Kubernetes %s -> %s in %s\ncontrol plane first, then the node group (see fleet cluster upgrade --help)\n", name, from, to, c.Rel)
	return nil
}

// setClaimVersion edits spec.kubernetesVersion of the named claim in a
// YAML stream, keeping comments and every other document as they are.
func setClaimVersion(b []byte, name, version string) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []*yaml.Node
	found := false
	for {
		var d yaml.Node
		if err := dec.Decode(&d); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, err
		}
		if len(d.Content) == 1 && mapGet(d.Content[0], "kind") != nil && mapGet(d.Content[0], "kind").Value == workloadcluster.ClaimKind {
			md := mapGet(d.Content[0], "metadata")
			if md != nil && mapGet(md, "name") != nil && mapGet(md, "name").Value == name {
				spec := mapGet(d.Content[0], "spec")
				if spec == nil {
					return nil, fmt.Errorf("claim %s has no spec", name)
				}
				v := mapGet(spec, "kubernetesVersion")
				if v == nil {
					spec.Content = append(spec.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "kubernetesVersion"}, &yaml.Node{Kind: yaml.ScalarNode})
					v = spec.Content[len(spec.Content)-1]
				}
				v.Value, v.Tag, v.Style = version, "!!str", yaml.DoubleQuotedStyle
				found = true
			}
		}
		docs = append(docs, &d)
	}
	if !found {
		return nil, fmt.Errorf("no WorkloadCluster %q", name)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func (a *app) clusterRemoveCmd() *cobra.Command {
	var dryRun bool
	c := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a cluster: its claim, its listing and its workloads folder",
		Long: `Deletes the cluster's claim file, its entry in the claims kustomization and its
folder in the workloads tree, and lists the AWS resources Crossplane will delete
after the merge (from the rendered Composition when the renderer is available).
Teardown is ordered by the Composition: the spoke's workloads and bootstrap objects
first, then the node group and cluster, then the network. If the spoke's API cannot be
reached, the deletion waits at <spoke>-workloads: see fleet cluster break-glass.`,
		Example: `  fleet cluster remove payments --dry-run
  fleet cluster remove payments`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.clusterRemove(cmd.Context(), args[0], dryRun) },
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed and deleted, write nothing")
	return c
}

func (a *app) clusterRemove(ctx context.Context, name string, dryRun bool) error {
	t, err := a.openTree()
	if err != nil {
		return err
	}
	c, claims, err := a.findClaim(t, name)
	if err != nil {
		return err
	}
	info, err := a.info()
	if err != nil {
		return err
	}
	// What AWS loses, before the claim file is gone. Only this cluster's
	// claim builds (requestPrune leaves the others out).
	var deleted []string
	if a.deps.Renderer != nil {
		objs, err := a.deps.Renderer.RenderClaim(ctx, RenderRequest{Tree: t.Root, ClaimPath: t.Path(c.Rel), Info: info,
			Prune: requestPrune(t, claims, nil, []string{name})})
		if err != nil {
			return fmt.Errorf("rendering %s to list its resources: %w", c.Rel, err)
		}
		for _, o := range objs {
			if d, ok := awsDeletion(o); ok {
				deleted = append(deleted, d)
			}
		}
		sort.Strings(deleted)
	} else {
		deleted = genericResources(c.Claim, info.HubName)
	}
	ch := treeedit.New()
	if len(bytes.TrimSpace(mustRead(t.Path(c.Rel)))) > 0 {
		ch.Remove(c.Rel)
	}
	kpath := fleettree.ClaimsDir + "/" + fleettree.Kustomization
	if kb, err := os.ReadFile(t.Path(kpath)); err == nil {
		nb, _, err := kustfile.Remove(kb, strings.TrimPrefix(c.Rel, fleettree.ClaimsDir+"/"))
		if err != nil {
			return fmt.Errorf("%s: %w", kpath, err)
		}
		ch.Write(kpath, nb)
	}
	ch.RemoveAll(fleettree.WorkloadsRel(name))
	if dryRun {
		fmt.Fprintf(a.stdout, "dry run: would remove\n")
	} else {
		if err := ch.Apply(t.Root); err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		fmt.Fprintf(a.stdout, "removed\n")
	}
	fmt.Fprintf(a.stdout, "  %s\n  %s (entry %s)\n  %s/\n", c.Rel, kpath, strings.TrimPrefix(c.Rel, fleettree.ClaimsDir+"/"), fleettree.WorkloadsRel(name))
	fmt.Fprintf(a.stdout, "\nAfter the merge Crossplane deletes these AWS resources of cluster %s-%s (account %s, region %s):\n", info.HubName, name, info.AccountID, c.Claim.Spec.Region)
	for _, d := range deleted {
		fmt.Fprintf(a.stdout, "  %s\n", d)
	}
	if a.deps.Renderer == nil {
		fmt.Fprintf(a.stdout, "(list derived from the claim: the renderer is not available to list the exact composed resources)\n")
	}
	return nil
}

// awsDeletion describes what deleting a composed managed resource does in
// AWS: nothing for a resource that manages nothing (managementPolicies: [],
// e.g. a paused NAT slot), "kept" for one that may not delete or is
// orphaned, else it is deleted.
func awsDeletion(o *unstructured.Unstructured) (string, bool) {
	gv := o.GroupVersionKind()
	if !strings.HasSuffix(gv.Group, ".aws.upbound.io") && !strings.HasSuffix(gv.Group, ".aws.m.upbound.io") {
		return "", false
	}
	desc := fmt.Sprintf("%s.%s %s", gv.Kind, strings.Split(gv.Group, ".")[0], o.GetName())
	mp, found, _ := unstructured.NestedStringSlice(o.Object, "spec", "managementPolicies")
	if found && len(mp) == 0 {
		return "", false
	}
	dp, _, _ := unstructured.NestedString(o.Object, "spec", "deletionPolicy")
	if dp == "Orphan" || (found && !slices.Contains(mp, "*") && !slices.Contains(mp, "Delete")) {
		return desc + " (kept in AWS: not deleted by Crossplane)", true
	}
	return desc, true
}

func mustRead(p string) []byte {
	b, _ := os.ReadFile(p)
	return b
}

// genericResources describes what the WorkloadCluster Composition makes
// for a claim, when the renderer cannot say it exactly.
func genericResources(c *workloadcluster.Claim, hub string) []string {
	s := c.Spec
	nats := 1
	if s.NATMode == workloadcluster.NATPerAZ {
		nats = s.AvailabilityZones
	}
	return []string{
		fmt.Sprintf("EKS cluster %s-%s (Kubernetes %s), its managed node group and access entries", hub, c.Metadata.Name, s.KubernetesVersion),
		fmt.Sprintf("VPC %s with %d public and %d private subnets, internet gateway, route tables", s.VPCCIDR, s.AvailabilityZones, s.AvailabilityZones),
		fmt.Sprintf("%d NAT gateway(s) and Elastic IP(s)", nats),
		"the spoke's OIDC provider and IAM roles (cluster, node, crossplane, eso, lbc)",
	}
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
