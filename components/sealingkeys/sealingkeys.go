// Package sealingkeys is the SealingKeys component: the Sealed Secrets key
// pairs of the fleet, made by pulumi-tls, and the KMS-encrypted Secrets
// Manager secret the External Secrets Operator of every cluster reads them
// from (internal/contract/sealingkey names its JSON properties).
//
// Rotation: the stack setting sealingKeyIds lists key ids oldest first. The
// last id is the active key (its certificate is exported for kubeseal
// --cert), the one before it the previous key, and both are in the secret,
// so SealedSecrets made before the rotation still unseal. Append an id to
// rotate; re-seal what was sealed with the previous key before rotating
// again. Ids before those two keep their key pairs in Pulumi state only (a
// Pulumi secret, recoverable with pulumi stack output/export); removing an
// id destroys its key for good.
//
// Name: Secrets Manager keeps a deleted secret's name reserved for its
// recovery window, so `pulumi destroy` followed by `pulumi up` would fail
// for up to 30 days. The secret's name is SecretName plus a random suffix
// (pulumi-random, kept in state), so a recreated stack gets a fresh name;
// cluster-info carries the full name to every ExternalSecret.
//
// Access: the KMS key's policy delegates to IAM (the account's root
// principal may use the key, which is how AWS lets IAM policies grant it),
// so who may decrypt is decided by IAM policies alone: only the hub's
// External Secrets role allows kms:Decrypt on this key, and only through
// Secrets Manager (kms:ViaService). Spokes get the keys from the hub's Flux;
// the spoke permissions boundary grants no role under it either.
package sealingkeys

