// Package sealingkey names the pieces of the Sealed Secrets key path: the
// JSON properties of the Secrets Manager secret that the SealingKeys
// component writes and the ExternalSecrets in the manifests read, and the
// Kubernetes Secrets the Sealed Secrets controller loads.
package sealingkey

import "encoding/json"

// Properties of the Secrets Manager secret's JSON document. The active key
// seals; the previous key stays so that SealedSecrets made before the last
// rotation still unseal.
const (
	CertProperty         = "tls.crt"
	KeyProperty          = "tls.key"
	PreviousCertProperty = "previous.tls.crt"
	PreviousKeyProperty  = "previous.tls.key"
)

// Where the Sealed Secrets controller runs and the Secrets it loads.
const (
	Namespace      = "sealed-secrets"
	ControllerName = "sealed-secrets-controller"
	// ActiveSecretPrefix + key id names the active key's Secret,
	// PreviousSecretPrefix + key id the previous key's (ActiveSecretName,
	// PreviousSecretName).
	ActiveSecretPrefix   = "sealing-key-"
	PreviousSecretPrefix = "sealing-key-previous-"
	// KeyLabel with value KeyLabelValue marks a Secret as a sealing key.
	KeyLabel      = "sealedsecrets.bitnami.com/sealed-secrets-key"
	KeyLabelValue = "active"
)

// ActiveSecretName is the Secret holding the active key. Each key id gets
// its own name: the controller (sealed-secrets v0.36.6
// pkg/controller/controller.go watchKeySecrets, with --watch-for-secrets)
// registers keys from Secrets it sees ADDED and never re-reads a Secret
// updated in place, so a rotation must create a new Secret.
func ActiveSecretName(activeID string) string { return ActiveSecretPrefix + activeID }

// PreviousSecretName is the Secret holding the previous key; with a single
// key id (previousID "") it repeats the active key under its own name.
func PreviousSecretName(activeID, previousID string) string {
	if previousID == "" {
		previousID = activeID
	}
	return PreviousSecretPrefix + previousID
}

// KeyPair is one PEM certificate and its PEM private key.
type KeyPair struct {
	CertPEM string
	KeyPEM  string
}

// Document is the Secrets Manager secret's JSON. With a single key the
// previous slot repeats the active key, so both ExternalSecrets always
// resolve; the controller loads the same key twice, which is harmless.
func Document(active KeyPair, previous *KeyPair) (string, error) {
	if previous == nil {
		previous = &active
	}
	b, err := json.Marshal(map[string]string{
		CertProperty:         active.CertPEM,
		KeyProperty:          active.KeyPEM,
		PreviousCertProperty: previous.CertPEM,
		PreviousKeyProperty:  previous.KeyPEM,
	})
	return string(b), err
}
