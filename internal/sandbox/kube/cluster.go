package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/build/loopback"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/pki"
)

// Cluster is one Kubernetes control plane: etcd on loopback, kube-apiserver
// on the pod network's host address, kube-controller-manager (every
// controller), kube-scheduler, and kwok for one node whose pods get their
// IPs from PodCIDR (PodRunner runs the containers it knows).
type Cluster struct {
	Name string
	Dir  string
	// Server is the API server's URL, CA the CA every certificate of the
	// cluster is signed by.
	Server string
	CA     *pki.CA
	// Kubeconfig is an admin (system:masters) kubeconfig file.
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client
	Dynamic    dynamic.Interface
	Kube       kubernetes.Interface
	// PodCIDR is where kwok takes pod IPs, inside the pod network.
	PodCIDR string
	// Net is the pod network the cluster's pods join.
	Net *Network
	// ServiceAccountIssuer is the issuer of the cluster's service-account
	// tokens, SAPublicKey the file with the key that verifies them.
	ServiceAccountIssuer string
	SAPublicKey          string

	token string
	procs []*Proc
}

// Tools are the programs every cluster runs: etcd, the control plane and
// kwok's node and pod stages.
var Tools = []binaries.Tool{binaries.Etcd, binaries.KubeAPIServer, binaries.KubeControllerManager, binaries.KubeScheduler, binaries.Kwok}

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	// Network is the pod network: the API server listens on its host
	// address, where pods reach it.
	Network *Network
	// PodCIDR is where kwok takes pod IPs: inside Network's prefix and
	// distinct per cluster.
	PodCIDR string
	// Issuer is the service-account token issuer (an EKS cluster's OIDC
	// issuer URL for a spoke).
	Issuer string
}

