// Package sealing turns Secrets into SealedSecrets offline, with the code
// kubeseal itself runs (github.com/bitnami-labs/sealed-secrets/pkg/kubeseal):
// the result is what `kubeseal --cert FILE` writes for the same input.
package sealing

import (
	"bytes"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"os"

	ssv1alpha1 "github.com/bitnami-labs/sealed-secrets/pkg/apis/sealedsecrets/v1alpha1"
	"github.com/bitnami-labs/sealed-secrets/pkg/kubeseal"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Output formats, as kubeseal's --format.
const (
	FormatJSON = "json"
	FormatYAML = "yaml"
)

// offline is the ClientConfig kubeseal sees: no cluster, and the namespace
// kubeseal falls back to without a kubeconfig context.
type offline struct{ namespace string }

func (o offline) ClientConfig() (*rest.Config, error) {
	return nil, errors.New("fleet seals offline: no cluster access")
}

func (o offline) Namespace() (string, bool, error) {
	if o.namespace != "" {
		return o.namespace, true, nil
	}
	return "default", false, nil
}

// ParseCert reads the sealing certificate (PEM) as kubeseal does: an
// expired or non-RSA certificate is an error.
func ParseCert(pemBytes []byte) (*rsa.PublicKey, error) {
	k, err := kubeseal.ParseKey(bytes.NewReader(pemBytes))
	if err != nil {
		return nil, fmt.Errorf("sealing certificate: %w", err)
	}
	return k, nil
}

// LoadCert reads and parses a certificate file.
func LoadCert(path string) (*rsa.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--cert: %w", err)
	}
	k, err := ParseCert(b)
	if err != nil {
		return nil, fmt.Errorf("--cert %s: %w", path, err)
	}
	return k, nil
}

// Options are kubeseal's sealing options fleet exposes.
type Options struct {
	Format    string                  // json (kubeseal's default) or yaml
	Scope     ssv1alpha1.SealingScope // strict by default
	Namespace string                  // kubeseal's --namespace; empty: the Secret's own or "default"
}

// Seal reads Secrets (YAML or JSON) from in and writes SealedSecrets to out.
func Seal(in io.Reader, out io.Writer, key *rsa.PublicKey, o Options) error {
	if o.Format == "" {
		o.Format = FormatJSON
	}
	if o.Format != FormatJSON && o.Format != FormatYAML {
		return fmt.Errorf("--format %q: allowed json, yaml", o.Format)
	}
	if err := kubeseal.Seal(offline{namespace: o.Namespace}, o.Format, in, out, scheme.Codecs, key, o.Scope, false, "", ""); err != nil {
		return fmt.Errorf("sealing: %w", err)
	}
	return nil
}

// SealSecret seals one Secret object and returns YAML.
func SealSecret(s *corev1.Secret, key *rsa.PublicKey) ([]byte, error) {
	if s.APIVersion == "" {
		s.APIVersion = "v1"
	}
	if s.Kind == "" {
		s.Kind = "Secret"
	}
	in, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	var out bytes.Buffer
	if err := Seal(bytes.NewReader(in), &out, key, Options{Format: FormatYAML}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
