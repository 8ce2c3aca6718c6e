package site

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	authv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/components/sealingkeys"
	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/build/loopback"
	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/engine"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/engineconfig"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/internet"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
)

// RepoName is the repository the suite's Git server serves the tree as.
const RepoName = "example-org/eks-fleet.git"

// HubOptions configures StartHub.
type HubOptions struct {
	// Dir holds every process's files and logs.
	Dir string
	// RepoRoot is the repository whose manifests/ the Git server serves
	// (with Pulumi.mgmt.yaml, the stack the program runs with).
	RepoRoot string
	// Network names the pod network (a bridge) and its prefix.
	Network string
	Prefix  netip.Prefix
	// Edit changes the tree in the Git work tree before the first commit
	// (planted errors).
	Edit func(work string) error
	// EKS are the spokes whose EKS clusters the suite plays, so that the
	// hub's bootstrap of them runs to their own Flux.
	EKS []EKSOptions
	// SpokesOnDemand readies the hub for spokes' EKS clusters started
	// later with AddEKS (the sandbox starts one per claim it finds).
	SpokesOnDemand bool
	// KillFirstUp kills the first `pulumi up` (the CLI and its plugins)
	// while the provider waits for the FluxInstance to be Ready (the
	// operator stand-in held until then), KillAfter into that step; the
	// next `pulumi up` must be refused (the stack is locked), and after
	// `pulumi cancel` the one after must bring the hub up.
	KillFirstUp bool
	// Config edits the hub stack's config (Pulumi.mgmt.yaml) before the
	// program runs (planted errors).
	Config func(cfg map[string]string)
	// SpokeAccounts are the accounts the stand-in AWS holds beside the
	// hub's, each prepared as `pulumi up` of its spoke-account stack
	// prepares it (the program's run under the mocks, as the hub's).
	SpokeAccounts []SpokeAccount
	// Deployers are roles beside each account's DeployerRole that may
	// run the hub's or a spoke account's stack program (HubPreflight,
	// AccountGuard), by ARN, each with its inline policy (a planted role
	// missing a permission).
	Deployers map[string]policydoc.Document
	// TreeCircuitBreaker runs the hub's Crossplane with the XR circuit
	// breaker the tree sets (Crossplane's defaults), not the suite's raise
	// (CircuitBreakerBurst, CircuitBreakerRefillRate): the hub then runs
	// the tree exactly as it ships.
	TreeCircuitBreaker bool
	// Progress, when set, is told as each stage of StartHub begins (one
	// line, no newline): the sandbox shows them while a cold cache builds
	// this checkout's function.
	Progress func(stage string)
}

// SpokeAccount is an account where the hub's Crossplane may make spokes
// (a claim's spec.account), as its spoke-account stack prepared it.
type SpokeAccount struct {
	// ID is the account's ID: the one the stack's credentials reach.
	ID string
	// Stack is the stack file, relative to HubOptions.RepoRoot
	// (Pulumi.acct-<name>.yaml).
	Stack string
	// Config edits the stack's config before the program runs (planted
	// errors: another hub's principal trusted, another external ID).
	Config func(cfg map[string]string)
}

// KillAfter is how long into the FluxInstance's create KillFirstUp kills
// the CLI: the instance exists on the cluster, its create is not recorded.
const KillAfter = 3 * time.Second

// instanceType is the FluxInstance's type token.
const instanceType = "kubernetes:" + fluxbootstrap.InstanceAPIVersion + ":FluxInstance"

