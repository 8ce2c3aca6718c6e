package sealingkeys

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
)

const account = "111122223333"

func TestSealingKeys(t *testing.T) {
	cases := []struct {
		ids              []string
		active, previous string
	}{
		{[]string{"key-1"}, "key-1", "key-1"},
		{[]string{"key-1", "key-2"}, "key-2", "key-1"},
		{[]string{"key-1", "key-2", "key-3"}, "key-3", "key-2"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.ids, ","), func(t *testing.T) {
			m := mocks.New()
			var sk *SealingKeys
			err := m.Run(nil, func(ctx *pulumi.Context) (err error) {
				sk, err = New(ctx, "sealing", Args{SecretName: "mgmt/sealed-secrets-key", RecoveryWindowDays: 7, KeyIDs: tc.ids, KMSAlias: "mgmt-sealing", Partition: "aws", AccountID: account})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			comp := m.One(Type, "sealing")
			for _, r := range m.Resources() {
				if r != comp && r.Parent != comp.URN {
					t.Errorf("%s %s not parented to the component", r.Type, r.Name)
				}
			}
			if n := len(m.ByType("tls:index/privateKey:PrivateKey")); n != len(tc.ids) {
				t.Errorf("%d keys", n)
			}
			for _, k := range m.ByType("tls:index/privateKey:PrivateKey") {
				if k.Inputs["algorithm"].StringValue() != "RSA" || k.Inputs["rsaBits"].NumberValue() != RSABits {
					t.Errorf("key %s: %v", k.Name, k.Inputs)
				}
				if !k.State["privateKeyPem"].IsSecret() {
					t.Errorf("key %s: private key not secret", k.Name)
				}
			}
			sec := m.One("aws:secretsmanager/secret:Secret", "sealing")
			if sec.Inputs["recoveryWindowInDays"].NumberValue() != 7 || sec.Inputs["name"].StringValue() != "mgmt/sealed-secrets-key-a1b2c3d4" {
				t.Errorf("secret inputs %v", sec.Inputs)
			}
			// The suffix is renewed only when the configured name changes.
			suffix := m.One("random:index/randomId:RandomId", "sealing")
			if suffix.Inputs["byteLength"].NumberValue() != SuffixBytes || suffix.Inputs["keepers"].ObjectValue()["secretName"].StringValue() != "mgmt/sealed-secrets-key" {
				t.Errorf("name suffix inputs %v", suffix.Inputs)
			}
			if !strings.Contains(sec.Inputs["kmsKeyId"].StringValue(), ":key/") {
				t.Errorf("secret not KMS-encrypted: %v", sec.Inputs["kmsKeyId"])
			}
			ver := m.One("aws:secretsmanager/secretVersion:SecretVersion", "sealing")
			v := ver.Inputs["secretString"]
			if !v.IsSecret() {
				t.Fatal("secret string is not a Pulumi secret")
			}
			var doc map[string]string
			if err := json.Unmarshal([]byte(v.SecretValue().Element.StringValue()), &doc); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				sealingkey.CertProperty:         "sealing-" + tc.active,
				sealingkey.KeyProperty:          "sealing-" + tc.active,
				sealingkey.PreviousCertProperty: "sealing-" + tc.previous,
				sealingkey.PreviousKeyProperty:  "sealing-" + tc.previous,
			}
			if len(doc) != len(want) {
				t.Errorf("document keys %v", doc)
			}
			for k, name := range want {
				if !strings.Contains(doc[k], "\n"+name+"\n") {
					t.Errorf("%s = %q, want the PEM of %s", k, doc[k], name)
				}
			}
			if !strings.Contains(doc[sealingkey.KeyProperty], "PRIVATE KEY") || !strings.Contains(doc[sealingkey.CertProperty], "CERTIFICATE") {
				t.Errorf("document mixes up certificate and key: %v", doc)
			}
			cert, err := internals.UnsafeAwaitOutput(context.Background(), sk.ActiveCertPEM)
			if err != nil {
				t.Fatal(err)
			}
			if cert.Secret || !strings.Contains(cert.Value.(string), "sealing-"+tc.active) || strings.Contains(cert.Value.(string), "PRIVATE") {
				t.Errorf("active certificate output %+v", cert)
			}
		})
	}
}

