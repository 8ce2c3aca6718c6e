package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	"github.com/google/renameio/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
)

// HubSyncTimeout bounds how long Serve waits for the hub's Kustomizations
// once its controllers run.
const HubSyncTimeout = 15 * time.Minute

var (
	claims          = schema.GroupVersionResource{Group: workloadcluster.Group, Version: workloadcluster.Version, Resource: "workloadclusters"}
	composites      = schema.GroupVersionResource{Group: workloadcluster.Group, Version: workloadcluster.Version, Resource: "xworkloadclusters"}
	fluxKs          = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

// server is the background process's state.
type server struct {
	c     Config
	out   io.Writer
	start time.Time

	mu    sync.Mutex
	state State
	hub   *site.Hub
	// slots are the spokes' pod address blocks (the /20 after the hub's
	// two, by index) by spoke.
	slots map[string]int
	// failed is the last error starting a spoke's cluster, by spoke.
	failed map[string]string
	stop   context.CancelFunc
}

// Serve is the sandbox's background process: it builds the upstream
// programs (reporting each), brings the hub up from the tree of the
// checkout repoRoot, waits for it to sync (reporting each Kustomization
// Ready), then plays the EKS cluster of each claim the hub holds until ctx
// ends or Down asks, and stops everything it made.
func Serve(ctx context.Context, c Config, repoRoot string, out io.Writer) (err error) {
	if err := c.Validate(); err != nil {
		return err
	}
	// The controller-runtime clients log through a logger nobody reads.
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{c: c, out: out, start: time.Now(), slots: map[string]int{}, failed: map[string]string{}, stop: cancel,
		state: State{PID: os.Getpid(), Phase: Starting, Network: c.Network, Prefix: c.Prefix.String(), RepoRoot: repoRoot, Started: time.Now()}}
	defer func() {
		if err != nil {
			s.update(func(st *State) { st.Phase, st.Message = Failed, err.Error() })
			s.logf("failed: %v", err)
		}
		if err == nil {
			s.update(func(st *State) { st.Phase = Stopping })
		}
		s.shutdown()
	}()
	s.update(func(*State) {})
	if err := s.buildTools(ctx); err != nil {
		return err
	}
	s.logf("starting the hub: its cluster, the Git server with %s, the stand-in internet and AWS, `pulumi up -s mgmt` through the Pulumi engine", filepath.Join(repoRoot, "manifests"))
	stages := s.stages()
	// The fleet policy's spoke accounts this checkout's spoke-account
	// stacks prepare are held by the stand-in AWS as those stacks make
	// them; a claim naming another is refused by STS, as on AWS.
	accounts, unprepared, err := site.PreparedAccounts(repoRoot)
	if err != nil {
		return err
	}
	for _, a := range accounts {
		s.logf("spoke account %s: prepared as %s makes it", a.ID, a.Stack)
	}
	for _, m := range unprepared {
		s.logf("%s: a claim naming it fails on STS's refusal", m)
	}
	h, err := site.StartHub(ctx, site.HubOptions{Dir: c.runDir(), RepoRoot: repoRoot, Network: c.Network, Prefix: c.Prefix, SpokesOnDemand: true,
		SpokeAccounts: accounts, Progress: stages.begin})
	stages.end()
	s.mu.Lock()
	s.hub = h
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("start the hub: %w", err)
	}
	s.logf("pulumi up: %v", h.FirstUp.Steps)
	if err := s.writeHubFiles(); err != nil {
		return err
	}
	ln, err := s.listen()
	if err != nil {
		return err
	}
	defer ln.Close()
	head, err := h.Repo.Head()
	if err != nil {
		return err
	}
	s.update(func(st *State) { st.Commit = head })
	if err := s.waitSynced(ctx); err != nil {
		return err
	}
	s.update(func(st *State) { st.Phase = Ready })
	s.logf("hub synced in %s", time.Since(s.start).Round(time.Second))
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		s.reconcileSpokes(ctx)
		select {
		case <-ctx.Done():
			s.logf("stopping")
			return nil
		case <-tick.C:
		}
	}
}