// Hub is a management cluster brought up by `pulumi up -s mgmt` on the
// real controllers: the program's Kubernetes half run through the real
// Pulumi engine (pulumiUp) with the inputs its AWS half gave it under the
// mocks (CaptureHub), the Flux the FluxInstance asks for (FluxOperator)
// with source-, kustomize- and helm-controller running at the pinned
// release, syncing the repository's manifests/ from a local Git server over
// SSH with the deploy key the program generated.
type Hub struct {
	Site
	Bootstrap *HubBootstrap
	Internet  *internet.Internet
	Pods      *kube.PodRunner
	// AWS plays the provider family's controllers against Account, the
	// hub's, and the spoke accounts a ProviderConfig reaches.
	AWS     *aws.Provider
	Account *aws.Ledger
	// Accounts are every account the stand-in holds by ID, the hub's
	// (Account) among them.
	Accounts map[string]*aws.Ledger
	// accountStacks are what each spoke account's stack made, by ID.
	accountStacks map[string]*mocks.Mocks
	// spokeAccounts are HubOptions.SpokeAccounts by ID, with the checkout
	// their stacks are in, for AccountGuard.
	spokeAccounts map[string]SpokeAccount
	repoRoot      string
	// Endpoints are the AWS APIs the hub's controllers call directly.
	Endpoints *aws.Endpoints
	// EKS are the spokes' EKS clusters the suite plays, by spoke name:
	// those HubOptions.EKS named, fixed once StartHub returns, and those
	// AddEKS started (read them with Spokes while AddEKS may run).
	EKS   map[string]*EKS
	eksMu sync.Mutex
	// dir and images are where StartHub put the hub and the programs its
	// pods run, for AddEKS.
	dir    string
	images map[string]kube.Image
	// edits are what StartHub changed in the served tree, made again by
	// PushTree.
	edits []func(string) error

	kubeconfigs *kubeconfigSubstitute
	// cfg is the stack config the program ran with.
	cfg map[string]string

	// Engine runs the program's Kubernetes half (Stack, the hub's stack)
	// and Operator plays the Flux Operator.
	Engine   *engine.Engine
	Stack    *engine.Stack
	Operator *FluxOperator
	// KilledUp is what the killed first `pulumi up` did (KillFirstUp),
	// FirstUp what the `pulumi up` that brought the hub up did.
	KilledUp *engine.Result
	FirstUp  engine.Result

	kubeconfigText string
	fluxObjects    []*unstructured.Unstructured
	stopAWS        context.CancelFunc
	awsDone        chan struct{}
}

// Stop stops every process and removes the network.
func (h *Hub) Stop() {
	for _, e := range h.Spokes() {
		e.Stop()
	}
	if h.kubeconfigs != nil {
		h.kubeconfigs.close()
	}
	if h.stopAWS != nil {
		h.stopAWS()
		<-h.awsDone
	}
	if h.AWS != nil && h.AWS.IAM != nil {
		_ = h.AWS.IAM.Close()
	}
	if h.Operator != nil {
		h.Operator.Stop()
	}
	if h.Pods != nil {
		h.Pods.Stop()
	}
	if h.Internet != nil {
		h.Internet.Close()
	}
	h.stopSite()
}

// StartHub brings the hub up and returns once the controllers run; the
// caller waits for what it asserts.
func StartHub(ctx context.Context, opts HubOptions) (h *Hub, err error) {
	h = &Hub{}
	defer func() {
		if err != nil {
			h.Stop()
		}
	}()
	h.edits = []func(string) error{opts.Edit}
	if !opts.TreeCircuitBreaker {
		h.edits = []func(string) error{compressedTime, opts.Edit}
	}
	progress := func(stage string) {
		if opts.Progress != nil {
			opts.Progress(stage)
		}
	}
	progress("the hub's cluster (etcd, kube-apiserver, the controllers) and the Git server")
	if err := h.startSite(ctx, SiteOptions{Dir: opts.Dir, Name: "hub", RepoRoot: opts.RepoRoot, Network: opts.Network, Prefix: opts.Prefix,
		Edits: h.edits}); err != nil {
		return h, err
	}
	cfg, err := StackConfig(filepath.Join(opts.RepoRoot, "Pulumi.mgmt.yaml"))
	if err != nil {
		return h, err
	}
	if opts.Config != nil {
		opts.Config(cfg)
	}
	cfg["eks-fleet:gitUrl"] = h.Git.URL(RepoName)
	cfg["eks-fleet:gitKnownHosts"] = h.Git.KnownHosts + "\n"
	if h.Internet, err = internet.NewInternet(opts.Dir, h.Net.HostIP.String()); err != nil {
		return h, err
	}
	progress("the charts the hub installs")
	if err := ServeCharts(ctx, h.Internet, opts.Dir); err != nil {
		return h, err
	}
	progress("the Crossplane packages, this checkout's function built as its release builds it (for linux/" + runtime.GOARCH + "; minutes on a cold Go cache)")
	if _, _, err := ServePackages(ctx, h.Internet, opts.RepoRoot); err != nil {
		return h, err
	}
	progress("the programs the hub's pods run")
	images, err := PodImages(ctx, opts.RepoRoot, opts.Dir)
	if err != nil {
		return h, err
	}
	// Build every program the pods run now (a no-op when cached), so a
	// cold build does not count against the time the suite gives the
	// controllers.
	var tools []binaries.Tool
	for _, img := range images {
		if img.Path == "" {
			tools = append(tools, img.Tool)
		}
	}
	if _, err := binaries.BuildAll(ctx, binaries.Parallel, tools...); err != nil {
		return h, err
	}
	h.Pods = &kube.PodRunner{Cluster: h.Cluster, Net: h.Net, Dir: opts.Dir, Images: images,
		Env:   h.Internet.Env(h.Net.Prefix.String()),
		Hosts: func() []byte { return kube.ServiceHosts(context.Background(), h.Cluster) }}
	if err := h.Pods.Start(context.Background()); err != nil {
		return h, err
	}
	h.cfg = cfg
	if h.Bootstrap, err = CaptureHub(cfg); err != nil {
		return h, err
	}
	kubeconfig, err := os.ReadFile(h.Cluster.Kubeconfig)
	if err != nil {
		return h, err
	}
	h.kubeconfigText = string(kubeconfig)
	progress("`pulumi up -s mgmt` through the Pulumi engine")
	if err := h.pulumiUp(ctx, opts.Dir, opts.KillFirstUp); err != nil {
		return h, err
	}
	progress("the stand-in AWS")
	if err := h.startAWS(ctx, cfg, opts); err != nil {
		return h, err
	}
	if len(opts.EKS) > 0 || opts.SpokesOnDemand {
		if h.kubeconfigs, err = startKubeconfigSubstitute(ctx, h.Cluster); err != nil {
			return h, err
		}
	}
	h.dir, h.images, h.EKS = opts.Dir, images, map[string]*EKS{}
	for _, o := range opts.EKS {
		region, err := claimRegion(opts.RepoRoot, o.Spoke)
		if err != nil {
			return h, fmt.Errorf("EKS cluster of %s: %w", o.Spoke, err)
		}
		if _, err := h.AddEKS(ctx, o, region); err != nil {
			return h, err
		}
	}
	return h, h.startFlux(ctx)
}

