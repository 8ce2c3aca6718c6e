package spokeiam

import (
	"fmt"

	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Usages returns every IAM document and role name of the spoke with its
// size against its AWS quota (`fleet iam` prints them, the quota tests check
// them at the longest names the validators admit). It includes the longest
// role name the spoke's Crossplane may mint, MintedRoleNameBudget characters
// after AppRolePrefix.
func Usages(s Spoke) ([]hubiam.Usage, error) {
	roles, err := Roles(s)
	if err != nil {
		return nil, err
	}
	var out []hubiam.Usage
	for _, r := range roles {
		arn := RoleARN(s.Hub, s.Name, r.Key)
		out = append(out,
			hubiam.Usage{Role: r.Name, Kind: hubiam.KindRoleName, ARN: arn, Size: len(r.Name), Quota: hubiam.QuotaRoleName},
			hubiam.Usage{Role: r.Name, Kind: hubiam.KindTrust, ARN: arn, Size: policydoc.Size(r.Trust), Quota: hubiam.QuotaTrustPolicy, Document: r.Trust.MustJSON()},
		)
		if r.Inline != nil {
			out = append(out, hubiam.Usage{Role: r.Name, Kind: hubiam.KindInline, ARN: arn, Size: policydoc.Size(*r.Inline), Quota: hubiam.QuotaInlinePerRole, Document: r.Inline.MustJSON()})
		}
		for _, m := range r.ManagedPolicyARNs {
			out = append(out, hubiam.Usage{Role: r.Name, Kind: hubiam.KindManaged, ARN: m.ARN, Size: 0, Quota: hubiam.QuotaManagedPolicy})
		}
		out = append(out, hubiam.Usage{Role: r.Name, Kind: hubiam.KindBoundary, ARN: r.BoundaryARN, Size: 0, Quota: hubiam.QuotaManagedPolicy})
	}
	minted := AppRolePrefix(s.Hub, s.Name)
	out = append(out, hubiam.Usage{Role: minted + "*", Kind: hubiam.KindRoleName, ARN: "arn:" + s.Hub.Partition + ":iam::" + s.Hub.AccountID + ":role/" + minted + "*",
		Size: len(minted) + MintedRoleNameBudget, Quota: hubiam.QuotaRoleName})
	return out, nil
}

// MintedRoleNameBudget is how many characters a minted app role's name may
// have after AppRolePrefix at the longest hub and spoke names.
const MintedRoleNameBudget = 16

// CheckQuotas reports every document or name of the spoke over its AWS
// quota.
func CheckQuotas(s Spoke) error {
	us, err := Usages(s)
	if err != nil {
		return err
	}
	return hubiam.CheckUsages(us)
}

// CheckAdminTrust reports admin principals whose admin-role trust policy
// would exceed IAM's trust policy quota (QuotaTrustPolicy, 2,048 characters
// by default): claim validators call it, since the XRD alone admits ten
// ARNs of up to 2,048 characters each.
func CheckAdminTrust(adminPrincipalARNs []string) error {
	s := Spoke{AdminPrincipalARNs: adminPrincipalARNs}
	if n := policydoc.Size(s.adminTrust()); n > hubiam.QuotaTrustPolicy {
		return fmt.Errorf("the admin role's trust policy would be %d characters, IAM allows %d: name fewer or shorter principals", n, hubiam.QuotaTrustPolicy)
	}
	return nil
}
