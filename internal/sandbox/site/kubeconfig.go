package site

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// kubeconfigSubstitute is the one field the suite substitutes in what the
// hub applies: a bootstrap Kustomization's or HelmRelease's
// spec.kubeConfig.configMapRef (provider aws: Flux asks EKS for the
// endpoint and STS for a token with the hub's Flux role, which needs real
// AWS) becomes spec.kubeConfig.secretRef to a Secret of the same name
// holding a kubeconfig for the local cluster that plays the spoke's EKS
// cluster. It is a mutating admission webhook on the hub's API server, so
// Crossplane, kustomize-controller and helm-controller apply the objects
// exactly as the tree and the function build them, and read back the
// substituted field (their dry-runs are mutated alike, so nothing drifts).
// Only the ConfigMap names registered (Register) are substituted; any
// other spoke's bootstrap stays as built (and cannot reach AWS).
type kubeconfigSubstitute struct {
	mu    sync.Mutex
	names map[string]bool
	srv   *http.Server
}

// kubeconfigWebhookName is the MutatingWebhookConfiguration's name.
const kubeconfigWebhookName = "e2e-eks-kubeconfig"

// startKubeconfigSubstitute serves the webhook on the hub's host address
// with a certificate of the hub's CA and registers it with the hub.
func startKubeconfigSubstitute(ctx context.Context, c *kube.Cluster) (*kubeconfigSubstitute, error) {
	k := &kubeconfigSubstitute{names: map[string]bool{}}
	host := c.Net.HostIP.String()
	pair, err := c.CA.Issue("e2e-kubeconfig-webhook", nil, host)
	if err != nil {
		return nil, err
	}
	cert, err := pair.TLS()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	k.srv = &http.Server{Handler: http.HandlerFunc(k.serve), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = k.srv.ServeTLS(ln, "", "") }()
	url := fmt.Sprintf("https://%s/mutate", ln.Addr().String())
	rule := func(group, version, resource string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
		}
	}
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: kubeconfigWebhookName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "kubeconfig.e2e.eksfleet.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: c.CA.CertPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule("kustomize.toolkit.fluxcd.io", "*", "kustomizations"), rule("helm.toolkit.fluxcd.io", "*", "helmreleases")},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	if _, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		_ = k.srv.Close()
		return nil, fmt.Errorf("register the kubeconfig webhook: %w", err)
	}
	return k, nil
}

// Register makes spec.kubeConfig.configMapRef name a secretRef.
func (k *kubeconfigSubstitute) Register(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.names[name] = true
}

func (k *kubeconfigSubstitute) close() { _ = k.srv.Close() }

func (k *kubeconfigSubstitute) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if patch := k.patch(review.Request.Object.Raw); patch != nil {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	review.Response, review.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// patch is the JSON patch that substitutes the kubeConfig of obj, or nil.
func (k *kubeconfigSubstitute) patch(obj []byte) []byte {
	var u unstructured.Unstructured
	if err := json.Unmarshal(obj, &u.Object); err != nil {
		return nil
	}
	name, _, _ := unstructured.NestedString(u.Object, "spec", "kubeConfig", "configMapRef", "name")
	k.mu.Lock()
	ok := k.names[name]
	k.mu.Unlock()
	if !ok {
		return nil
	}
	p, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/kubeConfig",
		"value": map[string]any{"secretRef": map[string]any{"name": name}}}})
	return p
}