// AddEKS starts the cluster that plays the EKS cluster of the claim
// opts.Spoke in region and points the hub's bootstrap at it. The hub must
// have been started with the spoke in HubOptions.EKS or with
// SpokesOnDemand.
func (h *Hub) AddEKS(ctx context.Context, opts EKSOptions, region string) (*EKS, error) {
	if h.kubeconfigs == nil {
		return nil, fmt.Errorf("EKS cluster of %s: the hub was started without SpokesOnDemand", opts.Spoke)
	}
	h.eksMu.Lock()
	_, dup := h.EKS[opts.Spoke]
	h.eksMu.Unlock()
	if dup {
		return nil, fmt.Errorf("EKS cluster of %s: already running", opts.Spoke)
	}
	e, err := h.startEKS(ctx, h.dir, region, h.images, opts)
	if err != nil {
		return nil, fmt.Errorf("EKS cluster of %s: %w", opts.Spoke, err)
	}
	h.eksMu.Lock()
	h.EKS[opts.Spoke] = e
	h.eksMu.Unlock()
	return e, nil
}

// RemoveEKS stops the EKS cluster of spoke and forgets it; the kubeconfig
// Secret the hub's bootstrap used goes with it.
func (h *Hub) RemoveEKS(ctx context.Context, spoke string) error {
	h.eksMu.Lock()
	e, ok := h.EKS[spoke]
	delete(h.EKS, spoke)
	h.eksMu.Unlock()
	if !ok {
		return fmt.Errorf("no EKS cluster of %s runs", spoke)
	}
	e.Stop()
	if e.Cluster != nil {
		// A spoke of the same name later starts on a new etcd.
		if err := os.RemoveAll(e.Cluster.Dir); err != nil {
			return fmt.Errorf("EKS cluster of %s: %w", spoke, err)
		}
	}
	name := compose.BootstrapName(spoke, compose.KubeconfigKey)
	if err := h.Cluster.Kube.CoreV1().Secrets(compose.BootstrapNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubeconfig Secret of %s: %w", spoke, err)
	}
	return nil
}

// Spokes are the EKS clusters running now, by spoke name.
func (h *Hub) Spokes() map[string]*EKS {
	h.eksMu.Lock()
	defer h.eksMu.Unlock()
	return maps.Clone(h.EKS)
}

// CrossplaneRelease is the hub's Crossplane HelmRelease in the tree.
const CrossplaneRelease = "manifests/gitops-system/infrastructure/crossplane/release.yaml"

