package hubiam

import (
	"fmt"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// AWS IAM quotas (IAM and AWS STS quotas, IAM User Guide). IAM does not
// count white space in policy sizes.
const (
	QuotaManagedPolicy = 6144  // a customer managed policy (a boundary is one)
	QuotaInlinePerRole = 10240 // all inline policies of one role together
	QuotaTrustPolicy   = 2048  // a role trust policy (default quota)
	QuotaRoleName      = 64
)

// Limits on the inputs of the documents, chosen so that every document
// fits its quota at the longest names the validators admit (the quota tests
// prove it): the stack validator refuses longer values.
const (
	// MaxSealingSecretNameLength bounds sealingSecretName: Secrets
	// Manager's 512 less the suffix the program appends ("-" and eight hex
	// digits, components/sealingkeys). Only the hub's External Secrets
	// policy names the secret's ARN; spokes never read it.
	MaxSealingSecretNameLength = 503
)

// LongestRegions holds, for each supported partition, its longest region
// name: the quota tests build every document in each pair (a region and a
// partition from different pairs cannot meet, CheckPartition refuses it).
var LongestRegions = map[string]string{"aws": "ap-southeast-2", "aws-us-gov": "us-gov-west-1"}

// CheckQuotas reports every hub document over its quota.
func CheckQuotas(e Env, secretARN, kmsKeyARN string) error {
	return CheckUsages(Usages(e, secretARN, kmsKeyARN))
}

// Document kinds.
const (
	KindTrust    = "trust"
	KindInline   = "inline"
	KindManaged  = "managed"
	KindBoundary = "boundary"
	KindRoleName = "role-name"
)

// Usage is one IAM document (or name) against its quota.
type Usage struct {
	Role  string `json:"role"`
	Kind  string `json:"kind"`
	ARN   string `json:"arn"`
	Size  int    `json:"size"`
	Quota int    `json:"quota"`
	// Document is the rendered JSON (empty for names and AWS managed policies).
	Document string `json:"document,omitempty"`
}

// Fits reports whether the usage is within its quota.
func (u Usage) Fits() bool { return u.Size <= u.Quota }

// CheckUsages returns one error per usage over its quota.
func CheckUsages(us []Usage) error {
	var over []string
	for _, u := range us {
		if !u.Fits() {
			over = append(over, fmt.Sprintf("%s %s is %d characters, IAM allows %d", u.Role, u.Kind, u.Size, u.Quota))
		}
	}
	if len(over) > 0 {
		return fmt.Errorf("IAM quotas exceeded: %s", strings.Join(over, "; "))
	}
	return nil
}

// Usages returns every IAM document the hub program makes, with sizes.
func Usages(e Env, secretARN, kmsKeyARN string) []Usage {
	role := func(name string) string {
		return fmt.Sprintf("arn:%s:iam::%s:role/%s", e.Partition, e.AccountID, name)
	}
	policy := func(name string) string {
		return fmt.Sprintf("arn:%s:iam::%s:policy/%s", e.Partition, e.AccountID, name)
	}
	var out []Usage
	add := func(roleName, kind, arn string, d policydoc.Document, quota int) {
		out = append(out, Usage{Role: roleName, Kind: kind, ARN: arn, Size: policydoc.Size(d), Quota: quota, Document: d.MustJSON()})
	}
	b := SpokeBoundary(e)
	add(BoundaryPolicyName(e.HubName), KindBoundary, e.BoundaryARN(), b, QuotaManagedPolicy)
	for _, r := range []struct {
		name string
		doc  policydoc.Document
	}{
		{CrossplaneRoleName(e.HubName), Crossplane(e)},
		{ExternalSecretsRoleName(e.HubName), ExternalSecrets(e, secretARN, kmsKeyARN)},
		{FluxRoleName(e.HubName), Flux(e)},
	} {
		// the hub's IRSA roles carry their policy as a managed policy of the same name
		add(r.name, KindManaged, policy(r.name), r.doc, QuotaManagedPolicy)
		out = append(out, Usage{Role: r.name, Kind: KindRoleName, ARN: role(r.name), Size: len(r.name), Quota: QuotaRoleName})
	}
	return out
}

// CrossplaneAccountsPolicyName is the name of the hub Crossplane role's inline
// policy on the spoke accounts' roles (internal/hub makes it).
const CrossplaneAccountsPolicyName = "spoke-accounts"

// CrossplaneAccountsUsage is the hub Crossplane role's inline policy on
// the spoke accounts' roles against IAM's inline quota.
func CrossplaneAccountsUsage(e Env, accounts []string) Usage {
	d := CrossplaneAccounts(e, accounts)
	return Usage{Role: CrossplaneRoleName(e.HubName), Kind: KindInline, ARN: e.CrossplaneRoleARN() + "#" + CrossplaneAccountsPolicyName,
		Size: policydoc.Size(d), Quota: QuotaInlinePerRole, Document: d.MustJSON()}
}

// AccountUsages are the documents a spoke-account stack makes in the
// account of in (Env.InAccount), against their quotas.
func AccountUsages(in Env, externalID string) []Usage {
	role := AccountRoleName(in.HubName)
	policyARN := fmt.Sprintf("arn:%s:iam::%s:policy/%s", in.Partition, in.AccountID, role)
	var out []Usage
	add := func(r, kind, arn string, d policydoc.Document, quota int) {
		out = append(out, Usage{Role: r, Kind: kind, ARN: arn, Size: policydoc.Size(d), Quota: quota, Document: d.MustJSON()})
	}
	add(BoundaryPolicyName(in.HubName), KindBoundary, in.BoundaryARN(), SpokeBoundary(in), QuotaManagedPolicy)
	add(role, KindManaged, policyARN, Crossplane(in), QuotaManagedPolicy)
	add(role, KindTrust, in.AccountRoleARN(in.AccountID), AccountRoleTrust(in, externalID), QuotaTrustPolicy)
	out = append(out, Usage{Role: role, Kind: KindRoleName, ARN: in.AccountRoleARN(in.AccountID), Size: len(role), Quota: QuotaRoleName})
	return out
}
