package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceHosts is the /etc/hosts a pod of c resolves Services through: no
// cluster DNS and no kube-proxy run here, so each Service name resolves to
// the first ready endpoint kube-controller-manager's EndpointSlice
// controller lists for it (a pod's own address, reachable on the pod
// network). Services without a ready endpoint are left out, as a lookup of
// a Service with no endpoints reaches nothing either.
func ServiceHosts(ctx context.Context, c *Cluster, extra ...string) []byte {
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n")
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	slices, err := c.Kube.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return []byte(b.String())
	}
	best := map[string]string{} // ns/svc -> ip
	for _, s := range slices.Items {
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		key := s.Namespace + "/" + svc
		if _, ok := best[key]; ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if len(ep.Addresses) > 0 {
				best[key] = ep.Addresses[0]
				break
			}
		}
	}
	keys := make([]string, 0, len(best))
	for k := range best {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ns, svc, _ := strings.Cut(k, "/")
		fmt.Fprintf(&b, "%s %s.%s.svc.cluster.local %s.%s.svc %s.%s\n", best[k], svc, ns, svc, ns, svc, ns)
	}
	return []byte(b.String())
}