// CircuitBreakerBurst and CircuitBreakerRefillRate are the XR circuit
// breaker's burst and refill rate the suite runs Crossplane with
// (Crossplane 2.4's defaults are 100 events and one a second). The stand-in
// AWS creates a spoke's ~50 resources in seconds where AWS takes 15
// minutes or more, so their provider writes (finalizer, external name,
// status) reach the composite at a rate AWS never produces; and the
// suite's scenarios commit every half minute or so, each commit walking the
// spoke's seven bootstrap Kustomizations, whose status writes (a few a
// second while the chain walks, measured) each wake the composite. At the
// defaults the breaker opens and the composite reacts only to its 30 s
// probes and the function's requeue for 5 minutes: since function v0.7.0
// a waiting composite is run again after 30 s (fnjson.PendingTTL), so a
// spoke is composed at the defaults too, slower (TestHubSyncsTheTree
// passed at them in one run, 1,068 s against 914 s, docs/performance.md;
// before v0.7.0 a dropped event waited for the 10-minute TTL), and
// TestHubAddsAndDestroysSpokes runs at them. So the raise is for time
// only: the one change the suite makes to the tree it syncs, on every hub
// but those started with HubOptions.TreeCircuitBreaker; the suite checks
// separately that a composed spoke at rest writes nothing (what the
// breaker protects against).
const (
	CircuitBreakerBurst      = 1000
	CircuitBreakerRefillRate = 10
)

// compressedTime edits the tree for the stand-in's compressed timeline
// (CircuitBreakerBurst, CircuitBreakerRefillRate).
func compressedTime(work string) error {
	path := filepath.Join(work, CrossplaneRelease)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	const anchor = "\n  values:\n    args:\n"
	if strings.Count(string(b), anchor) != 1 || strings.Contains(string(b), "--circuit-breaker-") {
		return fmt.Errorf("%s: want one values.args list, without circuit breaker flags, to add the suite's to", CrossplaneRelease)
	}
	out := strings.Replace(string(b), anchor, fmt.Sprintf("%s      - --circuit-breaker-burst=%d\n      - --circuit-breaker-refill-rate=%d\n",
		anchor, CircuitBreakerBurst, CircuitBreakerRefillRate), 1)
	return os.WriteFile(path, []byte(out), 0o644)
}

