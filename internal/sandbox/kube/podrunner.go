package kube

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
)

// Image is an upstream program the cluster can run for a container image.
type Image struct {
	// Tool builds the program; its binary stands for the image's
	// entrypoint.
	Tool binaries.Tool
	// Path is a prebuilt binary to run instead of Tool's (this project's
	// function, for instance).
	Path string
	// Tags are the image tags this program is (the pinned release); a pod
	// asking for another tag is not run, and the refusal is logged.
	Tags []string
	// Env is added to the container's environment.
	Env []string
	// Files are directories of the image's filesystem the program reads,
	// by path in the image, served from a local directory (for example
	// Crossplane's /crds from its module's cluster/crds).
	Files map[string]string
}

// stageDir holds each container's volume sources, bound there before they
// are mounted at their paths (see container).
const stageDir = "/run/eks-fleet-e2e"

// PodRunner plays the kubelet of a cluster's node for the pods whose images
// are upstream programs internal/build/binaries builds (kwok already
// reports every pod Running): each such container runs as a local process
// in the pod's network namespace (its own IP, with kwok's pod IP), with the
// container's command, arguments and environment (values, field, resource,
// Secret and ConfigMap references), its volumes mounted at their paths
// (emptyDir, Secret, ConfigMap and projected volumes, the service-account
// token from the TokenRequest API included) in its own mount namespace, and
// in-cluster configuration reaching the API server on the pod network's
// host address, so it authenticates as the pod's service account. Init
// containers run to completion first; a main container that exits is run
// again under the pod's restartPolicy, with back-off. What it does not
// model: images it does not know (their containers do not run), probes,
// restart counts in the pod's status, resource limits and hostPath volumes.
type PodRunner struct {
	Cluster *Cluster
	Net     *Network
	Dir     string
	Images  map[string]Image // image repository (no tag) -> program
	// Env is added to every process (the internet stand-in's proxy).
	Env []string
	// Hosts returns the /etc/hosts every pod sees (Services' names).
	Hosts func() []byte

	mu      sync.Mutex
	pods    map[types.UID]*runningPod
	cancel  context.CancelFunc
	refused map[string]bool
}

type runningPod struct {
	ns, name, netns, dir string
	procs                []*Proc
	stop                 chan struct{}
}

// Start runs the runner until ctx ends or Stop is called.
func (r *PodRunner) Start(ctx context.Context) error {
	ctx, r.cancel = context.WithCancel(ctx)
	r.pods = map[types.UID]*runningPod{}
	r.refused = map[string]bool{}
	node := r.Cluster.Name + "-node-0"
	f := informers.NewSharedInformerFactoryWithOptions(r.Cluster.Kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
		}))
	inf := f.Core().V1().Pods().Informer()
	handle := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			go r.sync(ctx, p)
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				r.stopPod(p.UID)
			}
		},
	})
	if err != nil {
		return err
	}
	f.Start(ctx.Done())
	go r.refreshHosts(ctx)
	return nil
}

// Stop stops every process the runner started.
func (r *PodRunner) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Lock()
	uids := make([]types.UID, 0, len(r.pods))
	for uid := range r.pods {
		uids = append(uids, uid)
	}
	r.mu.Unlock()
	for _, uid := range uids {
		r.stopPod(uid)
	}
}

// Procs returns the processes running for pods of namespace ns whose name
// starts with prefix.
func (r *PodRunner) Procs(ns, prefix string) []*Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Proc
	for _, p := range r.pods {
		if p.ns == ns && strings.HasPrefix(p.name, prefix) {
			out = append(out, p.procs...)
		}
	}
	return out
}

// Pods returns, by pod name, the processes started for the pods of
// namespace ns whose name starts with prefix (a restarted container's
// earlier processes included, exited).
func (r *PodRunner) Pods(ns, prefix string) map[string][]*Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]*Proc{}
	for _, p := range r.pods {
		if p.ns == ns && strings.HasPrefix(p.name, prefix) {
			out[p.name] = append(out[p.name], p.procs...)
		}
	}
	return out
}

