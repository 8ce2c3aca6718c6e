package mocks

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"golang.org/x/crypto/ssh"
)

// realPrivateKey computes a tls:index/privateKey:PrivateKey's outputs as
// pulumi-tls does (provider/internal/provider/common_key.go: PKCS#1 PEM
// for RSA, SEC 1 for ECDSA, PKCS#8 for ED25519; OpenSSH private and public
// keys; PKIX public PEM), with a key generated now.
func realPrivateKey(in resource.PropertyMap) (map[string]string, error) {
	alg := str(in, "algorithm")
	var key crypto.Signer
	var pemBlock *pem.Block
	switch alg {
	case "RSA":
		bits := 2048
		if v, ok := in["rsaBits"]; ok && v.IsNumber() {
			bits = int(v.NumberValue())
		}
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			return nil, err
		}
		key, pemBlock = k, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
	case "ECDSA":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		key, pemBlock = k, &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
	case "ED25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, err
		}
		key, pemBlock = k, &pem.Block{Type: "PRIVATE KEY", Bytes: b}
	default:
		return nil, fmt.Errorf("mocks: tls algorithm %q", alg)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	sshPub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	sshPriv, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"privateKeyPem":      string(pem.EncodeToMemory(pemBlock)),
		"privateKeyPemPkcs8": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})),
		"privateKeyOpenssh":  string(pem.EncodeToMemory(sshPriv)),
		"publicKeyOpenssh":   string(ssh.MarshalAuthorizedKey(sshPub)),
		"publicKeyPem":       string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})),
	}, nil
}

// realSelfSignedCert signs a tls:index/selfSignedCert:SelfSignedCert with
// its privateKeyPem input, as pulumi-tls does (resource_self_signed_cert.go:
// the subject, validity period hours and allowed uses of the inputs).
func realSelfSignedCert(in resource.PropertyMap) (string, error) {
	block, _ := pem.Decode([]byte(str(in, "privateKeyPem")))
	if block == nil {
		return "", fmt.Errorf("mocks: selfSignedCert privateKeyPem is not PEM (is the key mocked with RealKeys?)")
	}
	var key crypto.Signer
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return "", err
		}
		key = k
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return "", err
		}
		key = k
	default:
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return "", err
		}
		key = k.(crypto.Signer)
	}
	hours := 24.0
	if v, ok := in["validityPeriodHours"]; ok && v.IsNumber() {
		hours = v.NumberValue()
	}
	subj := pkix.Name{}
	if v, ok := in["subject"]; ok && v.IsObject() {
		s := v.ObjectValue()
		subj.CommonName = str(s, "commonName")
		if o := str(s, "organization"); o != "" {
			subj.Organization = []string{o}
		}
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subj,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Duration(hours * float64(time.Hour))),
		BasicConstraintsValid: true,
	}
	if v, ok := in["isCaCertificate"]; ok && v.IsBool() && v.BoolValue() {
		tmpl.IsCA = true
	}
	if v, ok := in["allowedUses"]; ok && v.IsArray() {
		for _, u := range v.ArrayValue() {
			switch strings.ToLower(u.StringValue()) {
			case "digital_signature":
				tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
			case "key_encipherment":
				tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
			case "data_encipherment":
				tmpl.KeyUsage |= x509.KeyUsageDataEncipherment
			case "cert_signing":
				tmpl.KeyUsage |= x509.KeyUsageCertSign
			case "server_auth":
				tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
			case "client_auth":
				tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}