func TestSealingKeysRejectsBadArgs(t *testing.T) {
	good := Args{SecretName: "x", KMSAlias: "x", KeyIDs: []string{"key-1"}, Partition: "aws", AccountID: account}
	cases := []struct {
		name   string
		mutate func(*Args)
		want   string
	}{
		{"no keys", func(a *Args) { a.KeyIDs = nil }, "key id"},
		{"no partition", func(a *Args) { a.Partition = "" }, "Partition"},
		{"no account", func(a *Args) { a.AccountID = "" }, "AccountID"},
		{"bad account", func(a *Args) { a.AccountID = "1111-2222-3333" }, `AccountID "1111-2222-3333"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := good
			tc.mutate(&a)
			m := mocks.New()
			err := m.Run(nil, func(ctx *pulumi.Context) error {
				_, err := New(ctx, "sealing", a)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) || len(m.All()) != 0 {
				t.Fatalf("err %v (want %q), registered %v", err, tc.want, m.SortedTypes())
			}
		})
	}
}

// The key policy only delegates to the account's IAM: one statement, the
// account root principal, no condition. With it the IAM policies decide, so
// a spoke's ${SPOKE_ROLE_PREFIX}<spoke>-eso role (same account, spoke
// boundary) decrypts through Secrets Manager exactly as its policy and
// boundary allow; a policy naming only some roles would lock spokes out.
func TestSealingKeyPolicyDelegatesToIAM(t *testing.T) {
	for _, partition := range []string{"aws", "aws-cn", "aws-us-gov"} {
		t.Run(partition, func(t *testing.T) {
			m := mocks.New()
			err := m.Run(nil, func(ctx *pulumi.Context) error {
				_, err := New(ctx, "sealing", Args{SecretName: "mgmt/sealed-secrets-key", KeyIDs: []string{"key-1"}, KMSAlias: "mgmt-sealing", Partition: partition, AccountID: account})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			key := m.One("aws:kms/key:Key", "sealing")
			if key == nil {
				t.Fatal("no KMS key")
			}
			p, ok := key.Inputs["policy"]
			if !ok || !p.IsString() {
				t.Fatalf("key policy not set: %v", key.Inputs)
			}
			doc, err := policydoc.Parse(p.StringValue())
			if err != nil {
				t.Fatal(err)
			}
			if doc.Version != policydoc.PolicyVersion || len(doc.Statement) != 1 {
				t.Fatalf("key policy %s", p.StringValue())
			}
			st := doc.Statement[0]
			root := "arn:" + partition + ":iam::" + account + ":root"
			if st.Effect != policydoc.Allow || len(st.Principal) != 1 || st.Principal["AWS"] != root ||
				!slices.Equal(st.Action, []string{"kms:*"}) || !slices.Equal(st.Resource, []string{"*"}) || len(st.Condition) != 0 {
				t.Errorf("key policy statement %+v, want Allow kms:* on the key for %s only", st, root)
			}
			sec := m.One("aws:secretsmanager/secret:Secret", "sealing")
			if !strings.HasPrefix(sec.Inputs["kmsKeyId"].StringValue(), "arn:aws:kms:") || !slices.Contains(sec.Dependencies, key.URN) {
				t.Errorf("secret not encrypted with the sealing key: %v", sec.Inputs["kmsKeyId"])
			}
		})
	}
}

// TestSuffixNotTheFormAWSWarnsAgainst: AWS advises against secret names
// ending in a hyphen and six characters (partial-ARN lookups); the suffix
// is longer, and stacks' name bound leaves room for it.
func TestSuffixNotTheFormAWSWarnsAgainst(t *testing.T) {
	if n := 2 * SuffixBytes; n == 6 {
		t.Fatalf("suffix of %d hex characters: the form AWS warns against", n)
	}
	if 503+1+2*SuffixBytes != 512 {
		t.Fatalf("stacks bounds sealingSecretName at 503; with the suffix that is %d, not 512", 503+1+2*SuffixBytes)
	}
}
