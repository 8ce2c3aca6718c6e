package e2e

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

func TestSmokeCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	n, err := kube.NewNetwork("e2esmoke", netip.MustParsePrefix("10.201.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c, err := kube.StartCluster(ctx, t.TempDir(), "hub", kube.ClusterOptions{Network: n, PodCIDR: "10.201.16.1/20"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	t.Logf("cluster up in %s", time.Since(start))
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if _, err := c.Kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = kube.Poll(ctx, settleBound, func() (bool, error) {
		got, err := c.Kube.AppsV1().Deployments("default").Get(ctx, "x", metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 1, nil
	})
	if err != nil {
		t.Fatal(err, c.Proc("kube-controller-manager").Tail(20))
	}
	pods, _ := c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		t.Logf("pod %s %s ip %s", p.Name, p.Status.Phase, p.Status.PodIP)
	}
	t.Logf("deployment available after %s", time.Since(start))
}

// TestRemoveNetworkAfterKill: a network whose process was killed (Close
// never ran) is found whole by NetworkLeftovers and removed whole by
// RemoveNetwork, as `fleet sandbox down` and the next NewNetwork of the
// same name do.
func TestRemoveNetworkAfterKill(t *testing.T) {
	t.Parallel()
	const bridge = "e2enet"
	n, err := kube.NewNetwork(bridge, netip.MustParsePrefix("10.208.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	if err := n.AddPod(bridge+"-pod", netip.MustParseAddr("10.208.0.9"), []byte("127.0.0.1 localhost\n")); err != nil {
		t.Fatal(err)
	}
	want := []string{"network namespace e2enet-pod", "directory /etc/netns/e2enet-pod", "bridge e2enet"}
	left, err := kube.NetworkLeftovers(bridge)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Fatalf("NetworkLeftovers before removal (-want +got):\n%s", diff)
	}
	removed, err := kube.RemoveNetwork(bridge)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, removed); diff != "" {
		t.Errorf("RemoveNetwork removed (-want +got):\n%s", diff)
	}
	if left, err := kube.NetworkLeftovers(bridge); err != nil || len(left) > 0 {
		t.Errorf("left after RemoveNetwork: %v, %v", left, err)
	}
}