// startAWS runs the provider family's stand-in against an empty account
// (the mocks' account, the stack's partition), and the spoke accounts as
// their stacks prepared them, until Stop.
func (h *Hub) startAWS(ctx context.Context, cfg map[string]string, opts HubOptions) error {
	dir, err := upstream.Dir(ctx, upstream.ProviderAWSModule, "v"+versions.ProviderAWS)
	if err != nil {
		return err
	}
	h.Endpoints = &aws.Endpoints{Region: cfg["aws:region"], Account: mocks.AccountID, Partition: "aws",
		Roles: map[string]string{}, Review: h.reviewToken}
	for _, r := range h.Bootstrap.Mocks.Resources() {
		switch {
		case r.Type == "aws:iam/role:Role" && r.Custom:
			h.Endpoints.Roles[str(r.State, "arn")] = str(r.Inputs, "assumeRolePolicy")
		case r.Type == "aws:secretsmanager/secret:Secret" && r.Custom:
			arn := str(r.State, "arn")
			h.Endpoints.Secrets = append(h.Endpoints.Secrets, aws.Secret{ARN: arn, Name: str(r.Inputs, "name"), Value: h.Bootstrap.Secrets[arn],
				KMSKeyARN: str(r.Inputs, "kmsKeyId")})
		}
	}
	h.Account = aws.NewLedger()
	h.Accounts = map[string]*aws.Ledger{mocks.AccountID: h.Account}
	h.accountStacks, h.spokeAccounts, h.repoRoot = map[string]*mocks.Mocks{}, map[string]SpokeAccount{}, opts.RepoRoot
	for _, a := range opts.SpokeAccounts {
		if _, dup := h.Accounts[a.ID]; dup {
			return fmt.Errorf("spoke account %s: listed twice, or the hub's", a.ID)
		}
		m, err := CaptureAccount(filepath.Join(opts.RepoRoot, a.Stack), a.ID, a.Config)
		if err != nil {
			return err
		}
		h.Accounts[a.ID], h.accountStacks[a.ID], h.spokeAccounts[a.ID] = aws.NewLedger(), m, a
	}
	// The read APIs (the program's pre-flight check, a spoke account's
	// delete guard) answer each caller from its account.
	h.Endpoints.Ledgers, h.Endpoints.Regions = h.Accounts, aws.DefaultRegions
	if !slices.Contains(aws.DefaultRegions, h.Endpoints.Region) {
		h.Endpoints.Regions = append(slices.Clone(aws.DefaultRegions), h.Endpoints.Region)
	}
	// Roles Crossplane created (a spoke's IRSA roles) exist in the
	// account it made them in.
	h.Endpoints.Trust = func(arn string) (string, bool) {
		for _, l := range h.Accounts {
			for _, r := range l.Find("iam.aws.upbound.io/Role", func(r aws.Resource) bool { return r.ARN == arn }) {
				p, ok := r.Attrs["assumeRolePolicy"].(string)
				return p, ok
			}
		}
		return "", false
	}
	for host, handler := range h.Endpoints.Hosts() {
		h.Internet.Handle(host, handler)
	}
	// The add-on versions AWS offers are those the program looked up (the
	// mocks' getAddonVersion), as cluster-info carries them.
	var addons clusterinfo.AddonVersions
	for _, o := range h.Bootstrap.Objects {
		if o.GetKind() == "ConfigMap" && o.GetName() == clusterinfo.Name && o.GetNamespace() == clusterinfo.Namespace {
			v, _, _ := unstructured.NestedString(o.Object, "data", clusterinfo.SpokeAddonVersions)
			if addons, err = clusterinfo.ParseAddonVersions(v); err != nil {
				return err
			}
		}
	}
	if addons == nil {
		return fmt.Errorf("the program wrote no %s/%s with %s", clusterinfo.Namespace, clusterinfo.Name, clusterinfo.SpokeAddonVersions)
	}
	// Every call the providers make is authorized as AWS would, as the
	// role the providers' pods run as, with the policies the program
	// wrote (and, for a spoke's, those its hub composed).
	toolDir, err := iamsim.ToolDir(".")
	if err != nil {
		return err
	}
	policies, roles, err := programIAM(h.Bootstrap.Mocks.Resources())
	if err != nil {
		return err
	}
	// A spoke account's role is assumed across accounts: STS decides by
	// its trust policy as well as the caller's policies.
	trusts := map[string]policydoc.Document{}
	for id, m := range h.accountStacks {
		p, r, err := programIAM(m.Resources())
		if err != nil {
			return fmt.Errorf("spoke account %s: %w", id, err)
		}
		maps.Copy(policies, p)
		maps.Copy(roles, r)
		for _, role := range m.ByType("aws:iam/role:Role") {
			d, err := policydoc.Parse(str(role.Inputs, "assumeRolePolicy"))
			if err != nil {
				return fmt.Errorf("spoke account %s: trust policy of %s: %w", id, role.Name, err)
			}
			trusts[str(role.State, "arn")] = d
		}
	}
	for id := range h.Accounts {
		roles[DeployerRole(id)] = aws.Role{Inline: []policydoc.Document{DeployerPolicy()}}
	}
	for arn, d := range opts.Deployers {
		roles[arn] = aws.Role{Inline: []policydoc.Document{d}}
	}
	authz, err := aws.NewAuthorizer(toolDir, policies, roles)
	if err != nil {
		return err
	}
	authz.ResourcePolicies = trusts
	for _, r := range h.Bootstrap.Mocks.Resources() {
		if r.Type == "aws:kms/key:Key" && r.Custom {
			// A key made without a policy gets AWS's default key policy,
			// which the sealing key writes out (delegate to IAM).
			d := sealingkeys.KeyPolicy("aws", mocks.AccountID)
			if p := str(r.Inputs, "policy"); p != "" {
				if d, err = policydoc.Parse(p); err != nil {
					return fmt.Errorf("key policy of %s: %w", r.Name, err)
				}
			}
			authz.ResourcePolicies[str(r.State, "arn")] = d
		}
	}
	h.Endpoints.Authorize = func(role, action, resource string, keys map[string]any) error {
		id := accountOfARN(role)
		l, ok := h.Accounts[id]
		if !ok {
			id, l = mocks.AccountID, h.Account
		}
		return authz.Authorize(role, id, l, action, resource, keys)
	}
	h.AWS = &aws.Provider{Client: h.Cluster.Client, Module: dir, Account: mocks.AccountID, Partition: "aws", Ledger: h.Account,
		Accounts: h.Accounts, AddonVersions: addons, IAM: authz,
		// EKS takes minutes to move a control plane or a node group to a
		// new version and reports the old one meanwhile; a few seconds
		// here keep that order visible.
		UpdateTakes: map[string]time.Duration{"aws_eks_cluster": 5 * time.Second, "aws_eks_node_group": 5 * time.Second},
		// A kind a package installs is served within this (each read
		// lists the CRDs' metadata and reads a provider CRD that changed).
		KindsEvery: 5 * time.Second}
	awsCtx, cancel := context.WithCancel(context.Background())
	h.stopAWS, h.awsDone = cancel, make(chan struct{})
	go func() {
		defer close(h.awsDone)
		h.AWS.Run(awsCtx, time.Second)
	}()
	return nil
}

