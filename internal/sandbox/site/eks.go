package site

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// EKS is a spoke's EKS cluster as the hub's bootstrap reaches it, played by
// a local cluster (API server, controller manager, scheduler, a kwok node)
// on the hub's pod network: its service-account issuer is the OIDC issuer
// the AWS stand-in reports for the claim's cluster, so its tokens are what
// the spoke's IRSA roles (composed in the stand-in account) trust; a
// PodRunner runs the pods the bootstrap's charts put on it (External
// Secrets, Sealed Secrets, and whatever the spoke's own Flux installs);
// and the Flux Operator is played by the suite (FluxOperator) as on the hub:
// once the FluxInstance exists, the Flux it asks for is applied
// (FluxInstallation) and its source-, kustomize- and helm-controller run
// as processes with the spoke's kubeconfig, and the instance is reported
// Ready.
//
// What it does not model: the API server exists from the suite's start,
// or in the sandbox from when the claim appears on the hub (on AWS from
// the cluster's ACTIVE; nothing reaches it earlier, since the function
// composes the bootstrap only then); the hub reaches it with an
// admin kubeconfig (kubeconfigSubstitute) where EKS would map the hub's
// Flux role through the composed access entry; nodes are one kwok node,
// not the node group's instances.
type EKS struct {
	// Spoke is the claim's name, Account the account its cluster is in;
	// ARN and Issuer are what the stand-in account reports for its EKS
	// cluster.
	Spoke, Account, ARN, Issuer string
	Cluster                     *kube.Cluster
	Pods                        *kube.PodRunner
	// AWS plays the provider family's controllers the spoke's own
	// Crossplane installs, against the spoke's account (the hub's, or
	// its spec.account).
	AWS *aws.Provider
	// LoadBalancers plays the load balancer controller the spoke's tools
	// install, in the same account.
	LoadBalancers *aws.LoadBalancerController

	operator *FluxOperator
	mu       sync.Mutex
	flux     map[string]*kube.Proc
	cancel   context.CancelFunc
	done     chan struct{}
}

// EKSOptions names a spoke the suite plays the EKS cluster of.
type EKSOptions struct {
	// Spoke is the claim's name (a file under the tree's claims folder).
	Spoke string
	// PodCIDR is where the cluster's pods take addresses: inside the hub's
	// pod network, distinct from every other cluster's.
	PodCIDR netip.Prefix
	// Account is the claim's spec.account: the spoke account the cluster
	// is made in (one of HubOptions.SpokeAccounts); empty, the hub's.
	Account string
}

// HubEnv is the hub's identity as the program wrote it to cluster-info.
func (h *Hub) HubEnv() (hubiam.Env, error) {
	d, err := h.ClusterInfo()
	if err != nil {
		return hubiam.Env{}, err
	}
	env := hubiam.Env{HubName: d[clusterinfo.HubName], AccountID: d[clusterinfo.AccountID], Partition: d[clusterinfo.Partition], Region: d[clusterinfo.Region]}
	if env.HubName == "" || env.AccountID == "" || env.Partition == "" {
		return env, fmt.Errorf("cluster-info lacks %s, %s or %s", clusterinfo.HubName, clusterinfo.AccountID, clusterinfo.Partition)
	}
	return env, nil
}

// ClusterInfo is the data of the cluster-info ConfigMap the program wrote.
func (h *Hub) ClusterInfo() (map[string]string, error) {
	for _, o := range h.Bootstrap.Objects {
		if o.GetKind() == "ConfigMap" && o.GetName() == clusterinfo.Name && o.GetNamespace() == clusterinfo.Namespace {
			d, _, _ := unstructured.NestedStringMap(o.Object, "data")
			return d, nil
		}
	}
	return nil, fmt.Errorf("the program wrote no %s/%s", clusterinfo.Namespace, clusterinfo.Name)
}

// claimRegion reads spec.region of the claim spoke in the tree.
func claimRegion(repoRoot, spoke string) (string, error) {
	path := filepath.Join(repoRoot, "manifests", fleettree.ClaimRel(spoke))
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var claim workloadcluster.Claim
	if err := yaml.Unmarshal(b, &claim); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if claim.Spec.Region == "" {
		return "", fmt.Errorf("%s: no spec.region", path)
	}
	return claim.Spec.Region, nil
}