func (r *PodRunner) image(ref string) (Image, string, bool) {
	repo, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	if i := strings.Index(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	img, ok := r.Images[repo]
	if !ok {
		img, ok = r.Images[strings.TrimPrefix(repo, "docker.io/")]
	}
	return img, tag, ok
}

func (r *PodRunner) sync(ctx context.Context, p *corev1.Pod) {
	if p.DeletionTimestamp != nil {
		r.stopPod(p.UID)
		return
	}
	if p.Status.PodIP == "" {
		return
	}
	known := false
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if _, _, ok := r.image(c.Image); ok {
			known = true
		}
	}
	if !known {
		return
	}
	r.mu.Lock()
	if _, ok := r.pods[p.UID]; ok {
		r.mu.Unlock()
		return
	}
	rp := &runningPod{ns: p.Namespace, name: p.Name, netns: fmt.Sprintf("%s-%s", r.Net.Bridge, string(p.UID)[:8]),
		dir: filepath.Join(r.Dir, "pods", p.Namespace+"_"+p.Name), stop: make(chan struct{})}
	r.pods[p.UID] = rp
	r.mu.Unlock()
	if err := r.run(ctx, p, rp); err != nil {
		r.logf(rp, "pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

func (r *PodRunner) logf(rp *runningPod, format string, args ...any) {
	_ = os.MkdirAll(rp.dir, 0o755)
	f, err := os.OpenFile(filepath.Join(rp.dir, "runner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func (r *PodRunner) run(ctx context.Context, p *corev1.Pod, rp *runningPod) error {
	if err := os.MkdirAll(rp.dir, 0o755); err != nil {
		return err
	}
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil {
		return err
	}
	if err := r.Net.AddPod(rp.netns, ip, r.Hosts()); err != nil {
		return err
	}
	vols, err := r.volumes(ctx, p, rp)
	if err != nil {
		return err
	}
	go r.refreshVolumes(ctx, p, rp)
	for _, c := range p.Spec.InitContainers {
		// A failed init container is run again with a growing delay, as
		// the kubelet does for a pod whose restartPolicy is not Never
		// (kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go,
		// computeInitContainerActions; back-off capped here at 10s, not 5m).
		for backoff := time.Second; ; backoff = min(2*backoff, 10*time.Second) {
			proc, err := r.container(ctx, p, rp, c, vols)
			if err != nil {
				return fmt.Errorf("init container %s: %w", c.Name, err)
			}
			if proc == nil {
				break
			}
			select {
			case <-proc.done:
			case <-rp.stop:
				proc.Stop(5 * time.Second)
				return nil
			}
			_, err = proc.Exited()
			if err == nil {
				break
			}
			if p.Spec.RestartPolicy == corev1.RestartPolicyNever {
				return fmt.Errorf("init container %s failed: %v\n%s", c.Name, err, proc.Tail(20))
			}
			r.logf(rp, "init container %s failed (%v); again in %s", c.Name, err, backoff)
			select {
			case <-time.After(backoff):
			case <-rp.stop:
				return nil
			}
		}
	}
	for _, c := range p.Spec.Containers {
		proc, err := r.container(ctx, p, rp, c, vols)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
		if proc != nil {
			go r.restart(ctx, p, rp, c, vols, proc)
		}
	}
	return nil
}

// restart runs a main container again whenever it exits, as the kubelet
// does under the pod's restartPolicy (Always; OnFailure only after a
// failure), with a growing delay (kubernetes
// pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff; capped here at
// 10s, not 5m): a controller that starts before its CRDs exist exits and
// comes back, as it does in a real cluster.
func (r *PodRunner) restart(ctx context.Context, p *corev1.Pod, rp *runningPod, c corev1.Container, vols map[string]string, proc *Proc) {
	for backoff := time.Second; ; backoff = min(2*backoff, 10*time.Second) {
		select {
		case <-proc.done:
		case <-rp.stop:
			return
		}
		_, err := proc.Exited()
		if p.Spec.RestartPolicy == corev1.RestartPolicyNever || p.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && err == nil {
			r.logf(rp, "container %s exited (%v); not restarted (restartPolicy %s)", c.Name, err, p.Spec.RestartPolicy)
			return
		}
		r.logf(rp, "container %s exited (%v); again in %s", c.Name, err, backoff)
		select {
		case <-time.After(backoff):
		case <-rp.stop:
			return
		}
		next, err := r.container(ctx, p, rp, c, vols)
		if err != nil || next == nil {
			r.logf(rp, "container %s: not restarted: %v", c.Name, err)
			return
		}
		proc = next
	}
}

// container starts one container's process; nil when its image is not
// one the runner knows.
func (r *PodRunner) container(ctx context.Context, p *corev1.Pod, rp *runningPod, c corev1.Container, vols map[string]string) (*Proc, error) {
	img, tag, ok := r.image(c.Image)
	if !ok {
		return nil, nil
	}
	if len(img.Tags) > 0 && !contains(img.Tags, tag) {
		r.mu.Lock()
		seen := r.refused[c.Image]
		r.refused[c.Image] = true
		r.mu.Unlock()
		if !seen {
			r.logf(rp, "container %s: image %s is not the pinned release %v: not run", c.Name, c.Image, img.Tags)
		}
		return nil, nil
	}
	bin := img.Path
	if bin == "" {
		var err error
		if bin, err = binaries.Build(ctx, img.Tool); err != nil {
			return nil, err
		}
	}
	args := append([]string{}, c.Args...)
	if len(c.Command) > 0 {
		args = append(append([]string{}, c.Command[1:]...), args...)
	}
	env, err := r.env(ctx, p, c)
	if err != nil {
		return nil, err
	}
	env = append(env, img.Env...)
	for i, a := range args {
		args[i] = expand(a, env)
	}
	// Mount the container's volumes at their paths in its own mount
	// namespace (ip netns exec makes one), then exec the program. Every
	// source is first bound to a staging directory, so a volume mounted
	// over a directory that holds the sources (an emptyDir at /tmp, where
	// the test's files are) does not hide the others; targets are mounted
	// parents first.
	type bind struct{ src, dst string }
	var binds []bind
	for _, m := range c.VolumeMounts {
		src, ok := vols[m.Name]
		if !ok {
			continue
		}
		if m.SubPath != "" {
			src = filepath.Join(src, m.SubPath)
		}
		binds = append(binds, bind{src, m.MountPath})
	}
	paths := make([]string, 0, len(img.Files))
	for p := range img.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		binds = append(binds, bind{img.Files[p], p})
	}
	sort.SliceStable(binds, func(i, j int) bool {
		return strings.Count(filepath.Clean(binds[i].dst), "/") < strings.Count(filepath.Clean(binds[j].dst), "/")
	})
	stage := filepath.Join(stageDir, rp.netns, c.Name)
	var script strings.Builder
	script.WriteString("set -e\n")
	for i, b := range binds {
		if fi, err := os.Stat(b.src); err == nil && !fi.IsDir() {
			for _, d := range []string{b.dst, filepath.Join(stage, strconv.Itoa(i))} {
				if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
					return nil, err
				}
				if f, err := os.OpenFile(d, os.O_CREATE, 0o644); err == nil {
					f.Close()
				}
			}
		} else {
			for _, d := range []string{b.dst, filepath.Join(stage, strconv.Itoa(i))} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return nil, err
				}
			}
		}
		fmt.Fprintf(&script, "mount --bind %s %s\n", shellQuote(b.src), shellQuote(filepath.Join(stage, strconv.Itoa(i))))
	}
	// The program too is reached through the stage: a volume mounted
	// where it lies (an emptyDir at /tmp, with the binary cache under
	// /tmp) would hide it.
	exe := filepath.Join(stage, "exe")
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(exe, os.O_CREATE, 0o755)
	if err != nil {
		return nil, fmt.Errorf("mount point for %s: %w", bin, err)
	}
	f.Close()
	fmt.Fprintf(&script, "mount --bind %s %s\n", shellQuote(bin), shellQuote(exe))
	for i, b := range binds {
		fmt.Fprintf(&script, "mount --bind %s %s\n", shellQuote(filepath.Join(stage, strconv.Itoa(i))), shellQuote(b.dst))
	}
	script.WriteString("exec \"$@\"\n")
	proc := NewProc(rp.dir, c.Name, "ip", append([]string{"netns", "exec", rp.netns, "sh", "-c", script.String(), "sh", exe}, args...)...)
	proc.Env = env
	if err := proc.Start(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	rp.procs = append(rp.procs, proc)
	r.mu.Unlock()
	r.logf(rp, "container %s: started %s %s", c.Name, filepath.Base(bin), strings.Join(args, " "))
	return proc, nil
}

// env is the container's environment, resolved as the kubelet resolves it.
func (r *PodRunner) env(ctx context.Context, p *corev1.Pod, c corev1.Container) ([]string, error) {
	u, _ := strconv.Atoi(strings.TrimPrefix(r.Cluster.Server[strings.LastIndex(r.Cluster.Server, ":"):], ":"))
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp",
		"HOSTNAME=" + p.Name,
		"KUBERNETES_SERVICE_HOST=" + r.Net.HostIP.String(),
		"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(u),
	}
	env = append(env, r.Env...)
	env = append(env, r.noProxyServices(ctx, r.Env)...)
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := r.Cluster.Kube.CoreV1().ConfigMaps(p.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil && !ptr.Deref(from.ConfigMapRef.Optional, false) {
				return nil, err
			}
			if cm != nil {
				data = cm.Data
			}
		case from.SecretRef != nil:
			s, err := r.Cluster.Kube.CoreV1().Secrets(p.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil && !ptr.Deref(from.SecretRef.Optional, false) {
				return nil, err
			}
			if s != nil {
				data = map[string]string{}
				for k, v := range s.Data {
					data[k] = string(v)
				}
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, from.Prefix+k+"="+data[k])
		}
	}
	for _, e := range c.Env {
		v := expand(e.Value, env)
		if s := e.ValueFrom; s != nil {
			var err error
			if v, err = r.valueFrom(ctx, p, c, s); err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return env, nil
}

// noProxyServices extends the NO_PROXY of env with every namespace as a
// domain suffix: a Service's short names (<service>.<namespace>, which
// Crossplane dials its functions by) would otherwise go to the stand-in
// internet's proxy, which real pods do not have.
func (r *PodRunner) noProxyServices(ctx context.Context, env []string) []string {
	nss, err := r.Cluster.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		if k != "NO_PROXY" && k != "no_proxy" {
			continue
		}
		for _, ns := range nss.Items {
			v += ",." + ns.Name
		}
		out = append(out, k+"="+v)
	}
	return out
}

func (r *PodRunner) valueFrom(ctx context.Context, p *corev1.Pod, c corev1.Container, s *corev1.EnvVarSource) (string, error) {
	switch {
	case s.FieldRef != nil:
		return fieldValue(p, s.FieldRef.FieldPath)
	case s.ResourceFieldRef != nil:
		res := c.Resources.Limits
		q, ok := res[corev1.ResourceName(strings.TrimPrefix(s.ResourceFieldRef.Resource, "limits."))]
		if !ok {
			// No limit: the node's allocatable, as the kubelet reports.
			switch s.ResourceFieldRef.Resource {
			case "limits.cpu":
				return "64", nil
			case "limits.memory":
				return strconv.FormatInt(256<<30, 10), nil
			}
			return "0", nil
		}
		div := s.ResourceFieldRef.Divisor
		if div.IsZero() {
			if strings.HasSuffix(s.ResourceFieldRef.Resource, "cpu") {
				return strconv.FormatInt(q.ScaledValue(0)+boolInt(q.MilliValue()%1000 != 0), 10), nil
			}
			return strconv.FormatInt(q.Value(), 10), nil
		}
		return strconv.FormatInt((q.MilliValue()+div.MilliValue()-1)/div.MilliValue(), 10), nil
	case s.SecretKeyRef != nil:
		sec, err := r.Cluster.Kube.CoreV1().Secrets(p.Namespace).Get(ctx, s.SecretKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			if ptr.Deref(s.SecretKeyRef.Optional, false) {
				return "", nil
			}
			return "", err
		}
		return string(sec.Data[s.SecretKeyRef.Key]), nil
	case s.ConfigMapKeyRef != nil:
		cm, err := r.Cluster.Kube.CoreV1().ConfigMaps(p.Namespace).Get(ctx, s.ConfigMapKeyRef.Name, metav1.GetOptions{})
		if err != nil {
			if ptr.Deref(s.ConfigMapKeyRef.Optional, false) {
				return "", nil
			}
			return "", err
		}
		return cm.Data[s.ConfigMapKeyRef.Key], nil
	}
	return "", nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func fieldValue(p *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "status.podIP":
		return p.Status.PodIP, nil
	case "status.hostIP":
		return p.Status.HostIP, nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return p.Labels[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return p.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	return "", fmt.Errorf("field %s is not one the runner resolves", path)
}

// expand replaces $(VAR) with the value of VAR in env, as the kubelet does
// in args and env values.
func expand(s string, env []string) string {
	if !strings.Contains(s, "$(") {
		return s
	}
	for i := len(env) - 1; i >= 0; i-- {
		k, v, _ := strings.Cut(env[i], "=")
		s = strings.ReplaceAll(s, "$("+k+")", v)
	}
	return s
}

// volumes materializes the pod's volumes under rp.dir/volumes and returns
// each one's directory, once every Secret and ConfigMap they need exists
// (the kubelet does not start containers before).
func (r *PodRunner) volumes(ctx context.Context, p *corev1.Pod, rp *runningPod) (map[string]string, error) {
	out := map[string]string{}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		missing, err := r.writeVolumes(ctx, p, rp, out)
		if err != nil {
			return nil, err
		}
		if missing == "" {
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("volume source %s never appeared", missing)
		}
		select {
		case <-rp.stop:
			return nil, fmt.Errorf("stopped")
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (r *PodRunner) refreshVolumes(ctx context.Context, p *corev1.Pod, rp *runningPod) {
	for {
		select {
		case <-rp.stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(3 * time.Second):
		}
		_, _ = r.writeVolumes(ctx, p, rp, map[string]string{})
	}
}

// writeVolumes writes every volume; missing names a Secret or ConfigMap
// that does not exist yet.
func (r *PodRunner) writeVolumes(ctx context.Context, p *corev1.Pod, rp *runningPod, out map[string]string) (missing string, err error) {
	core := r.Cluster.Kube.CoreV1()
	for _, v := range p.Spec.Volumes {
		dir := filepath.Join(rp.dir, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		out[v.Name] = dir
		files := map[string][]byte{}
		switch {
		case v.EmptyDir != nil:
			continue
		case v.Secret != nil:
			s, err := core.Secrets(p.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				if ptr.Deref(v.Secret.Optional, false) {
					continue
				}
				return "Secret " + v.Secret.SecretName, nil
			}
			if err != nil {
				return "", err
			}
			project(files, s.Data, v.Secret.Items)
		case v.ConfigMap != nil:
			cm, err := core.ConfigMaps(p.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				if ptr.Deref(v.ConfigMap.Optional, false) {
					continue
				}
				return "ConfigMap " + v.ConfigMap.Name, nil
			}
			if err != nil {
				return "", err
			}
			project(files, stringData(cm.Data), v.ConfigMap.Items)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				switch {
				case src.ServiceAccountToken != nil:
					tr, err := core.ServiceAccounts(p.Namespace).CreateToken(ctx, p.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
						Spec: authenticationv1.TokenRequestSpec{
							Audiences:         audiences(src.ServiceAccountToken.Audience),
							ExpirationSeconds: ptr.To[int64](24 * 3600),
							BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
						},
					}, metav1.CreateOptions{})
					if err != nil {
						return "", fmt.Errorf("token for %s/%s: %w", p.Namespace, p.Spec.ServiceAccountName, err)
					}
					files[src.ServiceAccountToken.Path] = []byte(tr.Status.Token)
				case src.ConfigMap != nil:
					cm, err := core.ConfigMaps(p.Namespace).Get(ctx, src.ConfigMap.Name, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						if ptr.Deref(src.ConfigMap.Optional, false) {
							continue
						}
						return "ConfigMap " + src.ConfigMap.Name, nil
					}
					if err != nil {
						return "", err
					}
					project(files, stringData(cm.Data), src.ConfigMap.Items)
				case src.Secret != nil:
					s, err := core.Secrets(p.Namespace).Get(ctx, src.Secret.Name, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						if ptr.Deref(src.Secret.Optional, false) {
							continue
						}
						return "Secret " + src.Secret.Name, nil
					}
					if err != nil {
						return "", err
					}
					project(files, s.Data, src.Secret.Items)
				case src.DownwardAPI != nil:
					for _, item := range src.DownwardAPI.Items {
						if item.FieldRef != nil {
							val, err := fieldValue(p, item.FieldRef.FieldPath)
							if err != nil {
								return "", err
							}
							files[item.Path] = []byte(val)
						}
					}
				}
			}
		default:
			continue
		}
		for name, b := range files {
			target := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+name)))
			if old, err := os.ReadFile(target); err == nil && string(old) == string(b) {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return "", err
			}
			tmp := target + ".tmp"
			if err := os.WriteFile(tmp, b, 0o644); err != nil {
				return "", err
			}
			if err := os.Rename(tmp, target); err != nil {
				return "", err
			}
		}
	}
	return "", nil
}

func audiences(a string) []string {
	if a == "" {
		return nil
	}
	return []string{a}
}

func stringData(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

func project(files map[string][]byte, data map[string][]byte, items []corev1.KeyToPath) {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = v
		}
		return
	}
	for _, it := range items {
		if v, ok := data[it.Key]; ok {
			files[it.Path] = v
		}
	}
}

func (r *PodRunner) stopPod(uid types.UID) {
	r.mu.Lock()
	rp, ok := r.pods[uid]
	if ok {
		delete(r.pods, uid)
	}
	r.mu.Unlock()
	if !ok {
		return
	}
	close(rp.stop)
	for _, proc := range rp.procs {
		proc.Stop(10 * time.Second)
	}
	r.Net.DelPod(rp.netns)
	_ = os.RemoveAll(filepath.Join(stageDir, rp.netns))
}

// refreshHosts rewrites every running pod's hosts file when the Services'
// names change.
func (r *PodRunner) refreshHosts(ctx context.Context) {
	var last string
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		h := string(r.Hosts())
		if h == last {
			continue
		}
		last = h
		r.mu.Lock()
		for _, rp := range r.pods {
			_ = r.Net.SetHosts(rp.netns, []byte(h))
		}
		r.mu.Unlock()
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
