package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/deploykey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/sealing"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/aws"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/check"
)

// stepsReady reports which of the spoke's bootstrap steps up to and
// including last are Ready on the hub, and fails on one Ready before
// the step it depends on.
func stepsReady(ctx context.Context, h *site.Hub, spoke, last string) (bool, string, error) {
	var lines []string
	var prevAt time.Time
	all := true
	for _, s := range compose.BootstrapSteps() {
		name := compose.BootstrapName(spoke, s.Part)
		o, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: %v", name, err))
			all = false
			break
		}
		st, reason, msg := check.Condition(o, "Ready")
		lines = append(lines, fmt.Sprintf("%s Ready=%s %s: %s", name, st, reason, msg))
		at := check.ReadyTransition(o)
		if st == "True" && !prevAt.IsZero() && at.Before(prevAt) {
			return false, "", fmt.Errorf("%s Ready at %s, before the step it depends on (%s)", name, at.Format(time.StampMilli), prevAt.Format(time.StampMilli))
		}
		if st != "True" {
			all = false
			break
		}
		prevAt = at
		if s.Part == last {
			break
		}
	}
	return all, strings.Join(lines, "\n"), nil
}

// stepClock records when each bootstrap step of the example spoke was
// first seen Ready (later commits take the steps through the chain again,
// so their conditions' lastTransitionTime moves).
type stepClock struct {
	mu sync.Mutex
	at map[string]time.Time
}