// startEKS brings up the cluster that plays opts.Spoke's EKS cluster in
// region and points the hub's bootstrap at it.
func (h *Hub) startEKS(ctx context.Context, dir, region string, images map[string]kube.Image, opts EKSOptions) (e *EKS, err error) {
	env, err := h.HubEnv()
	if err != nil {
		return nil, err
	}
	account := h.Account
	if opts.Account != "" {
		if account = h.Accounts[opts.Account]; account == nil || opts.Account == env.AccountID {
			return nil, fmt.Errorf("account %s is not one of the stand-in's spoke accounts", opts.Account)
		}
		env = env.InAccount(opts.Account)
	}
	e = &EKS{Spoke: opts.Spoke, Account: env.AccountID, ARN: spokeiam.ClusterARN(env, region, opts.Spoke), flux: map[string]*kube.Proc{}}
	_, e.Issuer = aws.EKSCluster(e.ARN, spokeiam.ClusterName(env, opts.Spoke), region)
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if e.Cluster, err = kube.StartCluster(ctx, dir, "eks-"+opts.Spoke, kube.ClusterOptions{Network: h.Net, PodCIDR: opts.PodCIDR.String(), Issuer: e.Issuer}); err != nil {
		return e, err
	}
	e.Pods = &kube.PodRunner{Cluster: e.Cluster, Net: h.Net, Dir: e.Cluster.Dir, Images: images,
		Env:   h.Internet.Env(h.Net.Prefix.String()),
		Hosts: func() []byte { return kube.ServiceHosts(context.Background(), e.Cluster) }}
	if err := e.Pods.Start(context.Background()); err != nil {
		return e, err
	}
	kubeconfig, err := os.ReadFile(e.Cluster.Kubeconfig)
	if err != nil {
		return e, err
	}
	name := compose.BootstrapName(opts.Spoke, compose.KubeconfigKey)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: compose.BootstrapNamespace},
		Data: map[string][]byte{"value": kubeconfig}}
	if _, err := h.Cluster.Kube.CoreV1().Secrets(compose.BootstrapNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return e, fmt.Errorf("kubeconfig Secret for %s: %w", opts.Spoke, err)
	}
	h.kubeconfigs.Register(name)
	e.AWS = &aws.Provider{Client: e.Cluster.Client, Module: h.AWS.Module, Account: e.Account, Partition: h.AWS.Partition, Ledger: account,
		KindsEvery: h.AWS.KindsEvery, IAM: h.AWS.IAM}
	e.LoadBalancers = &aws.LoadBalancerController{Client: e.Cluster.Kube, Ledger: account,
		Partition: h.AWS.Partition, Account: e.Account, Region: region}
	opCtx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	e.operator = NewFluxOperator(e.Cluster)
	e.operator.OnInstall = e.startFlux(h.Internet.Env(h.Net.Prefix.String()))
	if err := e.operator.Start(opCtx); err != nil {
		cancel()
		return e, err
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		e.LoadBalancers.Run(opCtx, time.Second)
	}()
	go func() {
		defer wg.Done()
		e.AWS.Run(opCtx, time.Second)
	}()
	go func() {
		wg.Wait()
		close(e.done)
	}()
	return e, nil
}

// Stop stops the operator, the spoke's Flux, its pods and the cluster.
func (e *EKS) Stop() {
	if e.cancel != nil {
		e.cancel()
		<-e.done
	}
	if e.operator != nil {
		e.operator.Stop()
	}
	e.mu.Lock()
	for _, p := range e.flux {
		p.Stop(0)
	}
	e.mu.Unlock()
	if e.Pods != nil {
		e.Pods.Stop()
	}
	if e.Cluster != nil {
		e.Cluster.Stop()
	}
}

// Flux returns the spoke's Flux controllers started so far.
func (e *EKS) Flux() map[string]*kube.Proc {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]*kube.Proc{}
	for k, v := range e.flux {
		out[k] = v
	}
	return out
}

// Errors are what the operator stand-in could not do.
func (e *EKS) Errors() []string {
	return e.operator.Errors()
}

// startFlux runs the spoke's Flux controllers the first time the operator
// stand-in installs Flux (later generations are applied, the running
// controllers kept: upgrades are not modelled).
func (e *EKS) startFlux(env []string) func(ctx context.Context, objs []*unstructured.Unstructured) error {
	return func(ctx context.Context, objs []*unstructured.Unstructured) error {
		e.mu.Lock()
		started := len(e.flux) > 0
		e.mu.Unlock()
		if started {
			return nil
		}
		procs, err := StartFlux(ctx, filepath.Join(e.Cluster.Dir, "flux"), e.Cluster.Kubeconfig, objs, env, fluxTools...)
		e.mu.Lock()
		for k, v := range procs {
			e.flux[k] = v
		}
		e.mu.Unlock()
		return err
	}
}

// Logs returns the end of the spoke's pod and Flux logs and the operator
// stand-in's errors, for a failed test.
func (e *EKS) Logs() string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(e.Cluster.Dir, "pods", "*", "*.log"))
	sort.Strings(logs)
	for _, l := range logs {
		p := &kube.Proc{LogPath: l}
		fmt.Fprintf(&b, "--- %s %s\n%s\n", e.Spoke, strings.TrimPrefix(l, e.Cluster.Dir), p.Tail(15))
	}
	for name, p := range e.Flux() {
		fmt.Fprintf(&b, "--- %s %s\n%s\n", e.Spoke, name, p.Tail(30))
	}
	fmt.Fprintf(&b, "--- %s operator stand-in errors: %v\n", e.Spoke, e.Errors())
	if e.AWS != nil {
		fmt.Fprintf(&b, "--- %s AWS stand-in errors: %v\n", e.Spoke, e.AWS.Errors())
	}
	return b.String()
}
