package proof

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	ssv1alpha1 "github.com/bitnami-labs/sealed-secrets/pkg/apis/sealedsecrets/v1alpha1"
	sscrypto "github.com/bitnami-labs/sealed-secrets/pkg/crypto"
	"github.com/bitnami-labs/sealed-secrets/pkg/kubeseal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
)

// The sealing certificate as the SealingKeys component makes it (pulumi-tls
// PrivateKey RSA 4096 + SelfSignedCert). The component and this proof must
// agree on these; they are the parameters the proof's certificate uses.
// test/sealing_params_test.go asserts they equal components/sealingkeys'.
const (
	SealingKeyBits          = 4096
	SealingCertCommonName   = "sealed-secret"
	SealingCertOrganization = "sealed-secret"
	SealingCertValidity     = 10 * 365 * 24 * time.Hour
)

// NewSealingKeyPair makes an RSA key and self-signed certificate with the
// SealingKeys parameters: key encipherment and digital signature, not a
// CA, valid for SealingCertValidity.
func NewSealingKeyPair() (sealingkey.KeyPair, error) {
	key, err := rsa.GenerateKey(rand.Reader, SealingKeyBits)
	if err != nil {
		return sealingkey.KeyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return sealingkey.KeyPair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: SealingCertCommonName, Organization: []string{SealingCertOrganization}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(SealingCertValidity),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return sealingkey.KeyPair{}, err
	}
	return sealingkey.KeyPair{
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})),
	}, nil
}

var (
	pairOnce sync.Once
	pair     sealingkey.KeyPair
	pairErr  error
)

// processKeyPair is made once per process (RSA-4096 generation is slow).
func processKeyPair() (sealingkey.KeyPair, error) {
	pairOnce.Do(func() { pair, pairErr = NewSealingKeyPair() })
	return pair, pairErr
}

// DeliveredSecret is the Secret ESO writes for externalSecret, given the
// Secrets Manager secret's JSON document: data from spec.data (remoteRef
// property) and spec.dataFrom (extract), shaped by spec.target.template
// (type, labels, and simple data templates).
func DeliveredSecret(externalSecret *unstructured.Unstructured, document string, info clusterinfo.Values[string]) (*corev1.Secret, error) {
	var doc map[string]string
	if err := json.Unmarshal([]byte(document), &doc); err != nil {
		return nil, fmt.Errorf("secret document is not a JSON object of strings: %w", err)
	}
	es := externalSecret.Object
	target, _, _ := unstructured.NestedString(es, "spec", "target", "name")
	if target == "" {
		target = externalSecret.GetName()
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: externalSecret.GetNamespace()},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{},
	}
	remote := func(ref map[string]any, what string) error {
		key, _ := ref["key"].(string)
		if !namesSealingSecret(key, info) {
			return fmt.Errorf("%s reads Secrets Manager secret %q, not the sealing secret %q (${%s})", what, key, info.SealingSecretName, clusterinfo.SealingSecretName)
		}
		return nil
	}
	data, _, _ := unstructured.NestedSlice(es, "spec", "data")
	for i, d := range data {
		m, _ := d.(map[string]any)
		sk, _ := m["secretKey"].(string)
		ref, _ := m["remoteRef"].(map[string]any)
		if err := remote(ref, fmt.Sprintf("spec.data[%d]", i)); err != nil {
			return nil, err
		}
		prop, _ := ref["property"].(string)
		v, ok := doc[prop]
		if !ok {
			return nil, fmt.Errorf("spec.data[%d] reads property %q, which the sealing secret does not have (it has %q, %q, %q, %q)", i, prop,
				sealingkey.CertProperty, sealingkey.KeyProperty, sealingkey.PreviousCertProperty, sealingkey.PreviousKeyProperty)
		}
		s.Data[sk] = []byte(v)
	}
	dataFrom, _, _ := unstructured.NestedSlice(es, "spec", "dataFrom")
	for i, d := range dataFrom {
		m, _ := d.(map[string]any)
		ref, ok := m["extract"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.dataFrom[%d]: only extract is supported by the proof", i)
		}
		if err := remote(ref, fmt.Sprintf("spec.dataFrom[%d].extract", i)); err != nil {
			return nil, err
		}
		for k, v := range doc {
			s.Data[k] = []byte(v)
		}
	}
	tmpl, ok, _ := unstructured.NestedMap(es, "spec", "target", "template")
	if ok {
		if t, _ := tmpl["type"].(string); t != "" {
			s.Type = corev1.SecretType(t)
		}
		s.Labels, _, _ = unstructured.NestedStringMap(tmpl, "metadata", "labels")
		if tdata, _, _ := unstructured.NestedStringMap(tmpl, "data"); len(tdata) > 0 {
			vars := map[string]string{}
			for k, v := range s.Data {
				vars[k] = string(v)
			}
			merge, _ := tmpl["mergePolicy"].(string)
			if merge != "Merge" {
				s.Data = map[string][]byte{}
			}
			for k, t := range tdata {
				out, err := renderTemplate(k, t, vars)
				if err != nil {
					return nil, fmt.Errorf("spec.target.template.data[%s]: %w", k, err)
				}
				s.Data[k] = []byte(out)
			}
		}
	}
	return s, nil
}