// programIAM are the managed policies (by ARN) and the roles (by ARN, with
// their inline and attached policies, boundary and tags) the program
// created, as the mocks recorded them.
func programIAM(rs []*mocks.Resource) (map[string]policydoc.Document, map[string]aws.Role, error) {
	policies := map[string]policydoc.Document{}
	roles := map[string]aws.Role{}
	names := map[string]string{} // role name -> ARN
	for _, r := range rs {
		if !r.Custom {
			continue
		}
		switch r.Type {
		case "aws:iam/policy:Policy":
			d, err := policydoc.Parse(str(r.State, "policy"))
			if err != nil {
				return nil, nil, fmt.Errorf("policy %s: %w", r.Name, err)
			}
			policies[str(r.State, "arn")] = d
		case "aws:iam/role:Role":
			role := aws.Role{Boundary: str(r.State, "permissionsBoundary"), Tags: map[string]string{}}
			if t, ok := plain(r.State["tags"]).(map[string]any); ok {
				for k, v := range t {
					role.Tags[k], _ = v.(string)
				}
			}
			roles[str(r.State, "arn")] = role
			names[str(r.State, "name")] = str(r.State, "arn")
		}
	}
	for _, r := range rs {
		if !r.Custom {
			continue
		}
		arn, ok := names[str(r.State, "role")]
		if !ok {
			continue
		}
		role := roles[arn]
		switch r.Type {
		case "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
			role.Attached = append(role.Attached, str(r.State, "policyArn"))
		case "aws:iam/rolePolicy:RolePolicy":
			d, err := policydoc.Parse(str(r.State, "policy"))
			if err != nil {
				return nil, nil, fmt.Errorf("role policy %s: %w", r.Name, err)
			}
			role.Inline = append(role.Inline, d)
		}
		roles[arn] = role
	}
	return policies, roles, nil
}

// StackConfig is a Pulumi stack file's config as the engine hands it to
// the program: merged with the Pulumi.yaml beside it by the Pulumi SDK's
// own config merge (declared defaults applied, required settings checked).
func StackConfig(path string) (map[string]string, error) {
	return engineconfig.FileValues(filepath.Join(filepath.Dir(path), "Pulumi.yaml"), path)
}

// pulumiUp runs the program's Kubernetes half through the real engine
// (`pulumi up` of KubernetesProgram with the args the mocks' run gave
// FluxBootstrap): the Flux Operator's chart installed by the provider's
// Helm release from the internet stand-in's registry, the FluxInstance
// waited for until the operator stand-in reports it Ready, then the deploy
// key Secret, cluster-info, the GitRepository and the root Kustomization.
// What the engine applied must be what the mocks captured. The deploy key
// the program generated is authorized on the Git server first.
func (h *Hub) pulumiUp(ctx context.Context, dir string, kill bool) error {
	args, err := h.Bootstrap.FluxArgs(h.cfg)
	if err != nil {
		return err
	}
	for _, o := range h.Bootstrap.Objects {
		if o.GetKind() == "Secret" && o.GetName() == fluxbootstrap.SyncName {
			pub, err := secretValue(o, fluxbootstrap.IdentityPubKey)
			if err != nil {
				return err
			}
			if err := h.Git.Authorize(pub); err != nil {
				return err
			}
		}
	}
	h.Operator = NewFluxOperator(h.Cluster)
	h.Operator.OnUninstall = h.stopFlux
	if err := h.Operator.Start(context.Background()); err != nil {
		return err
	}
	if h.Engine, err = engine.New(ctx, filepath.Join(dir, "pulumi"), h.Internet.Env(h.Net.Prefix.String())); err != nil {
		return err
	}
	program, err := h.program(args)
	if err != nil {
		return err
	}
	if h.Stack, err = h.Engine.Stack(ctx, mocks.Project, "mgmt", program); err != nil {
		return err
	}
	if kill {
		h.Operator.Hold(true)
		killed, err := h.Stack.UpKilled(ctx, func(st engine.Step) bool { return st.Type == instanceType }, KillAfter)
		h.Operator.Hold(false)
		if err == nil {
			return fmt.Errorf("pulumi up ended before it was killed: %v", killed.Steps)
		}
		h.KilledUp = &killed
		// The killed CLI's lock stays on the stack: the next operation is
		// refused, naming `pulumi cancel`, which removes it.
		if _, err := h.Stack.Up(ctx); err == nil || !strings.Contains(err.Error(), "pulumi cancel") {
			return fmt.Errorf("pulumi up after a killed one: %v; want it refused until `pulumi cancel`", err)
		}
		if err := h.Stack.Cancel(ctx); err != nil {
			return err
		}
	}
	if h.FirstUp, err = h.Stack.Up(ctx); err != nil {
		return fmt.Errorf("%w\nthe Flux Operator stand-in: %v", err, h.Operator.Err())
	}
	if err := CheckApplied(ctx, h.Cluster, h.Bootstrap.Objects); err != nil {
		return err
	}
	h.fluxObjects = h.Operator.Installed()
	if len(h.fluxObjects) == 0 {
		return errors.New("pulumi up: the FluxInstance is Ready but the operator stand-in installed nothing")
	}
	return nil
}

