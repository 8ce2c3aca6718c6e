package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/sealing"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/site"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// sealingKeyIDs is the stack setting that lists the sealing key ids.
const sealingKeyIDs = stacks.Project + ":" + stacks.SealingKeyIDsKey

// rotatedKeyID is the id the rotation appends.
const rotatedKeyID = "key-e2e-rotated"

// sealingDocument is the sealing keys' Secrets Manager document the
// program wrote.
func sealingDocument(t *testing.T, h *site.Hub) map[string]string {
	t.Helper()
	for _, doc := range h.Bootstrap.Secrets {
		var m map[string]string
		if err := json.Unmarshal([]byte(doc), &m); err == nil && m[sealingkey.CertProperty] != "" {
			return m
		}
	}
	t.Fatal("the program wrote no sealing key document to Secrets Manager")
	return nil
}

// sealedFor seals a Secret default/name holding value with cert, as
// `fleet seal` seals.
func sealedFor(t *testing.T, cert, name, value string) *unstructured.Unstructured {
	t.Helper()
	pub, err := sealing.ParseCert([]byte(cert))
	if err != nil {
		t.Fatal(err)
	}
	b, err := sealing.SealSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Data: map[string][]byte{"value": []byte(value)}}, pub)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// controllerPIDs are the Sealed Secrets controller's process IDs on a
// cluster's pods.
func controllerPIDs(pods *kube.PodRunner) []int {
	var out []int
	for _, p := range pods.Procs(sealingkey.Namespace, sealingkey.ControllerName) {
		out = append(out, p.PID())
	}
	return out
}

