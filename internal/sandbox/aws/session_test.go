package aws

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// TestProviderReachesAnotherAccount: a managed resource whose
// ProviderConfig assumes a role in another account is made there, as that
// role, only when STS would allow the step: the providers' role may
// assume the role and the role's trust names it with the external ID the
// ProviderConfig sends. Otherwise the resource fails to connect with STS's
// refusal, nothing is made in either account, and it gets no finalizer.
func TestProviderReachesAnotherAccount(t *testing.T) {
	const (
		hubAccount, spokeAccount = "111122223333", "222233334444"
		hubRole                  = "arn:aws:iam::" + hubAccount + ":role/mgmt-crossplane"
		accountRole              = "arn:aws:iam::" + spokeAccount + ":role/mgmt-crossplane-account"
		strangerRole             = "arn:aws:iam::333344445555:role/mgmt-crossplane-account"
		external                 = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	)
	allow := func(actions []string, resources ...string) policydoc.Statement {
		return policydoc.Statement{Effect: policydoc.Allow, Action: actions, Resource: resources}
	}
	trust := func(principal, externalID string) policydoc.Document {
		return policydoc.NewDocument(policydoc.Statement{Effect: policydoc.Allow, Action: []string{"sts:AssumeRole"},
			Principal: map[string]any{"AWS": principal},
			Condition: map[string]map[string]any{"StringEquals": {"sts:ExternalId": externalID}}})
	}
	toolDir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	refused := func(target string) []string {
		return []string{"connect failed: cannot get terraform setup: cache manager failure: cannot retrieve the AWS credentials: operation error STS: AssumeRole, https response error StatusCode: 403, " +
			"api error AccessDenied: User: arn:aws:sts::" + hubAccount + ":assumed-role/mgmt-crossplane/",
			"is not authorized to perform: sts:AssumeRole on resource: " + target}
	}
	cases := map[string]struct {
		reason string
		// config is the ProviderConfig the VPC names: its chain's role
		// and external ID (empty role: the default, IRSA only)
		role, externalID string
		// trust is the account role's trust policy
		trust policydoc.Document
		// in is the account the VPC must be made in; empty: none, and
		// Synced=False with want
		in   string
		want []string
	}{
		"HubAccount": {reason: "The default ProviderConfig is the providers' own role in their own account.",
			trust: trust(hubRole, external), in: hubAccount},
		"AccountRole": {reason: "The chain's role trusts the providers' role with this external ID: the VPC is made in its account.",
			role: accountRole, externalID: external, trust: trust(hubRole, external), in: spokeAccount},
		"WrongExternalID": {reason: "The trust's condition on sts:ExternalId does not hold.",
			role: accountRole, externalID: "0000", trust: trust(hubRole, external), want: refused(accountRole)},
		"TrustNamesAnother": {reason: "The account role trusts another principal.",
			role: accountRole, externalID: external, trust: trust("arn:aws:iam::"+hubAccount+":role/other-crossplane", external), want: refused(accountRole)},
		"CallerMayNot": {reason: "The providers' own policy does not allow assuming a role of an account it does not list, whatever that role trusts.",
			role: strangerRole, externalID: external, trust: trust(hubRole, external), want: refused(strangerRole)},
		"NoProviderConfig": {reason: "A ProviderConfig that does not exist, as the provider's resolver says it.",
			role: "missing", want: []string{`connect failed: cannot get terraform setup: cannot get referenced ProviderConfig: providerconfigs.aws.upbound.io "account" not found`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ec2All := []string{"ec2:*"}
			a, err := NewAuthorizer(toolDir, nil, map[string]Role{
				hubRole: {Inline: []policydoc.Document{policydoc.NewDocument(
					allow([]string{"sts:AssumeRole"}, accountRole), allow(ec2All, "*"))}},
				accountRole:  {Inline: []policydoc.Document{policydoc.NewDocument(allow(ec2All, "*"))}},
				strangerRole: {Inline: []policydoc.Document{policydoc.NewDocument(allow(ec2All, "*"))}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			a.ResourcePolicies = map[string]policydoc.Document{accountRole: tc.trust, strangerRole: trust(hubRole, external)}
			vpc := mr("ec2.aws.upbound.io/v1beta1", "VPC", "vpc", map[string]any{"region": "eu-west-1", "cidrBlock": "10.20.0.0/16"})
			objs := []client.Object{crd("ec2.aws.upbound.io", "VPC", "vpcs", "v1beta1"), providerRoleSA(hubRole)}
			if tc.role != "" {
				_ = unstructured.SetNestedField(vpc.Object, "account", "spec", "providerConfigRef", "name")
				if tc.role != "missing" {
					objs = append(objs, providerConfig("account", tc.role, tc.externalID))
				}
			}
			objs = append(objs, vpc)
			s := crdScheme(t)
			if err := corev1.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(providerConfig("default")).WithObjects(objs...).WithStatusSubresource(vpc).Build()
			hub, spoke := NewLedger(), NewLedger()
			p := &Provider{Client: c, Module: providerModule(t), Account: hubAccount, Partition: "aws", Ledger: hub,
				Accounts: map[string]*Ledger{spokeAccount: spoke}, IAM: a}
			for range 3 {
				if err := p.RunOnce(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if errs := p.Errors(); len(errs) > 0 {
				t.Fatalf("stand-in errors: %v", errs)
			}
			got := get(t, c, "ec2.aws.upbound.io/v1beta1", "VPC", "vpc")
			held := map[string]int{hubAccount: len(hub.All()), spokeAccount: len(spoke.All())}
			if tc.in == "" {
				st, msg := cond(got, "Synced")
				if st != "False" {
					t.Errorf("%s\nSynced=%s %q, want False", tc.reason, st, msg)
				}
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%s\nmessage %q\nlacks %q", tc.reason, msg, w)
					}
				}
				if held[hubAccount]+held[spokeAccount] > 0 {
					t.Errorf("%s\nthe accounts hold %v, want nothing", tc.reason, held)
				}
				if meta.FinalizerExists(got, finalizer) {
					t.Errorf("%s\nthe VPC has the finalizer, though it never connected", tc.reason)
				}
				return
			}
			if st, msg := cond(got, "Ready"); st != "True" {
				t.Fatalf("%s\nnot Ready: %s", tc.reason, msg)
			}
			want := map[string]int{hubAccount: 0, spokeAccount: 0}
			want[tc.in] = 1
			if held[hubAccount] != want[hubAccount] || held[spokeAccount] != want[spokeAccount] {
				t.Errorf("%s\nthe accounts hold %v, want %v", tc.reason, held, want)
			}
			l := map[string]*Ledger{hubAccount: hub, spokeAccount: spoke}[tc.in]
			for _, r := range l.All() {
				if r.Account != tc.in || !strings.Contains(r.ARN, ":"+tc.in+":vpc/") {
					t.Errorf("%s\nthe VPC is in account %q with ARN %s, want account %s", tc.reason, r.Account, r.ARN, tc.in)
				}
			}
		})
	}
}

// providerRoleSA is a provider revision's ServiceAccount with role as its
// IRSA role, as Crossplane makes it from the DeploymentRuntimeConfig.
func providerRoleSA(role string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "provider-aws-ec2", Namespace: "crossplane-system",
		Annotations:     map[string]string{fluxbootstrap.RoleARNAnnotation: role},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "pkg.crossplane.io/v1", Kind: "ProviderRevision", Name: "provider-aws-ec2-1", UID: "1"}}}}
}