// renderTemplate executes one value of spec.target.template.data as
// External Secrets v0.20.4 does (pkg/template/v2/template.go:165-185,
// execute: text/template, missingkey=error, the data as strings; :77-83,
// init: sprig's text functions but env and expandenv). ESO builds with a
// fork of sprig v3.3.0 (external-secrets/sprig); its encoding functions
// are upstream's. ESO's own functions (pkcs12, jwk, pem filters, toYaml
// and friends) are not modelled: a template using one fails here.
func renderTemplate(name, t string, vars map[string]string) (string, error) {
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	tp, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(t)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := tp.Execute(&out, vars); err != nil {
		return "", err
	}
	return out.String(), nil
}

// ControllerKeys loads sealing keys from Secrets the way the Sealed
// Secrets controller does: only Secrets in its namespace labelled
// sealedsecrets.bitnami.com/sealed-secrets-key=active, tls.key (RSA) and
// tls.crt, keyed by the public key's fingerprint.
func ControllerKeys(secrets ...*corev1.Secret) (map[string]*rsa.PrivateKey, error) {
	keys := map[string]*rsa.PrivateKey{}
	for _, s := range secrets {
		if s.Namespace != sealingkey.Namespace {
			return nil, fmt.Errorf("Secret %s is in namespace %q; the controller reads keys from %q", s.Name, s.Namespace, sealingkey.Namespace)
		}
		if s.Labels[sealingkey.KeyLabel] != sealingkey.KeyLabelValue {
			return nil, fmt.Errorf("Secret %s/%s lacks label %s=%s, so the controller ignores it", s.Namespace, s.Name, sealingkey.KeyLabel, sealingkey.KeyLabelValue)
		}
		if s.Type != corev1.SecretTypeTLS {
			return nil, fmt.Errorf("Secret %s/%s has type %q, want %q", s.Namespace, s.Name, s.Type, corev1.SecretTypeTLS)
		}
		k, err := keyutil.ParsePrivateKeyPEM(s.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			return nil, fmt.Errorf("Secret %s/%s %s: %w", s.Namespace, s.Name, corev1.TLSPrivateKeyKey, err)
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("Secret %s/%s: private key is not RSA", s.Namespace, s.Name)
		}
		if _, err := certutil.ParseCertsPEM(s.Data[corev1.TLSCertKey]); err != nil {
			return nil, fmt.Errorf("Secret %s/%s %s: %w", s.Namespace, s.Name, corev1.TLSCertKey, err)
		}
		fp, err := sscrypto.PublicKeyFingerprint(&rk.PublicKey)
		if err != nil {
			return nil, err
		}
		keys[fp] = rk
	}
	return keys, nil
}

// SealRoundTrip seals a probe Secret with kubeseal's code and certPEM and
// unseals it with the controller's code and keys.
func SealRoundTrip(certPEM string, keys map[string]*rsa.PrivateKey) error {
	pub, err := kubeseal.ParseKey(bytes.NewReader([]byte(certPEM)))
	if err != nil {
		return fmt.Errorf("kubeseal: parse certificate: %w", err)
	}
	probe := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-key", Namespace: "flux-system"},
		Data:       map[string][]byte{"identity": []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nproof\n")},
	}
	ss, err := ssv1alpha1.NewSealedSecret(scheme.Codecs, pub, probe)
	if err != nil {
		return fmt.Errorf("kubeseal: seal: %w", err)
	}
	out, err := ss.Unseal(scheme.Codecs, keys)
	if err != nil {
		return fmt.Errorf("controller: unseal: %w", err)
	}
	if !bytes.Equal(out.Data["identity"], probe.Data["identity"]) {
		return errors.New("controller: unsealed data differs from the sealed data")
	}
	return nil
}

// ProveSealing proves that a Secret sealed with certPEM (the certificate
// users seal with) unseals with the keys the tree's ExternalSecrets deliver
// from document (the Secrets Manager JSON).
func ProveSealing(certPEM, document string, externalSecrets []*unstructured.Unstructured, info clusterinfo.Values[string]) error {
	var secrets []*corev1.Secret
	for _, es := range externalSecrets {
		s, err := DeliveredSecret(es, document, info)
		if err != nil {
			return fmt.Errorf("ExternalSecret %s/%s: %w", es.GetNamespace(), es.GetName(), err)
		}
		secrets = append(secrets, s)
	}
	keys, err := ControllerKeys(secrets...)
	if err != nil {
		return err
	}
	return SealRoundTrip(certPEM, keys)
}