// FluxObjects is the Flux installation the operator stand-in made at the
// first pulumi up.
func (h *Hub) FluxObjects() []*unstructured.Unstructured { return h.fluxObjects }

// program is the engine's program for args on this hub's cluster.
func (h *Hub) program(args fluxbootstrap.Args) (pulumi.RunFunc, error) {
	info, err := h.Bootstrap.ClusterInfo()
	if err != nil {
		return nil, err
	}
	return KubernetesProgram(args, h.kubeconfigText, ClusterARN(info)), nil
}

// stopFlux stops the hub's Flux controllers (the operator uninstalls Flux).
func (h *Hub) stopFlux() {
	for _, p := range h.Flux {
		p.Stop(10 * time.Second)
	}
}

// Up runs the hub's program again as `pulumi up` does after `pulumi config
// set`: edit changes the stack config; the mocks' run keeps the state of
// resources whose inputs did not change (mocks.Mocks.Prior: the key pairs,
// the generated names); a Secrets Manager document whose value changed is
// put as the SecretVersion's update puts it (before anything that depends
// on it, as cluster-info's sealing variables do); and the Kubernetes half
// runs through the real engine with the new args (`pulumi up`, server-side
// apply over what Flux and the operator wrote since). It returns the
// engine's steps.
func (h *Hub) Up(ctx context.Context, edit func(cfg map[string]string)) (engine.Result, error) {
	cfg := maps.Clone(h.cfg)
	edit(cfg)
	next, err := captureHub(cfg, h.Bootstrap.Mocks)
	if err != nil {
		return engine.Result{}, err
	}
	for arn, v := range next.Secrets {
		if h.Bootstrap.Secrets[arn] != v {
			if err := h.Endpoints.PutSecretValue(arn, v); err != nil {
				return engine.Result{}, err
			}
		}
	}
	args, err := next.FluxArgs(cfg)
	if err != nil {
		return engine.Result{}, err
	}
	h.cfg, h.Bootstrap = cfg, next
	program, err := h.program(args)
	if err != nil {
		return engine.Result{}, err
	}
	h.Stack.SetProgram(program)
	res, err := h.Stack.Up(ctx)
	if err != nil {
		return res, err
	}
	return res, CheckApplied(ctx, h.Cluster, next.Objects)
}

// Destroy runs `pulumi destroy` of the Kubernetes half through the real
// engine.
func (h *Hub) Destroy(ctx context.Context) (engine.Result, error) {
	return h.Stack.Destroy(ctx)
}

// secretValue reads key from a Secret's stringData or data.
func secretValue(o *unstructured.Unstructured, key string) (string, error) {
	if s, ok, _ := unstructured.NestedString(o.Object, "stringData", key); ok {
		return s, nil
	}
	if s, ok, _ := unstructured.NestedString(o.Object, "data", key); ok {
		return decodeBase64(s)
	}
	return "", fmt.Errorf("Secret %s/%s has no %s", o.GetNamespace(), o.GetName(), key)
}

// Logs returns the end of every pod container's log and the pod runner's
// notes, for a failed test.
func (h *Hub) Logs(dir string) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(dir, "pods", "*", "*.log"))
	for _, l := range logs {
		p := &kube.Proc{LogPath: l}
		fmt.Fprintf(&b, "--- %s\n%s\n", strings.TrimPrefix(l, dir), p.Tail(15))
	}
	return b.String()
}

// Exited names a Flux controller that has exited, with its log's end.
func (h *Hub) Exited() error {
	for name, p := range h.Flux {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited (%v):\n%s", name, err, p.Tail(20))
		}
	}
	return nil
}

