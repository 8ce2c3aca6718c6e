// Package deploykey makes the SSH deploy key a spoke's Flux uses to read
// the Git repository: an ed25519 key pair and the Secret Flux's
// GitRepository expects (identity, identity.pub, known_hosts).
package deploykey

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Secret the spoke's GitRepository flux-system reads (secretRef), which
// the SealedSecret in the cluster's deploy-key file unseals into.
const (
	SecretName      = "flux-system"
	SecretNamespace = "flux-system"
)

// Key is a generated key pair.
type Key struct {
	PrivatePEM []byte // OpenSSH private key
	Public     string // authorized_keys line, with comment
}

// Generate makes an ed25519 key; comment ends the public line (e.g.
// "flux-<spoke>"). rnd may be nil for crypto/rand.
func Generate(comment string, rnd io.Reader) (*Key, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	pub, priv, err := ed25519.GenerateKey(rnd)
	if err != nil {
		return nil, fmt.Errorf("generating ed25519 key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %w", err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp)))
	if comment != "" {
		line += " " + comment
	}
	return &Key{PrivatePEM: pem.EncodeToMemory(block), Public: line}, nil
}

// CheckKnownHosts makes sure known_hosts parses and has at least one entry.
func CheckKnownHosts(b []byte) error {
	rest := b
	n := 0
	for {
		_, _, _, _, r, err := ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("known_hosts: %w", err)
		}
		n++
		rest = r
	}
	if n == 0 {
		return fmt.Errorf("known_hosts has no host key entries")
	}
	return nil
}

// Secret is the Secret a Flux GitRepository's secretRef reads for SSH.
func (k *Key) Secret(name, namespace string, knownHosts []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"identity":     k.PrivatePEM,
			"identity.pub": []byte(k.Public + "\n"),
			"known_hosts":  knownHosts,
		},
	}
}
