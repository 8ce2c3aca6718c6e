package test

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/components/sealingkeys"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
)

// TestSealingParametersMatchComponent: the certificate the sealing proof
// makes has the parameters the SealingKeys component gives pulumi-tls, so
// the round trip proves what the hub really runs.
func TestSealingParametersMatchComponent(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"RSA bits", proof.SealingKeyBits, sealingkeys.RSABits},
		{"validity", proof.SealingCertValidity, time.Duration(sealingkeys.ValidityHours) * time.Hour},
		{"common name", proof.SealingCertCommonName, sealingkeys.CommonName},
		{"organization", proof.SealingCertOrganization, sealingkeys.Organization},
	} {
		if c.got != c.want {
			t.Errorf("%s: proof uses %v, SealingKeys %v", c.name, c.got, c.want)
		}
	}
	kp, err := proof.NewSealingKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(kp.CertPEM))
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if n := cert.PublicKey.(*rsa.PublicKey).N.BitLen(); n != sealingkeys.RSABits {
		t.Errorf("key size %d, want %d", n, sealingkeys.RSABits)
	}
	if cert.IsCA || cert.KeyUsage != x509.KeyUsageKeyEncipherment|x509.KeyUsageDigitalSignature {
		t.Errorf("certificate usage: CA=%v usage=%v, want key encipherment + digital signature (SealingKeys' allowed uses)", cert.IsCA, cert.KeyUsage)
	}
}
