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

// The hub hands the keys to each spoke with its own Flux: no spoke holds
// a credential that reads them. The hub's External Secrets writes HubSecret
// (in the hub's flux-system) from the Secrets Manager document, each value
// a variable of the spoke's sealing-keys bootstrap step (postBuild
// substituteFrom), which applies them on the spoke as the key Secrets. The
// PEM values are base64-encoded (Flux substitutes text into YAML, which a
// multi-line value would break) and land in the Secrets' data; the Secret
// names travel with the keys, so that a rotation never applies a new name
// with an old key (the controller never re-reads a Secret).
const (
	HubSecret = "spoke-sealing-keys"
	// Variables of HubSecret.
	SpokeActiveSecretVar   = "SPOKE_SEALING_ACTIVE_SECRET"
	SpokeActiveCertVar     = "SPOKE_SEALING_ACTIVE_CRT"
	SpokeActiveKeyVar      = "SPOKE_SEALING_ACTIVE_KEY"
	SpokePreviousSecretVar = "SPOKE_SEALING_PREVIOUS_SECRET"
	SpokePreviousCertVar   = "SPOKE_SEALING_PREVIOUS_CRT"
	SpokePreviousKeyVar    = "SPOKE_SEALING_PREVIOUS_KEY"
	// SpokeSecretPrefix starts the key Secrets' names on a spoke: hub-
	// and the hub's name for the same key (hub-sealing-key-<id>). Spokes
	// made before the hub handed the keys over hold them in Secrets of
	// the hub's names, owned by External Secrets objects: once those go,
	// the garbage collector deletes those Secrets, so the keys the hub
	// applies must not share their names.
	SpokeSecretPrefix = "hub-"
)

// SpokeVariables are HubSecret's variables.
func SpokeVariables() []string {
	return []string{SpokeActiveSecretVar, SpokeActiveCertVar, SpokeActiveKeyVar, SpokePreviousSecretVar, SpokePreviousCertVar, SpokePreviousKeyVar}
}

// SpokeSecretName is the name on a spoke of the key Secret the hub names
// hubName.
func SpokeSecretName(hubName string) string { return SpokeSecretPrefix + hubName }

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