// rotation rotates the sealing key as the README says (an id appended to
// sealingKeyIds, `pulumi up`) with the hub and the example spoke running,
// and follows it to every running Sealed Secrets controller (N8): without a
// restart, a secret sealed with the new certificate unseals on the hub and
// on the spoke, and one sealed with the old certificate still does. The
// program's update is run as the engine runs it (`site.Hub.Up`: the key
// pairs kept in state, the Secrets Manager document put, the changed
// cluster-info applied); the rest is the real Flux, External Secrets and
// Sealed Secrets on both clusters.
func rotation(t *testing.T, h *site.Hub) {
	ctx := context.Background()
	spoke := h.EKS[claimName]
	// keyName is a key Secret's name on the cluster, from the hub's name
	// for it: the spoke holds the keys the hub hands it under names of its
	// own.
	clusters := []struct {
		name    string
		cluster *kube.Cluster
		pods    *kube.PodRunner
		keyName func(string) string
	}{
		{"the hub", h.Cluster, h.Pods, func(n string) string { return n }},
		{"the spoke " + claimName, spoke.Cluster, spoke.Pods, sealingkey.SpokeSecretName},
	}
	pids := map[string][]int{}
	for _, c := range clusters {
		pids[c.name] = controllerPIDs(c.pods)
		if len(pids[c.name]) == 0 || pids[c.name][0] == 0 {
			t.Fatalf("%s: no Sealed Secrets controller runs (%v)", c.name, pids[c.name])
		}
	}
	oldDoc := sealingDocument(t, h)
	var ids []string
	start := time.Now()
	res, err := h.Up(ctx, func(cfg map[string]string) {
		if err := json.Unmarshal([]byte(cfg[sealingKeyIDs]), &ids); err != nil || len(ids) == 0 {
			t.Fatalf("stack config %s = %q: %v", sealingKeyIDs, cfg[sealingKeyIDs], err)
		}
		ids = append(ids, rotatedKeyID)
		b, _ := json.Marshal(ids)
		cfg[sealingKeyIDs] = string(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A day-2 `pulumi up` through the real engine, after Flux and the
	// operator have written to the same objects: updates only, in place,
	// cluster-info among them (its sealing variables).
	t.Logf("pulumi up: %v", res.Steps)
	updatedInfo := false
	for _, st := range res.Steps {
		if st.Op != apitype.OpUpdate {
			t.Errorf("the rotation's pulumi up: %s, want updates only", st)
		}
		updatedInfo = updatedInfo || st.Type == "kubernetes:core/v1:ConfigMap"
	}
	if !updatedInfo {
		t.Errorf("the rotation's pulumi up did not update cluster-info: %v", res.Steps)
	}
	newDoc := sealingDocument(t, h)
	if newDoc[sealingkey.CertProperty] == oldDoc[sealingkey.CertProperty] {
		t.Fatal("the rotation did not make a new active certificate")
	}
	if newDoc[sealingkey.PreviousCertProperty] != oldDoc[sealingkey.CertProperty] {
		t.Fatal("after the rotation the previous certificate in Secrets Manager is not the old active one: the old key pair was not kept")
	}
	oldID := ids[len(ids)-2]

	// Each cluster's controller gets the new key, and the old key's
	// Secret moves to the previous name, without a restart.
	for _, c := range clusters {
		activeSecret := c.keyName(sealingkey.ActiveSecretName(rotatedKeyID))
		previousSecret := c.keyName(sealingkey.PreviousSecretName(rotatedKeyID, oldID))
		oldActive := c.keyName(sealingkey.ActiveSecretName(oldID))
		var last string
		err := kube.Poll(ctx, settleBound, func() (bool, error) {
			active, err := c.cluster.Kube.CoreV1().Secrets(sealingkey.Namespace).Get(ctx, activeSecret, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			previous, err := c.cluster.Kube.CoreV1().Secrets(sealingkey.Namespace).Get(ctx, previousSecret, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			_, err = c.cluster.Kube.CoreV1().Secrets(sealingkey.Namespace).Get(ctx, oldActive, metav1.GetOptions{})
			switch {
			case string(active.Data[corev1.TLSCertKey]) != newDoc[sealingkey.CertProperty]:
				last = activeSecret + " does not hold the new certificate"
			case string(previous.Data[corev1.TLSCertKey]) != oldDoc[sealingkey.CertProperty]:
				last = previousSecret + " does not hold the old certificate"
			case active.Labels[sealingkey.KeyLabel] != sealingkey.KeyLabelValue:
				last = activeSecret + " is not labelled as a sealing key"
			case !apierrors.IsNotFound(err):
				last = fmt.Sprintf("the old active key's Secret %s is still there (%v)", oldActive, err)
			default:
				return true, nil
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("%s: the rotated key Secrets: %v (last: %s)", c.name, err, last)
		}
		t.Logf("%s: key Secrets rotated %s after pulumi up", c.name, time.Since(start).Truncate(time.Second))
	}

	// A secret sealed with each certificate unseals on each cluster.
	seals := []struct{ name, cert string }{
		{"sealed-with-the-new-key", newDoc[sealingkey.CertProperty]},
		{"sealed-with-the-old-key", oldDoc[sealingkey.CertProperty]},
	}
	for _, c := range clusters {
		for _, s := range seals {
			if err := c.cluster.Apply(ctx, "e2e", sealedFor(t, s.cert, s.name, s.name+" on "+c.name)); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
	}
	for _, c := range clusters {
		for _, s := range seals {
			var last string
			err := kube.Poll(ctx, settleBound, func() (bool, error) {
				got, err := c.cluster.Kube.CoreV1().Secrets("default").Get(ctx, s.name, metav1.GetOptions{})
				if err != nil {
					last = err.Error()
					return false, nil
				}
				if string(got.Data["value"]) != s.name+" on "+c.name {
					last = fmt.Sprintf("unsealed %q", got.Data["value"])
					return false, nil
				}
				return true, nil
			})
			if err != nil {
				t.Errorf("%s: %s did not unseal: %v (last: %s)\n%s", c.name, s.name, err, last,
					strings.Join(tail(c.pods.Procs(sealingkey.Namespace, sealingkey.ControllerName), 20), "\n"))
			}
		}
		t.Logf("%s: both unsealed %s after pulumi up", c.name, time.Since(start).Truncate(time.Second))
	}
	for _, c := range clusters {
		if now := controllerPIDs(c.pods); fmt.Sprint(now) != fmt.Sprint(pids[c.name]) {
			t.Errorf("%s: the Sealed Secrets controller was restarted (processes %v, before the rotation %v)", c.name, now, pids[c.name])
		}
	}
}

// tail is the last n lines of each process's log.
func tail(procs []*kube.Proc, n int) []string {
	var out []string
	for _, p := range procs {
		out = append(out, "--- "+p.Name+"\n"+p.Tail(n))
	}
	return out
}