// startFlux runs the Flux controllers the FluxInstance lists as local
// processes (PodRunner is not needed for them: they reach only the API
// server, the Git server and each other), with the arguments their
// Deployments give them (the instance's patches included: --concurrent,
// feature gates), the addresses moved to loopback ports, leader election
// off and no event recorder (notification-controller is not run).
func (h *Hub) startFlux(ctx context.Context) error {
	procs, err := StartFlux(ctx, filepath.Join(h.Cluster.Dir, "flux"), h.Cluster.Kubeconfig, h.fluxObjects,
		h.Internet.Env(h.Net.Prefix.String()), fluxTools...)
	for name, p := range procs {
		h.Flux[name] = p
	}
	return err
}

// StartFlux runs the given Flux controllers as processes under dir with
// the cluster's admin kubeconfig, with the arguments of their Deployments
// in the Flux installation fluxObjects (FluxInstallation) but addresses on
// loopback and leader election off; env is added to theirs. It returns
// what it started, also on error.
func StartFlux(ctx context.Context, dir, kubeconfig string, fluxObjects []*unstructured.Unstructured, env []string, tools ...binaries.Tool) (map[string]*kube.Proc, error) {
	started := map[string]*kube.Proc{}
	if err := os.MkdirAll(filepath.Join(dir, "storage"), 0o755); err != nil {
		return started, err
	}
	port := func() (string, error) {
		p, err := loopback.Port()
		return "127.0.0.1:" + strconv.Itoa(p), err
	}
	for _, tool := range tools {
		metrics, err := port()
		if err != nil {
			return started, err
		}
		health, err := port()
		if err != nil {
			return started, err
		}
		local := []string{"--enable-leader-election=false", "--log-encoding=console", "--metrics-addr", metrics, "--health-addr", health}
		if tool.Name == binaries.SourceController.Name {
			storage, err := port()
			if err != nil {
				return started, err
			}
			local = append(local, "--storage-path", filepath.Join(dir, "storage"), "--storage-addr", storage, "--storage-adv-addr", storage)
		}
		args, err := deploymentArgs(fluxObjects, tool.Name)
		if err != nil {
			return started, err
		}
		bin, err := binaries.Build(ctx, tool)
		if err != nil {
			return started, err
		}
		proc := kube.NewProc(dir, tool.Name, bin, append(args, local...)...)
		proc.Env = append([]string{"KUBECONFIG=" + kubeconfig, "RUNTIME_NAMESPACE=flux-system", "HOME=" + dir}, env...)
		if err := proc.Start(); err != nil {
			return started, err
		}
		started[tool.Name] = proc
	}
	return started, nil
}

// localFlags are the flags startFlux sets itself: addresses, storage,
// leader election, log encoding and the event recorder's address.
var localFlags = []string{"--events-addr", "--enable-leader-election", "--log-encoding", "--metrics-addr", "--health-addr",
	"--storage-path", "--storage-addr", "--storage-adv-addr"}

// deploymentArgs are the arguments of the Deployment name's first
// container in the Flux installation, without the localFlags.
func deploymentArgs(objs []*unstructured.Unstructured, name string) ([]string, error) {
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != name {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(cs) == 0 {
			break
		}
		raw, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
		var out []string
		for _, a := range raw {
			flag, _, _ := strings.Cut(a, "=")
			if !slices.Contains(localFlags, flag) {
				out = append(out, a)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("the Flux installation has no Deployment %s with a container", name)
}

func decodeBase64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

// reviewToken checks a service-account token with the API server's
// TokenReview for the audiences it claims, as an OIDC relying party
// checks one against the issuer's keys.
func (h *Hub) reviewToken(ctx context.Context, token string) (string, []string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", nil, fmt.Errorf("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", nil, fmt.Errorf("JWT payload: %w", err)
	}
	var claims struct {
		Aud any    `json:"aud"`
		Iss string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", nil, fmt.Errorf("JWT claims: %w", err)
	}
	var auds []string
	switch a := claims.Aud.(type) {
	case string:
		auds = []string{a}
	case []any:
		for _, e := range a {
			if s, ok := e.(string); ok {
				auds = append(auds, s)
			}
		}
	}
	// The cluster that issued it: a spoke's tokens carry its EKS issuer.
	kube := h.Cluster.Kube
	for _, e := range h.Spokes() {
		if e.Issuer == claims.Iss {
			kube = e.Cluster.Kube
		}
	}
	tr, err := kube.AuthenticationV1().TokenReviews().Create(ctx, &authv1.TokenReview{
		Spec: authv1.TokenReviewSpec{Token: token, Audiences: auds}}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, err
	}
	if !tr.Status.Authenticated {
		return "", nil, fmt.Errorf("token not valid: %s", tr.Status.Error)
	}
	return tr.Status.User.Username, tr.Status.Audiences, nil
}
