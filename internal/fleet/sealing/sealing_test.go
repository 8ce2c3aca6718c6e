package sealing

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	ssv1alpha1 "github.com/bitnami-labs/sealed-secrets/pkg/apis/sealedsecrets/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

func certPEM(t *testing.T, k *rsa.PrivateKey, notAfter time.Time) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sealed-secret"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestParseCert(t *testing.T) {
	k, _ := rsa.GenerateKey(rand.Reader, 2048)
	tests := []struct {
		name    string
		pem     []byte
		wantErr string
	}{
		{"valid", certPEM(t, k, time.Now().Add(time.Hour)), ""},
		{"expired", certPEM(t, k, time.Now().Add(-time.Minute)), "expired"},
		{"not PEM", []byte("hello"), "sealing certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCert(tt.pem)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestSealSecretUnseals(t *testing.T) {
	k, _ := rsa.GenerateKey(rand.Reader, 2048)
	pub, err := ParseCert(certPEM(t, k, time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	in := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "flux-system", Namespace: "flux-system"}, Data: map[string][]byte{"identity": []byte("key")}}
	out, err := SealSecret(in, pub)
	if err != nil {
		t.Fatal(err)
	}
	var ss ssv1alpha1.SealedSecret
	if err := yaml.Unmarshal(out, &ss); err != nil {
		t.Fatal(err)
	}
	sec, err := ss.Unseal(scheme.Codecs, map[string]*rsa.PrivateKey{"k": k})
	if err != nil {
		t.Fatalf("controller cannot unseal: %v", err)
	}
	if string(sec.Data["identity"]) != "key" || sec.Name != "flux-system" || sec.Namespace != "flux-system" {
		t.Errorf("unsealed %v", sec)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	if _, err := ss.Unseal(scheme.Codecs, map[string]*rsa.PrivateKey{"k": other}); err == nil {
		t.Error("unsealed with the wrong key")
	}
	if err := Seal(strings.NewReader(""), &strings.Builder{}, pub, Options{Format: "toml"}); err == nil {
		t.Error("bad format accepted")
	}
}
