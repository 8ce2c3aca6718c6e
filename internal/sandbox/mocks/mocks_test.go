package mocks

import (
	"testing"

	"github.com/pulumi/pulumi-tls/sdk/v5/go/tls"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TestPriorKeepsUnchangedResources runs a program twice, the second time
// with the first run as Prior: a resource whose inputs did not change keeps
// its outputs (its key pair), one whose inputs changed is made anew, as the
// engine does for `pulumi up` after a config change.
func TestPriorKeepsUnchangedResources(t *testing.T) {
	program := func(bits int) pulumi.RunFunc {
		return func(ctx *pulumi.Context) error {
			if _, err := tls.NewPrivateKey(ctx, "kept", &tls.PrivateKeyArgs{Algorithm: pulumi.String("RSA"), RsaBits: pulumi.Int(2048)}); err != nil {
				return err
			}
			_, err := tls.NewPrivateKey(ctx, "changed", &tls.PrivateKeyArgs{Algorithm: pulumi.String("RSA"), RsaBits: pulumi.Int(bits)})
			return err
		}
	}
	first := New()
	first.RealKeys = true
	if err := first.Run(nil, program(2048)); err != nil {
		t.Fatal(err)
	}
	second := New()
	second.RealKeys = true
	second.Prior = first
	if err := second.Run(nil, program(3072)); err != nil {
		t.Fatal(err)
	}
	pem := func(m *Mocks, name string) string {
		r := m.One("tls:index/privateKey:PrivateKey", name)
		if r == nil {
			t.Fatalf("no private key %q registered", name)
		}
		return str(r.State, "privateKeyPem")
	}
	cases := map[string]struct {
		reason string
		same   bool
	}{
		"kept":    {reason: "inputs unchanged: the state's key pair stays", same: true},
		"changed": {reason: "rsaBits changed: a new key pair", same: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, b := pem(first, name), pem(second, name)
			if a == "" || b == "" {
				t.Fatalf("no privateKeyPem in state")
			}
			if (a == b) != tc.same {
				t.Errorf("%s: same key pair = %v, want %v", tc.reason, a == b, tc.same)
			}
		})
	}
}