// readsSealingSecret reports whether an ExternalSecret reads the sealing
// secret (every remoteRef names it).
func readsSealingSecret(es *unstructured.Unstructured, info clusterinfo.Values[string]) bool {
	var keys []string
	for _, f := range []string{"data", "dataFrom"} {
		l, _, _ := unstructured.NestedSlice(es.Object, "spec", f)
		for _, d := range l {
			m, _ := d.(map[string]any)
			ref, _ := m["remoteRef"].(map[string]any)
			if ref == nil {
				ref, _ = m["extract"].(map[string]any)
			}
			k, _ := ref["key"].(string)
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if !namesSealingSecret(k, info) {
			return false
		}
	}
	return len(keys) > 0
}

// namesSealingSecret reports whether a remoteRef key is the sealing
// secret, by name or ARN.
func namesSealingSecret(key string, info clusterinfo.Values[string]) bool {
	return key == info.SealingSecretName || key == info.SealingSecretARN
}

// deliverSealing is the walk's Derive: the Secret External Secrets writes
// for an ExternalSecret that reads the sealing secret, from the proof's
// sealing document; it joins the walk (the hub's spoke-sealing-keys is what
// each spoke's sealing-keys step substitutes).
func (r *run) deliverSealing(b kbuild.Built) []*unstructured.Unstructured {
	o := b.Object
	if o.GroupVersionKind().Group != "external-secrets.io" || o.GetKind() != "ExternalSecret" || !readsSealingSecret(o, r.info) {
		return nil
	}
	doc, err := r.sealingDocument()
	if err != nil {
		r.add(CheckSealing, "", "", "sealing document: %v", err)
		return nil
	}
	s, err := DeliveredSecret(o, doc, r.info)
	if err != nil {
		r.add(CheckSealing, r.fileOf(b), objectName(o, b.Cluster), "%v", err)
		return nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		r.add(CheckSealing, r.fileOf(b), objectName(o, b.Cluster), "%v", err)
		return nil
	}
	d := &unstructured.Unstructured{Object: u}
	d.SetAPIVersion("v1")
	d.SetKind("Secret")
	unstructured.RemoveNestedField(d.Object, "metadata", "creationTimestamp")
	return []*unstructured.Unstructured{d}
}

// sealingDocument is the Secrets Manager document of the proof's key pair;
// with SkipSealing, one of placeholders (no key is generated, nothing
// unseals), which still lets the walk deliver what the spokes substitute.
func (r *run) sealingDocument() (string, error) {
	if r.opts.SkipSealing {
		return sealingkey.Document(sealingkey.KeyPair{CertPEM: "(not generated: SkipSealing)", KeyPEM: "(not generated: SkipSealing)"}, nil)
	}
	kp, err := processKeyPair()
	if err != nil {
		return "", fmt.Errorf("generate sealing key: %w", err)
	}
	return sealingkey.Document(kp, nil)
}

// keySecretName is the name of the active key's Secret on cluster: the
// hub's, or on a spoke the name the hub hands it over under.
func (r *run) keySecretName(cluster string) string {
	if cluster == kbuild.Hub {
		return r.info.SealingActiveKeySecret
	}
	return sealingkey.SpokeSecretName(r.info.SealingActiveKeySecret)
}

// checkSealing proves, on every cluster, that a Secret sealed with the
// certificate users seal with unseals with the keys the cluster's
// controller loads: the labelled Secrets in its namespace, as the walk
// applies them (on the hub, written by External Secrets; on a spoke,
// applied by the hub's Flux from what the hub's External Secrets wrote).
func (r *run) checkSealing() {
	kp, err := processKeyPair()
	if err != nil {
		r.add(CheckSealing, "", "", "generate sealing key: %v", err)
		return
	}
	// Key Secrets and HelmReleases by the cluster they are on, in build
	// order (one pass, not one per cluster).
	keys := map[string][]*corev1.Secret{}
	keyBuilt := map[string]kbuild.Built{}
	releases := map[string][]kbuild.Built{}
	clusters := []string{kbuild.Hub}
	for _, b := range r.w.Results {
		o := b.Object
		switch {
		case o.GetKind() == "HelmRelease":
			c := releasedOn(b)
			releases[c] = append(releases[c], b)
		case o.GroupVersionKind() == corev1.SchemeGroupVersion.WithKind("Secret") && o.GetNamespace() == sealingkey.Namespace && o.GetLabels()[sealingkey.KeyLabel] != "":
			obj, err := kbuild.VarObject(o)
			if err != nil {
				r.add(CheckSealing, r.fileOf(b), objectName(o, b.Cluster), "%v", err)
				continue
			}
			if _, seen := keys[b.Cluster]; !seen && b.Cluster != kbuild.Hub {
				clusters = append(clusters, b.Cluster)
			}
			keys[b.Cluster] = append(keys[b.Cluster], obj.(*corev1.Secret))
			keyBuilt[b.Cluster] = b
		}
	}
	for c := range releases {
		if _, seen := keys[c]; !seen && c != kbuild.Hub {
			clusters = append(clusters, c)
		}
	}
	sort.Strings(clusters[1:])
	// Every spoke's key Secrets are usually the same after substitution:
	// the round trip (an RSA-4096 decryption) runs once per distinct
	// content, not once per cluster.
	var proved contentMemo
	for _, c := range clusters {
		ss := keys[c]
		active := r.keySecretName(c)
		if !slices.ContainsFunc(ss, func(s *corev1.Secret) bool { return s.Name == active }) {
			r.add(CheckSealing, "", "cluster "+c, "no sealing key Secret %s/%s is written there", sealingkey.Namespace, active)
		}
		if len(ss) > 0 {
			var objs []*unstructured.Unstructured
			for _, s := range ss {
				u, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
				objs = append(objs, &unstructured.Unstructured{Object: u})
			}
			if err := proved.do(objs, func() error {
				loaded, err := ControllerKeys(ss...)
				if err != nil {
					return err
				}
				return SealRoundTrip(kp.CertPEM, loaded)
			}); err != nil {
				b := keyBuilt[c]
				r.add(CheckSealing, r.fileOf(b), objectName(b.Object, c), "%v", err)
			}
		}
		r.checkSealingController(c, releases[c])
	}
}

// checkSealingController: the cluster runs the Sealed Secrets controller
// in sealingkey.Namespace, named sealingkey.ControllerName (kubeseal's
// default), with key renewal off (keys come only from Secrets Manager).
// releases are the HelmReleases that install onto cluster.
func (r *run) checkSealingController(cluster string, releases []kbuild.Built) {
	var found []kbuild.Built
	for _, b := range releases {
		if helmChart(b.Object, nil) == "sealed-secrets" {
			found = append(found, b)
		}
	}
	if len(found) == 0 {
		r.add(CheckSealing, "", "cluster "+cluster, "no HelmRelease installs the sealed-secrets chart")
		return
	}
	for _, b := range found {
		o := b.Object
		file, name := r.fileOf(b), objectName(o, cluster)
		vals, _, _ := unstructured.NestedMap(o.Object, "spec", "values")
		if ns := releaseNamespace(o); ns != sealingkey.Namespace {
			r.add(CheckSealing, file, name, "installs the controller in namespace %q; the key Secrets are written to %q", ns, sealingkey.Namespace)
		}
		// Rotation reaches a running controller only through its key
		// informer (--watch-for-secrets; AddFunc on new, per-key-id Secrets).
		if w, _, _ := unstructured.NestedBool(vals, "watchForSecrets"); !w {
			r.add(CheckSealing, file, name, "values.watchForSecrets is not true: a rotated sealing key (a new Secret %s<id>) is not loaded until the controller restarts", sealingkey.ActiveSecretPrefix)
		}
		if fn, _, _ := unstructured.NestedString(vals, "fullnameOverride"); fn != sealingkey.ControllerName {
			r.add(CheckSealing, file, name, "values.fullnameOverride = %q, want %q (kubeseal's default controller name)", fn, sealingkey.ControllerName)
		}
		switch p := vals["keyrenewperiod"].(type) {
		case string:
			if p == "0" || p == "0s" || p == "0h" {
				continue
			}
			r.add(CheckSealing, file, name, "values.keyrenewperiod = %q: key renewal must be off (\"0\"), keys come from Secrets Manager", p)
		case int64:
			if p == 0 {
				continue
			}
			r.add(CheckSealing, file, name, "values.keyrenewperiod = %d: key renewal must be off (\"0\")", p)
		default:
			r.add(CheckSealing, file, name, "values.keyrenewperiod is not set: the controller would generate and rotate its own keys; set it to \"0\"")
		}
	}
}

// contentMemo remembers a pure check's result by the content of the
// objects it checks.
type contentMemo struct {
	m map[string]error
}

// do returns check's result for objs, running it only for content not seen
// before (check must depend on nothing but objs and values fixed for the
// memo's life).
func (c *contentMemo) do(objs []*unstructured.Unstructured, check func() error) error {
	var key strings.Builder
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			return check()
		}
		key.Write(b)
		key.WriteByte(0)
	}
	if err, ok := c.m[key.String()]; ok {
		return err
	}
	err := check()
	if c.m == nil {
		c.m = map[string]error{}
	}
	c.m[key.String()] = err
	return err
}