import (
	"fmt"
	"regexp"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/kms"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/secretsmanager"
	"github.com/pulumi/pulumi-random/sdk/v4/go/random"
	"github.com/pulumi/pulumi-tls/sdk/v5/go/tls"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Type is the component's Pulumi type token.
const Type = "eks-fleet:index:SealingKeys"

// Key parameters. Sealed Secrets' own controller makes RSA-4096 keys with
// a ten-year self-signed certificate; these match it.
const (
	RSABits       = 4096
	ValidityHours = 10 * 365 * 24
	// CommonName and Organization follow the controller's generated certs.
	CommonName   = "sealed-secret"
	Organization = "sealed-secret"
)

// Args configures SealingKeys.
type Args struct {
	// SecretName is the Secrets Manager secret's name, before the random
	// suffix ("<SecretName>-<6 hex digits>").
	SecretName string
	// RecoveryWindowDays is 0 (delete at once) or 7-30.
	RecoveryWindowDays int
	// KeyIDs lists the key ids, oldest first; the last is active.
	KeyIDs []string
	// KMSAlias names the KMS key (alias/<KMSAlias>).
	KMSAlias string
	// Partition and AccountID are the hub's: the key policy delegates to
	// that account's IAM.
	Partition string
	AccountID string
	Tags      pulumi.StringMapInput
}

// KeyPair is one sealing key and its certificate.
type KeyPair struct {
	ID   string
	Key  *tls.PrivateKey
	Cert *tls.SelfSignedCert
}

// SealingKeys is the key pairs, the KMS key and the secret.
type SealingKeys struct {
	pulumi.ResourceState

	Keys    []KeyPair
	Suffix  *random.RandomId
	KMSKey  *kms.Key
	Secret  *secretsmanager.Secret
	Version *secretsmanager.SecretVersion

	// ActiveCertPEM is the certificate kubeseal seals with (public).
	ActiveCertPEM pulumi.StringOutput `pulumi:"activeCertPem"`
	SecretArn     pulumi.StringOutput `pulumi:"secretArn"`
	SecretName    pulumi.StringOutput `pulumi:"secretName"`
	KMSKeyArn     pulumi.StringOutput `pulumi:"kmsKeyArn"`
}

// SuffixBytes is the length of the secret name's random suffix (hex: twice
// as many characters).
const SuffixBytes = 4

// KeyPolicySid names the key policy's only statement.
const KeyPolicySid = "DelegateToIAM"

var accountIDRE = regexp.MustCompile(`^[0-9]{12}$`)

// KeyPolicy is the sealing KMS key's policy: the account (its root
// principal) may use and manage the key, so IAM policies of the account's
// principals decide who may (the AWS default key policy, written out so
// that it is reviewed and tested rather than implied). In a key policy
// Resource "*" means this key.
func KeyPolicy(partition, accountID string) policydoc.Document {
	return policydoc.NewDocument(policydoc.Statement{
		Sid:       KeyPolicySid,
		Effect:    policydoc.Allow,
		Principal: map[string]any{"AWS": fmt.Sprintf("arn:%s:iam::%s:root", partition, accountID)},
		Action:    []string{"kms:*"},
		Resource:  []string{"*"},
	})
}

// New registers SealingKeys.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*SealingKeys, error) {
	if len(args.KeyIDs) == 0 || args.SecretName == "" || args.KMSAlias == "" || args.Partition == "" {
		return nil, fmt.Errorf("sealingkeys %s: SecretName, KMSAlias, Partition and at least one key id are required", name)
	}
	if !accountIDRE.MatchString(args.AccountID) {
		return nil, fmt.Errorf("sealingkeys %s: AccountID %q: want 12 digits", name, args.AccountID)
	}
	keyPolicy, err := KeyPolicy(args.Partition, args.AccountID).JSON()
	if err != nil {
		return nil, fmt.Errorf("sealingkeys %s: key policy: %w", name, err)
	}
	c := &SealingKeys{}
	if err := ctx.RegisterComponentResource(Type, name, c, opts...); err != nil {
		return nil, fmt.Errorf("register SealingKeys %s: %w", name, err)
	}
	parent := pulumi.Parent(c)

	for _, id := range args.KeyIDs {
		key, err := tls.NewPrivateKey(ctx, name+"-"+id, &tls.PrivateKeyArgs{
			Algorithm: pulumi.String("RSA"),
			RsaBits:   pulumi.Int(RSABits),
			// Protected: the key exists only in Pulumi state, and SealedSecrets
			// in Git need it. Renaming or dropping an id makes up refuse to
			// delete it instead of destroying it (unprotect on purpose with
			// pulumi state unprotect). RetainOnDelete would not help: there
			// is nothing outside the state to retain.
		}, parent, pulumi.Protect(true))
		if err != nil {
			return nil, fmt.Errorf("sealingkeys %s: key %s: %w", name, id, err)
		}
		cert, err := tls.NewSelfSignedCert(ctx, name+"-"+id, &tls.SelfSignedCertArgs{
			PrivateKeyPem:       key.PrivateKeyPem,
			ValidityPeriodHours: pulumi.Int(ValidityHours),
			AllowedUses:         pulumi.StringArray{pulumi.String("key_encipherment"), pulumi.String("digital_signature")},
			Subject: &tls.SelfSignedCertSubjectArgs{
				CommonName:   pulumi.String(CommonName),
				Organization: pulumi.String(Organization),
			},
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("sealingkeys %s: certificate %s: %w", name, id, err)
		}
		c.Keys = append(c.Keys, KeyPair{ID: id, Key: key, Cert: cert})
	}

	kmsKey, err := kms.NewKey(ctx, name, &kms.KeyArgs{
		Description:          pulumi.String("Encrypts the Sealed Secrets keys in " + args.SecretName),
		Policy:               pulumi.String(keyPolicy),
		EnableKeyRotation:    pulumi.Bool(true),
		DeletionWindowInDays: pulumi.Int(30),
		Tags:                 args.Tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("sealingkeys %s: kms key: %w", name, err)
	}
	if _, err := kms.NewAlias(ctx, name, &kms.AliasArgs{
		Name:        pulumi.String("alias/" + args.KMSAlias),
		TargetKeyId: kmsKey.KeyId,
	}, parent); err != nil {
		return nil, fmt.Errorf("sealingkeys %s: kms alias: %w", name, err)
	}
	// A new suffix only when the configured name changes.
	suffix, err := random.NewRandomId(ctx, name, &random.RandomIdArgs{
		ByteLength: pulumi.Int(SuffixBytes),
		Keepers:    pulumi.StringMap{"secretName": pulumi.String(args.SecretName)},
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("sealingkeys %s: name suffix: %w", name, err)
	}
	c.Suffix = suffix
	secret, err := secretsmanager.NewSecret(ctx, name, &secretsmanager.SecretArgs{
		Name:                 pulumi.Sprintf("%s-%s", args.SecretName, suffix.Hex),
		Description:          pulumi.String("Sealed Secrets keys of the fleet (active and previous), read by External Secrets"),
		KmsKeyId:             kmsKey.Arn,
		RecoveryWindowInDays: pulumi.Int(args.RecoveryWindowDays),
		Tags:                 args.Tags,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("sealingkeys %s: secret: %w", name, err)
	}

	active := c.Keys[len(c.Keys)-1]
	prev := active
	if len(c.Keys) > 1 {
		prev = c.Keys[len(c.Keys)-2]
	}
	// The document holds private keys: it is a Pulumi secret from the start.
	doc := pulumi.ToSecret(pulumi.All(active.Cert.CertPem, active.Key.PrivateKeyPem, prev.Cert.CertPem, prev.Key.PrivateKeyPem).
		ApplyT(func(v []any) (string, error) {
			return sealingkey.Document(
				sealingkey.KeyPair{CertPEM: v[0].(string), KeyPEM: v[1].(string)},
				&sealingkey.KeyPair{CertPEM: v[2].(string), KeyPEM: v[3].(string)},
			)
		})).(pulumi.StringOutput)
	version, err := secretsmanager.NewSecretVersion(ctx, name, &secretsmanager.SecretVersionArgs{
		SecretId:     secret.ID(),
		SecretString: doc,
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("sealingkeys %s: secret version: %w", name, err)
	}

	c.KMSKey, c.Secret, c.Version = kmsKey, secret, version
	c.ActiveCertPEM = active.Cert.CertPem
	c.SecretArn, c.SecretName, c.KMSKeyArn = secret.Arn, secret.Name, kmsKey.Arn
	if err := ctx.RegisterResourceOutputs(c, pulumi.Map{
		"activeCertPem": c.ActiveCertPEM,
		"secretArn":     secret.Arn,
		"secretName":    secret.Name,
		"kmsKeyArn":     kmsKey.Arn,
	}); err != nil {
		return nil, fmt.Errorf("sealingkeys %s: outputs: %w", name, err)
	}
	return c, nil
}