// startStepClock looks at the steps every quarter second until ctx ends or
// every step has been seen Ready.
func startStepClock(ctx context.Context, h *site.Hub) *stepClock {
	c := &stepClock{at: map[string]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			waiting := 0
			for _, s := range compose.BootstrapSteps() {
				c.mu.Lock()
				_, seen := c.at[s.Part]
				c.mu.Unlock()
				if seen {
					continue
				}
				waiting++
				o, err := h.Cluster.Dynamic.Resource(check.Kustomizations).Namespace(compose.BootstrapNamespace).Get(ctx, compose.BootstrapName(claimName, s.Part), metav1.GetOptions{})
				if err != nil {
					continue
				}
				if st, _, _ := check.Condition(o, "Ready"); st == "True" {
					c.mu.Lock()
					c.at[s.Part] = time.Now()
					c.mu.Unlock()
				}
			}
			if waiting == 0 {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return c
}

// first is when step part was first seen Ready.
func (c *stepClock) first(part string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[part]
	return at, ok
}

// since lists when each step was first Ready, counted from the moment the
// stand-in account reported the EKS cluster eksName ACTIVE (when the
// function composes the bootstrap).
func (c *stepClock) since(t *testing.T, h *site.Hub, eksName string) string {
	t.Helper()
	var found []aws.Resource
	for _, r := range allResources(h) {
		if r.Kind == "eks.aws.upbound.io/Cluster" && r.Name == eksName {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d EKS clusters named %s in the accounts", len(found), eksName)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []string
	for _, s := range compose.BootstrapSteps() {
		if at, ok := c.at[s.Part]; ok {
			lines = append(lines, fmt.Sprintf("%-14s %s", s.Part, at.Sub(found[0].ReadyAt).Truncate(100*time.Millisecond)))
		}
	}
	return strings.Join(lines, "\n")
}

// spokeBootstrap follows the hub's bootstrap of the example spoke onto the
// cluster that plays its EKS cluster (site.EKS), on the real Flux, External
// Secrets and Sealed Secrets:
//   - the hub-side and remote steps up to flux become Ready in their
//     dependsOn order; the spoke's External Secrets reads the sealing key
//     with the spoke's own IRSA role (the role Crossplane composed, trusting
//     the spoke cluster's issuer) and the spoke's Sealed Secrets loads it;
//   - the example's committed deploy key, sealed for a certificate whose
//     key was discarded, shows on the claim as CannotDecrypt (not as
//     Unsealing);
//   - a deploy key sealed as `fleet cluster add` seals it, with this
//     environment's certificate, is unsealed on the spoke, the claim's
//     DeployKeyReady turns True, and the spoke's own GitRepository fetches
//     the repository with it.
func spokeBootstrap(t *testing.T, h *site.Hub, clock *stepClock) {
	ctx := context.Background()
	eks := playedSpoke(t, h)
	start := time.Now()
	var state string
	err := kube.Poll(ctx, hubSyncBound, func() (bool, error) {
		ok, s, err := stepsReady(ctx, h, claimName, "flux")
		state = s
		return ok, err
	})
	if err != nil {
		t.Fatalf("bootstrap steps up to flux: %v\n%s", err, state)
	}
	t.Logf("bootstrap up to the spoke's Flux Ready (%s after the scenario began):\n%s", time.Since(start), state)
	env, err := h.HubEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bootstrap steps Ready, after the EKS cluster was ACTIVE in the account:\n%s", clock.since(t, h, spokeiam.ClusterName(env, claimName)))

	// The hub handed the spoke its keys: the spoke's controller loads the
	// hub's key pair from Secrets named hub-<the hub's name>, and only the
	// hub's External Secrets role read Secrets Manager.
	keySecrets, err := eks.Cluster.Kube.CoreV1().Secrets(sealingkey.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sealingkey.KeyLabel + "=" + sealingkey.KeyLabelValue})
	if err != nil {
		t.Fatal(err)
	}
	doc := sealingDocument(t, h)
	var keyNames []string
	active := false
	for _, s := range keySecrets.Items {
		keyNames = append(keyNames, s.Name)
		if !strings.HasPrefix(s.Name, sealingkey.SpokeSecretPrefix+sealingkey.ActiveSecretPrefix) {
			t.Errorf("the spoke's key Secret %s is not named %s<the hub's name>", s.Name, sealingkey.SpokeSecretPrefix)
		}
		if crt := string(s.Data[corev1.TLSCertKey]); crt != doc[sealingkey.CertProperty] && crt != doc[sealingkey.PreviousCertProperty] {
			t.Errorf("the spoke's key Secret %s holds a certificate the hub's Secrets Manager document does not", s.Name)
		}
		active = active || string(s.Data[corev1.TLSCertKey]) == doc[sealingkey.CertProperty] && string(s.Data[corev1.TLSPrivateKeyKey]) == doc[sealingkey.KeyProperty]
	}
	if !active {
		t.Errorf("no key Secret on the spoke holds the hub's active key pair (key Secrets: %v)", keyNames)
	}
	info, err := h.ClusterInfo()
	if err != nil {
		t.Fatal(err)
	}
	hubESO := info[clusterinfo.ExternalSecretsRoleARN]
	if hubESO == "" {
		t.Fatalf("cluster-info has no %s", clusterinfo.ExternalSecretsRoleARN)
	}
	for _, c := range h.Endpoints.Calls() {
		if strings.HasPrefix(c, "secretsmanager:") && !strings.HasPrefix(c, "secretsmanager:GetSecretValue "+hubESO+" ") {
			t.Errorf("Secrets Manager was called other than by the hub's External Secrets role: %s", c)
		}
	}
	t.Logf("the spoke's key Secrets, from the hub: %v", keyNames)

	// The committed example key cannot be decrypted by this environment.
	last, err := check.WaitCondition(ctx, h.Cluster, check.Claims, claimNS, claimName, compose.DeployKeyCondition, commitBound,
		func(st, reason string) bool { return st == "False" && reason == "CannotDecrypt" })
	if err != nil {
		t.Fatalf("the example's key, sealed for another certificate, is not reported as such on the claim: %v (last: %s)", err, last)
	}
	t.Logf("claim with the example's key: %s", last)

	key := commitResealedKey(t, h)
	resealed := time.Now()
	last, err = check.WaitCondition(ctx, h.Cluster, check.Claims, claimNS, claimName, compose.DeployKeyCondition, commitBound, check.IsTrue)
	if err != nil {
		_, s, _ := stepsReady(ctx, h, claimName, compose.DeployKeyPart)
		t.Fatalf("the resealed key is not Ready on the claim: %v (last: %s)\n%s", err, last, s)
	}
	t.Logf("commit of the resealed key to DeployKeyReady on the claim: %s", time.Since(resealed))
	got, err := eks.Cluster.Kube.CoreV1().Secrets(deploykey.SecretNamespace).Get(ctx, deploykey.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the spoke has no unsealed deploy key: %v", err)
	}
	if string(got.Data["identity"]) != string(key.PrivatePEM) {
		t.Errorf("the spoke's %s/%s identity is not the key that was sealed", deploykey.SecretNamespace, deploykey.SecretName)
	}

	// The sync step puts the spoke's own source on it; it fetches the
	// repository with the unsealed key.
	last, err = check.WaitCondition(ctx, eks.Cluster, check.GitRepositories, "flux-system", "flux-system", "Ready", commitBound, check.IsTrue)
	if err != nil {
		t.Fatalf("the spoke's own GitRepository did not fetch with the unsealed key: %v (last: %s)", err, last)
	}
	t.Logf("commit of the resealed key to the spoke's own source Ready: %s (%s)", time.Since(resealed), last)

	// The spoke runs its own tools (spoke-tools, on its own Flux), the
	// hub's last steps complete, and the claim is Ready.
	last, err = check.WaitCondition(ctx, h.Cluster, check.Claims, claimNS, claimName, "Ready", spokeBound, check.IsTrue)
	if err != nil {
		_, s, _ := stepsReady(ctx, h, claimName, "")
		t.Fatalf("the claim is not Ready: %v (last: %s)\nhub steps:\n%s\nthe spoke:\n%s", err, last, s, fluxState(ctx, eks.Cluster))
	}
	t.Logf("commit of the resealed key to the claim Ready: %s\nthe spoke:\n%s", time.Since(resealed), fluxState(ctx, eks.Cluster))

	// The cluster folder's app: its AppInfrastructure composes, on the
	// spoke's own Crossplane, the table and queue the app reads.
	last, err = check.WaitCondition(ctx, eks.Cluster, check.Kustomizations, "flux-system", exampleApp, "Ready", composeBound, check.IsTrue)
	if err != nil {
		t.Fatalf("the spoke's payment-app is not Ready: %v (last: %s)\nthe spoke:\n%s", err, last, fluxState(ctx, eks.Cluster))
	}
	t.Logf("commit of the resealed key to payment-app Ready on the spoke: %s", time.Since(resealed))
	dep, err := eks.Cluster.Kube.AppsV1().Deployments(exampleAppNS).Get(ctx, exampleApp, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]string{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		reads[e.Name] = e.Value
	}
	for env, kind := range map[string]string{"TABLE_NAME": tableKind, "QUEUE_NAME": "sqs.aws.upbound.io/Queue"} {
		name := reads[env]
		found := h.Account.Find(kind, func(r aws.Resource) bool { return r.Name == name || r.Attrs["name"] == name })
		if name == "" || len(found) != 1 {
			t.Errorf("the app reads %s=%q; the account holds %d %s of that name (all: %v)", env, name, len(found), kind, names(h.Account.Find(kind, nil)))
		}
	}
	// The claim reports whether its table would be kept on deletion, as
	// AWS reports the table.
	tables := h.Account.Find(tableKind, func(r aws.Resource) bool { return r.Name == reads["TABLE_NAME"] })
	var kept, found bool
	err = kube.Poll(ctx, settleBound, func() (bool, error) {
		claim, err := eks.Cluster.Dynamic.Resource(check.AppInfrastructures).Namespace(exampleAppNS).Get(ctx, exampleApp, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		kept, found, _ = unstructured.NestedBool(claim.Object, "status", "tableDeletionProtection")
		return len(tables) == 1 && found && kept == tables[0].Attrs["deletionProtectionEnabled"], nil
	})
	if err != nil {
		t.Errorf("the claim's status.tableDeletionProtection is %v (set: %v); the table's deletion protection: %v", kept, found, tables)
	}
}

// names lists resources' names.
func names(rs []aws.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// fluxState lists a cluster's Kustomizations and HelmReleases with their
// Ready condition.
func fluxState(ctx context.Context, c *kube.Cluster) string {
	var lines []string
	for _, gvr := range []schema.GroupVersionResource{check.Kustomizations, check.HelmReleases} {
		l, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			lines = append(lines, fmt.Sprintf("%s: %v", gvr.Resource, err))
			continue
		}
		for _, o := range l.Items {
			st, reason, msg := check.Condition(&o, "Ready")
			lines = append(lines, fmt.Sprintf("%s %s/%s Ready=%s %s: %s", gvr.Resource, o.GetNamespace(), o.GetName(), st, reason, msg))
		}
	}
	return strings.Join(lines, "\n")
}

// commitResealedKey writes the example spoke's resealed deploy key
// (writeResealedKey), commits it and asks the hub to look at once.
func commitResealedKey(t *testing.T, h *site.Hub) *deploykey.Key {
	t.Helper()
	key := writeResealedKey(t, h)
	if err := h.Repo.Commit(claimName + ": deploy key sealed for this environment"); err != nil {
		t.Fatal(err)
	}
	check.RequestReconcile(t, h)
	return key
}

// writeResealedKey reseals the example spoke's deploy key as `fleet
// cluster add` does, with this environment's certificate and the Git
// server's host keys, lets the Git server accept it and writes it to the
// Git work tree.
func writeResealedKey(t *testing.T, h *site.Hub) *deploykey.Key {
	t.Helper()
	sealed, key := sealDeployKey(t, h)
	if err := h.Git.Authorize(key.Public); err != nil {
		t.Fatal(err)
	}
	rel := filepath.ToSlash(filepath.Join("manifests", fleettree.DeployKeyRel(claimName)))
	if err := os.WriteFile(filepath.Join(h.Repo.Work, rel), sealed, 0o644); err != nil {
		t.Fatal(err)
	}
	return key
}

// sealDeployKey makes the example spoke's deploy-key file as `fleet cluster
// add` writes it, sealed with the certificate of the sealing key the
// program put in Secrets Manager, and returns it with the key.
func sealDeployKey(t *testing.T, h *site.Hub) ([]byte, *deploykey.Key) {
	t.Helper()
	pub, err := sealing.ParseCert([]byte(sealingDocument(t, h)[sealingkey.CertProperty]))
	if err != nil {
		t.Fatal(err)
	}
	key, err := deploykey.Generate("flux-e2e-"+claimName, nil)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealing.SealSecret(key.Secret(deploykey.SecretName, deploykey.SecretNamespace, []byte(h.Git.KnownHosts+"\n")), pub)
	if err != nil {
		t.Fatal(err)
	}
	return fleettree.DeployKeyContent(claimName, key.Public, sealed), key
}

// playedSpoke is the EKS cluster the suite plays for the example claim:
// it fails the test when there is none, and logs the cluster's processes
// when the test fails.
func playedSpoke(t *testing.T, h *site.Hub) *site.EKS {
	t.Helper()
	eks := h.EKS[claimName]
	if eks == nil {
		t.Fatalf("the suite plays no EKS cluster for %s", claimName)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- the spoke's EKS cluster\n%s", eks.Logs())
		}
	})
	return eks
}
