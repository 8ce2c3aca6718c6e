package test

import (
	"bytes"
	"crypto/rsa"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sscrypto "github.com/bitnami-labs/sealed-secrets/pkg/crypto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/proof"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// The files that write the key Secrets the hub's and each spoke's
// controller load: on the hub, ExternalSecrets; on a spoke, Secrets the
// hub's Flux substitutes from the Secret the hub's External Secrets writes
// for the spokes.
const (
	hubKeysFile      = "gitops-system/infrastructure/secret-store/sealing-keys.yaml"
	spokeKeysFile    = "gitops-system/spoke-bootstrap/sealing-keys/sealing-keys.yaml"
	hubForSpokesFile = "gitops-system/infrastructure/secret-store/spoke-sealing-keys.yaml"
)

// renderedFile reads a tree file substituted as Flux would with vars.
func renderedFile(t *testing.T, tree, rel string, vars map[string]string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tree, rel))
	if err != nil {
		t.Fatal(err)
	}
	body := os.Expand(string(b), func(k string) string { return vars[k] })
	r := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(body)), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := r.Decode(&u.Object); err != nil {
			break
		}
		out = append(out, u)
	}
	return out
}

// delivered is the Secret ESO writes for the file's ExternalSecret named
// name, from the Secrets Manager document.
func delivered(t *testing.T, tree, rel, name string, info clusterinfo.Values[string], document string) *corev1.Secret {
	t.Helper()
	for _, u := range renderedFile(t, tree, rel, info.Map()) {
		if u.GetKind() == "ExternalSecret" && u.GetName() == name {
			s, err := proof.DeliveredSecret(u, document, info)
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			return s
		}
	}
	t.Fatalf("%s: no ExternalSecret %s", rel, name)
	return nil
}

// keySecretsFromTree returns the key Secrets a cluster's controller loads,
// by name, as the tree writes them from document: on the hub the Secrets
// its ExternalSecrets deliver; on a spoke those its sealing-keys step
// applies, substituted from what the hub's External Secrets delivers.
func keySecretsFromTree(t *testing.T, tree string, spoke bool, info clusterinfo.Values[string], document string) map[string]*rsa.PrivateKey {
	t.Helper()
	var secrets []*corev1.Secret
	if !spoke {
		for _, u := range renderedFile(t, tree, hubKeysFile, info.Map()) {
			if u.GetKind() != "ExternalSecret" {
				continue
			}
			s, err := proof.DeliveredSecret(u, document, info)
			if err != nil {
				t.Fatalf("%s: %v", hubKeysFile, err)
			}
			secrets = append(secrets, s)
		}
	} else {
		vars := info.Map()
		for k, v := range delivered(t, tree, hubForSpokesFile, sealingkey.HubSecret, info, document).Data {
			vars[k] = string(v)
		}
		for _, u := range renderedFile(t, tree, spokeKeysFile, vars) {
			obj, err := kbuild.VarObject(u)
			if err != nil {
				t.Fatalf("%s: %v", spokeKeysFile, err)
			}
			if s, ok := obj.(*corev1.Secret); ok {
				secrets = append(secrets, s)
			}
		}
	}
	out := map[string]*rsa.PrivateKey{}
	for _, s := range secrets {
		keys, err := proof.ControllerKeys(s)
		if err != nil {
			t.Fatalf("spoke %v: %v", spoke, err)
		}
		for _, k := range keys {
			out[s.Name] = k
		}
	}
	if len(out) == 0 {
		t.Fatalf("spoke %v: no key Secrets", spoke)
	}
	return out
}

// TestSealingKeyRotation rotates key-1 -> key-2 the way a stack does
// (sealingKeyIds appended, the Secrets Manager document rewritten, the
// cluster-info variables changed) and checks, with kubeseal's sealing and
// the controller's unsealing, what a running controller can unseal. The
// controller (sealed-secrets v0.36.6, --watch-for-secrets) registers keys
// from Secrets at start and from Secrets ADDED later; a Secret rewritten in
// place is never re-read. A tree that writes fixed Secret names fails.
func TestSealingKeyRotation(t *testing.T) {
	k1, err := proof.NewSealingKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	k2, err := proof.NewSealingKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		edits   []plant.Edit
		wantErr string
	}{
		{"committed tree", nil, ""},
		{"fixed Secret names (a rotation must create a new Secret)", []plant.Edit{
			{File: hubKeysFile, Old: "name: ${SEALING_ACTIVE_KEY_SECRET}\n    creationPolicy", New: "name: sealing-key-active\n    creationPolicy"},
			{File: spokeKeysFile, Old: "name: ${SPOKE_SEALING_ACTIVE_SECRET}", New: "name: sealing-key-active"},
		}, "no key could decrypt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := "../manifests"
			if tt.edits != nil {
				tree = plant.Repo(t, tt.edits...)
			}
			before, after := stacks.Defaults(), stacks.Defaults()
			after.Sealing.KeyIDs = []string{"key-1", "key-2"}
			infoFor := func(c stacks.Config) clusterinfo.Values[string] {
				info := clusterinfo.Example()
				info.SealingActiveKeySecret = sealingkey.ActiveSecretName(c.ActiveKeyID())
				info.SealingPreviousKeySecret = sealingkey.PreviousSecretName(c.ActiveKeyID(), c.PreviousKeyID())
				return info
			}
			doc1, err := sealingkey.Document(k1, nil)
			if err != nil {
				t.Fatal(err)
			}
			doc2, err := sealingkey.Document(k2, &k1)
			if err != nil {
				t.Fatal(err)
			}
			for _, spoke := range []bool{false, true} {
				rel := map[bool]string{false: "the hub", true: "a spoke"}[spoke]
				// At start: every labelled Secret.
				loaded := keySecretsFromTree(t, tree, spoke, infoFor(before), doc1)
				if err := proof.SealRoundTrip(k1.CertPEM, byFingerprint(loaded)); err != nil {
					t.Fatalf("%s: before rotation: %v", rel, err)
				}
				// After the rotation: only Secrets with new names reach the
				// running controller (AddFunc); old names keep old content.
				rotated := keySecretsFromTree(t, tree, spoke, infoFor(after), doc2)
				running := maps.Clone(loaded)
				for name, k := range rotated {
					if _, seen := loaded[name]; !seen {
						running[name] = k
					}
				}
				errNew := proof.SealRoundTrip(k2.CertPEM, byFingerprint(running))
				errOld := proof.SealRoundTrip(k1.CertPEM, byFingerprint(running))
				// A restarted controller loads exactly the rotated Secrets.
				errRestart := proof.SealRoundTrip(k1.CertPEM, byFingerprint(rotated))
				if tt.wantErr == "" {
					for what, err := range map[string]error{"new key, running controller": errNew, "old key, running controller": errOld, "old key, restarted controller": errRestart} {
						if err != nil {
							t.Errorf("%s: %s: %v", rel, what, err)
						}
					}
					continue
				}
				if errNew == nil || !strings.Contains(errNew.Error(), tt.wantErr) {
					t.Errorf("%s: sealing with the new certificate: err %v, want %q", rel, errNew, tt.wantErr)
				}
			}
		})
	}
}

func byFingerprint(byName map[string]*rsa.PrivateKey) map[string]*rsa.PrivateKey {
	out := map[string]*rsa.PrivateKey{}
	for _, k := range byName {
		if fp, err := sscrypto.PublicKeyFingerprint(&k.PublicKey); err == nil {
			out[fp] = k
		}
	}
	return out
}