// logf writes one timestamped line of progress.
func (s *server) logf(format string, a ...any) {
	fmt.Fprintf(s.out, "%s %6s  %s\n", time.Now().Format("15:04:05"), time.Since(s.start).Round(time.Second), fmt.Sprintf(format, a...))
}

// update changes the state and writes state.json.
func (s *server) update(f func(*State)) {
	s.mu.Lock()
	f(&s.state)
	b, err := json.MarshalIndent(s.state, "", "  ")
	s.mu.Unlock()
	if err == nil {
		err = renameio.WriteFile(s.c.statePath(), b, 0o600)
	}
	if err != nil {
		s.logf("write %s: %v", s.c.statePath(), err)
	}
}

// shutdown stops the hub and every spoke and removes what they made but
// the log and the state (Down removes the directory).
func (s *server) shutdown() {
	s.mu.Lock()
	h := s.hub
	s.mu.Unlock()
	if h != nil {
		h.Stop()
	}
	_ = os.RemoveAll(s.c.runDir())
	for _, f := range []string{s.c.socketPath(), s.c.KubeconfigPath(), s.c.CertPath(), s.c.KnownHostsPath()} {
		_ = os.Remove(f)
	}
	if left, err := kube.NetworkLeftovers(s.c.Network); err != nil || len(left) > 0 {
		s.logf("left after stopping: %v %v", left, err)
	}
	s.logf("stopped")
}

// stageLog reports each stage of the hub's start as it begins, and every
// 30 seconds while it lasts, until end.
type stageLog struct {
	logf func(format string, a ...any)
	stop chan struct{}

	mu    sync.Mutex
	name  string
	since time.Time
}

// stages starts a stageLog that writes through s.logf.
func (s *server) stages() *stageLog {
	l := &stageLog{logf: s.logf, stop: make(chan struct{})}
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.mu.Lock()
				if l.name != "" {
					l.logf("  still: %s (%s)", l.name, time.Since(l.since).Round(time.Second))
				}
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// begin reports stage as the current one.
func (l *stageLog) begin(stage string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.name, l.since = stage, time.Now()
	l.logf("  %s", stage)
}

// end stops the reports.
func (l *stageLog) end() { close(l.stop) }

// buildTools builds every upstream program the sandbox runs that is not
// cached, two at a time, reporting each one's start and end and, every 30
// seconds, what still builds.
func (s *server) buildTools(ctx context.Context) error {
	tools := site.Tools()
	todo, err := binaries.Uncached(tools...)
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		s.logf("the %d upstream programs are cached (%s)", len(tools), binaries.CacheDir())
		return nil
	}
	s.logf("building %d of the %d upstream programs at their pinned releases into %s (the first time takes about 15 minutes on 2 cores)", len(todo), len(tools), binaries.CacheDir())
	return binaries.BuildShowingProgress(ctx, 30*time.Second, s.logf, todo...)
}

// writeHubFiles writes what a user of the hub needs: its kubeconfig, the
// sealing certificate and the Git server's known_hosts.
func (s *server) writeHubFiles() error {
	kubeconfig, err := os.ReadFile(s.hub.Cluster.Kubeconfig)
	if err != nil {
		return err
	}
	cert, err := s.hub.SealingCertificate()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		b    []byte
		perm os.FileMode
	}{
		{s.c.KubeconfigPath(), kubeconfig, 0o600}, // the hub's admin credentials
		{s.c.CertPath(), []byte(cert), 0o644},
		{s.c.KnownHostsPath(), []byte(s.hub.Git.KnownHosts + "\n"), 0o644},
	} {
		if err := renameio.WriteFile(f.path, f.b, f.perm); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return nil
}