// TestEKSClusterReportsItsCA: EKS reports a cluster's endpoint, issuer and
// CA (base64 PEM, a CA certificate of its own) once it is ACTIVE, and none
// of them while it is CREATING; a spoke in another account's kubeconfig
// ConfigMap carries the endpoint and CA the function reads from it.
func TestEKSClusterReportsItsCA(t *testing.T) {
	p := &Provider{Account: "222233334444", Partition: "aws", naming: map[string]Naming{"aws_eks_cluster": ByName}}
	r := p.newResource(&session{account: p.Account}, "eks.aws.upbound.io/Cluster", "aws_eks_cluster", "pay-eks", "mgmt-pay", map[string]any{"region": "eu-west-1"})
	r.ReadyAt = r.Created.Add(time.Minute)
	creating := computed(r, r.Created)
	for _, k := range []string{"endpoint", "identity", "certificateAuthority"} {
		if _, ok := creating[k]; ok {
			t.Errorf("a CREATING cluster reports %s", k)
		}
	}
	active := computed(r, r.ReadyAt)
	cas, _ := active["certificateAuthority"].([]any)
	if len(cas) != 1 {
		t.Fatalf("an ACTIVE cluster reports certificateAuthority %v, want one", active["certificateAuthority"])
	}
	data, _ := cas[0].(map[string]any)["data"].(string)
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("certificateAuthority data is not a PEM certificate: %q", b)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.IsCA || cert.Subject.CommonName != "kubernetes" {
		t.Errorf("the cluster's CA: IsCA %v, subject %q; want a CA named kubernetes", cert.IsCA, cert.Subject.CommonName)
	}
	if e, _ := active["endpoint"].(string); !strings.HasSuffix(e, ".gr7.eu-west-1.eks.amazonaws.com") {
		t.Errorf("endpoint %q", e)
	}
}