// StartCluster starts a cluster named name under dir and waits until its
// API server is ready and its node is Ready.
func StartCluster(ctx context.Context, dir, name string, opts ClusterOptions) (*Cluster, error) {
	c := &Cluster{Name: name, Dir: filepath.Join(dir, name), PodCIDR: opts.PodCIDR, ServiceAccountIssuer: opts.Issuer, Net: opts.Network}
	if c.Net == nil {
		return nil, fmt.Errorf("cluster %s: no pod network", name)
	}
	hostIP := c.Net.HostIP.String()
	if c.ServiceAccountIssuer == "" {
		c.ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	}
	pkiDir := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if c.CA, err = pki.NewCA("e2e-" + name); err != nil {
		return nil, err
	}
	caFile := filepath.Join(pkiDir, "ca.crt")
	if err := os.WriteFile(caFile, c.CA.CertPEM, 0o644); err != nil {
		return nil, err
	}
	serving, err := c.CA.Issue("kube-apiserver", nil, hostIP, "127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err != nil {
		return nil, err
	}
	servingCrt, servingKey, err := serving.WriteFiles(pkiDir, "apiserver")
	if err != nil {
		return nil, err
	}
	saPub, saKey, err := serviceAccountKey(pkiDir)
	if err != nil {
		return nil, err
	}
	c.SAPublicKey = saPub
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	c.token = hex.EncodeToString(tok)
	tokens := filepath.Join(pkiDir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(c.token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	ports := make([]int, 6)
	for i := range ports {
		if ports[i], err = loopback.Port(); err != nil {
			return nil, err
		}
	}
	etcdPort, peerPort, apiPort, kcmPort, schedPort, kwokPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	c.Server = fmt.Sprintf("https://%s:%d", hostIP, apiPort)
	if err := c.writeKubeconfig(); err != nil {
		return nil, err
	}

	bins, err := binaries.BuildAll(ctx, binaries.Parallel, Tools...)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	etcd := NewProc(c.Dir, "etcd", bins["etcd"],
		"--name", name, "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peerPort),
		"--initial-cluster", fmt.Sprintf("%s=http://127.0.0.1:%d", name, peerPort),
		"--unsafe-no-fsync", "--quota-backend-bytes", strconv.Itoa(2<<30), "--log-level", "warn")
	api := NewProc(c.Dir, "kube-apiserver", bins["kube-apiserver"],
		"--etcd-servers", etcdURL,
		"--bind-address", hostIP, "--advertise-address", hostIP, "--secure-port", strconv.Itoa(apiPort),
		"--tls-cert-file", servingCrt, "--tls-private-key-file", servingKey, "--client-ca-file", caFile,
		"--token-auth-file", tokens, "--authorization-mode", "RBAC",
		"--service-account-issuer", c.ServiceAccountIssuer,
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.96.0.0/16",
		// Webhooks and conversion reach Services through their endpoints,
		// not through cluster IPs nobody routes.
		"--enable-aggregator-routing=true",
		"--enable-priority-and-fairness=false", "--profiling=false", "-v=1")
	kcm := NewProc(c.Dir, "kube-controller-manager", bins["kube-controller-manager"],
		"--kubeconfig", c.Kubeconfig, "--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(kcmPort),
		"--leader-elect=false", "--use-service-account-credentials=false",
		// Every controller but node lifecycle: kwok renews a node lease but
		// its pod stages are one-shot, so once node lifecycle marks pods
		// not Ready (a node briefly NotReady while kwok takes it over)
		// nothing makes them Ready again; a kubelet would.
		"--controllers", "*,-node-lifecycle-controller",
		"--service-account-private-key-file", saKey, "--root-ca-file", caFile,
		"--concurrent-gc-syncs", "20", "--concurrent-namespace-syncs", "10", "-v=1")
	sched := NewProc(c.Dir, "kube-scheduler", bins["kube-scheduler"],
		"--kubeconfig", c.Kubeconfig, "--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(schedPort), "--leader-elect=false", "-v=1")
	kwok := NewProc(c.Dir, "kwok", bins["kwok"],
		"--kubeconfig", c.Kubeconfig, "--manage-all-nodes", "--cidr", c.PodCIDR,
		"--node-ip", "127.0.0.1", "--server-address", fmt.Sprintf("127.0.0.1:%d", kwokPort))
	kwok.Env = []string{"HOME=" + c.Dir}

	if err := c.start(etcd); err != nil {
		return nil, err
	}
	if err := waitTCP(ctx, fmt.Sprintf("127.0.0.1:%d", etcdPort), 30*time.Second); err != nil {
		return nil, fmt.Errorf("%s etcd: %w\n%s", name, err, etcd.Tail(20))
	}
	if err := c.start(api); err != nil {
		return nil, err
	}
	if err := c.connect(ctx, api); err != nil {
		return nil, err
	}
	for _, p := range []*Proc{kcm, sched, kwok} {
		if err := c.start(p); err != nil {
			return nil, err
		}
	}
	if err := c.addNode(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(p *Proc) error {
	if err := p.Start(); err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// Proc returns the cluster's process of that name (kube-apiserver, ...).
func (c *Cluster) Proc(name string) *Proc {
	for _, p := range c.procs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func (c *Cluster) writeKubeconfig() error {
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	return clientcmd.WriteToFile(*c.KubeconfigFor("admin", c.token), c.Kubeconfig)
}

// KubeconfigFor is a kubeconfig reaching the cluster with a bearer token.
func (c *Cluster) KubeconfigFor(user, token string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CA.CertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user}
	cfg.CurrentContext = c.Name
	return cfg
}

// connect waits for /readyz and builds the clients.
func (c *Cluster) connect(ctx context.Context, api *Proc) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	c.Config = cfg
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		body, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			break
		}
		if done, exitErr := api.Exited(); done {
			return fmt.Errorf("%s kube-apiserver exited: %v\n%s", c.Name, exitErr, api.Tail(30))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s kube-apiserver not ready after 90s: %v\n%s", c.Name, err, api.Tail(30))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	c.Client, err = client.New(cfg, client.Options{})
	return err
}

// addNode registers the node kwok plays and waits for it to be Ready.
func (c *Cluster) addNode(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name + "-node-0", Labels: map[string]string{
			"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": c.Name + "-node-0",
			"type": "kwok",
		}, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("1000"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("1000"),
			},
		},
	}
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node: %w", err)
	}
	return Poll(ctx, 60*time.Second, func() (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				// The not-ready taint the API server adds at creation
				// (TaintNodesByCondition) goes once the node is Ready, as
				// the node lifecycle controller (not run, see
				// StartCluster) would remove it.
				if len(n.Spec.Taints) == 0 {
					return true, nil
				}
				n.Spec.Taints = nil
				_, _ = c.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
				return false, nil
			}
		}
		return false, nil
	})
}

// Stop stops every process of the cluster, newest first.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(10 * time.Second)
	}
}

// Poll calls f every 250ms until it reports done, fails, or timeout passes.
func Poll(ctx context.Context, timeout time.Duration, f func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, err := f()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	return Poll(ctx, timeout, func() (bool, error) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
}