// waitSynced waits for every Kustomization of the hub to be Ready,
// reporting each as it gets there, and fails when a controller exits.
func (s *server) waitSynced(ctx context.Context) error {
	names, err := site.HubKustomizations(filepath.Join(s.hub.Repo.Work, "manifests"))
	if err != nil {
		return err
	}
	names = append([]string{"flux-system"}, names...) // the program's root
	s.logf("the hub's Flux syncs %d Kustomizations", len(names))
	ready := map[string]bool{}
	var waiting []string
	err = kube.Poll(ctx, HubSyncTimeout, func() (bool, error) {
		if err := s.hub.Exited(); err != nil {
			return false, err
		}
		waiting = nil
		for _, n := range names {
			if ready[n] {
				continue
			}
			o, err := s.hub.Cluster.Dynamic.Resource(fluxKs).Namespace("flux-system").Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				waiting = append(waiting, n+": not yet applied")
				continue
			}
			st, msg := readyCondition(o)
			if st == "True" {
				ready[n] = true
				s.logf("  Ready  flux-system/%s", n)
				continue
			}
			waiting = append(waiting, fmt.Sprintf("%s: Ready=%s %s", n, st, msg))
		}
		return len(waiting) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the hub did not sync (%w):\n  %s", err, strings.Join(waiting, "\n  "))
	}
	return nil
}

// readyCondition is an object's Ready condition status and message.
func readyCondition(o *unstructured.Unstructured) (string, string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			st, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return st, msg
		}
	}
	return "Unknown", ""
}

// maxSpokes is how many spokes' clusters fit the prefix after the hub's
// two /20s.
const maxSpokes = 14

// spokeCIDR is the pod addresses of the spoke in slot i.
func spokeCIDR(prefix netip.Prefix, i int) netip.Prefix {
	a := prefix.Masked().Addr().As4()
	a[2] += byte(32 + 16*i)
	a[3] = 1
	return netip.PrefixFrom(netip.AddrFrom4(a), 20)
}

// reconcileSpokes starts the EKS cluster of each claim that has none, and
// stops that of each spoke whose claim and composite are gone (its
// teardown needed it until then), and records the stand-in account.
func (s *server) reconcileSpokes(ctx context.Context) {
	h := s.hub
	list, err := h.Cluster.Dynamic.Resource(claims).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		s.logf("list the claims: %v", err)
		return
	}
	xrs, err := h.Cluster.Dynamic.Resource(composites).List(ctx, metav1.ListOptions{})
	if err != nil {
		s.logf("list the composites: %v", err)
		return
	}
	wanted := map[string]string{} // spoke -> region
	accountOf := map[string]string{}
	for _, o := range list.Items {
		region, _, _ := unstructured.NestedString(o.Object, "spec", "region")
		wanted[o.GetName()] = region
		accountOf[o.GetName()], _, _ = unstructured.NestedString(o.Object, "spec", "account")
	}
	for _, o := range xrs.Items {
		if name := o.GetLabels()["crossplane.io/claim-name"]; name != "" {
			if _, ok := wanted[name]; !ok {
				wanted[name] = "" // being deleted: keep its cluster
			}
		}
	}
	running := h.Spokes()
	for name, region := range wanted {
		if running[name] != nil || region == "" {
			continue
		}
		slot := -1
		for i := range maxSpokes {
			if !slices.Contains(slices.Collect(maps.Values(s.slots)), i) {
				slot = i
				break
			}
		}
		if slot < 0 {
			if msg := fmt.Sprintf("no room for its cluster (at most %d spokes in one sandbox)", maxSpokes); s.failed[name] != msg {
				s.logf("spoke %s: %s", name, msg)
				s.failed[name] = msg
			}
			continue
		}
		s.logf("spoke %s: its EKS cluster starts (a local API server on %s)", name, spokeCIDR(s.c.Prefix, slot))
		if _, err := h.AddEKS(ctx, site.EKSOptions{Spoke: name, PodCIDR: spokeCIDR(s.c.Prefix, slot), Account: accountOf[name]}, region); err != nil {
			// Tried again at the next tick; said again only when it
			// fails differently.
			if s.failed[name] != err.Error() {
				s.logf("spoke %s: %v (trying again every 2 s)", name, err)
				s.failed[name] = err.Error()
			}
			continue
		}
		delete(s.failed, name)
		s.slots[name] = slot
	}
	for name := range running {
		if _, ok := wanted[name]; ok {
			continue
		}
		s.logf("spoke %s: claim and composite gone, its EKS cluster stops", name)
		if err := h.RemoveEKS(ctx, name); err != nil {
			s.logf("spoke %s: %v", name, err)
		}
		delete(s.slots, name)
	}
	var spokes, account []string
	flux := map[string][]string{}
	for name, e := range h.Spokes() {
		spokes = append(spokes, name)
		flux[name] = spokeFlux(ctx, e)
	}
	for id, l := range h.Accounts {
		for _, r := range l.All() {
			if l == h.Account {
				account = append(account, r.Kind+" "+r.Name)
			} else {
				account = append(account, r.Kind+" "+r.Name+" (account "+id+")")
			}
		}
	}
	sort.Strings(spokes)
	sort.Strings(account)
	s.mu.Lock()
	changed := !slices.Equal(spokes, s.state.Spokes) || !slices.Equal(account, s.state.Account) || !maps.EqualFunc(flux, s.state.SpokeFlux, slices.Equal)
	summaries := map[string]string{}
	for name, ks := range s.state.SpokeFlux {
		summaries[name] = FluxSummary(ks)
	}
	s.mu.Unlock()
	if changed {
		for name, ks := range flux {
			if sum := FluxSummary(ks); summaries[name] != sum {
				s.logf("spoke %s: its own Flux: %s", name, sum)
			}
		}
		s.update(func(st *State) { st.Spokes, st.Account, st.SpokeFlux = spokes, account, flux })
	}
}

