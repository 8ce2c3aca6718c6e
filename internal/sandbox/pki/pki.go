// Package pki issues the certificates the sandbox's servers present: a
// certificate authority per cluster (its API server, the webhooks it
// calls) and one for the stand-in internet (every host it answers for).
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CA is a certificate authority of one cluster or of the stand-in internet.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte

	mu     sync.Mutex
	serial int64
}

// NewCA makes a CA named cn.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(48 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1}, nil
}

// KeyPair is a certificate and its key, PEM-encoded.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// TLS returns the pair as a tls.Certificate.
func (k KeyPair) TLS() (tls.Certificate, error) { return tls.X509KeyPair(k.CertPEM, k.KeyPEM) }

// Issue signs a certificate for cn, valid for the hosts (IPs or DNS
// names), as a server and a client.
func (c *CA) Issue(cn string, organizations []string, hosts ...string) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	c.mu.Lock()
	c.serial++
	serial := c.serial
	c.mu.Unlock()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn, Organization: organizations},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(47 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Cert, key.Public(), c.Key)
	if err != nil {
		return KeyPair{}, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
	}, nil
}

// WriteFiles writes the pair as dir/<name>.crt and dir/<name>.key and
// returns their paths.
func (k KeyPair) WriteFiles(dir, name string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, k.CertPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, k.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}