// spokeFlux is, for each Kustomization on the spoke's cluster (its own
// Flux's), "<namespace>/<name>: Ready" or ": not Ready (<message>)",
// sorted; nil before the spoke runs Flux.
func spokeFlux(ctx context.Context, e *site.EKS) []string {
	list, err := e.Cluster.Dynamic.Resource(fluxKs).Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, o := range list.Items {
		if st, msg := readyCondition(&o); st == "True" {
			out = append(out, o.GetNamespace()+"/"+o.GetName()+": Ready")
		} else {
			out = append(out, fmt.Sprintf("%s/%s: not Ready (%s)", o.GetNamespace(), o.GetName(), msg))
		}
	}
	sort.Strings(out)
	return out
}

// FluxSummary is "<ready> of <all> Kustomizations Ready".
func FluxSummary(ks []string) string {
	ready := 0
	for _, k := range ks {
		if strings.HasSuffix(k, ": Ready") {
			ready++
		}
	}
	return fmt.Sprintf("%d of %d Kustomizations Ready", ready, len(ks))
}

// listen serves /state, /push and /stop on the socket.
func (s *server) listen() (net.Listener, error) {
	_ = os.Remove(s.c.socketPath())
	ln, err := net.Listen("unix", s.c.socketPath())
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		b, err := json.Marshal(s.state)
		s.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(b)
	})
	mux.HandleFunc("POST /push", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			RepoRoot string `json:"repoRoot"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !filepath.IsAbs(req.RepoRoot) {
			http.Error(w, fmt.Sprintf("push: want {\"repoRoot\": an absolute path} (%v)", err), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		phase := s.state.Phase
		s.mu.Unlock()
		if phase != Ready {
			http.Error(w, fmt.Sprintf("the sandbox is %s, not Ready: push once `fleet sandbox up` has returned", phase), http.StatusConflict)
			return
		}
		commit, err := s.hub.PushTree(req.RepoRoot, "fleet sandbox push from "+req.RepoRoot)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s.update(func(st *State) { st.Commit, st.RepoRoot = commit, req.RepoRoot })
		s.logf("pushed %s as %s", filepath.Join(req.RepoRoot, "manifests"), commit)
		// What a Git host's push webhook does through Flux's Receiver:
		// the hub's source fetches now, not at its next interval.
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, fluxmeta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
		if _, err := s.hub.Cluster.Dynamic.Resource(gitRepositories).Namespace(fluxbootstrap.Namespace).Patch(r.Context(), fluxbootstrap.SyncName,
			types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			s.logf("ask the hub's Flux to fetch %s now: %v (it fetches at its next interval)", commit, err)
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"commit": commit})
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		s.stop()
	})
	go func() { _ = http.Serve(ln, mux) }()
	return ln, nil
}
