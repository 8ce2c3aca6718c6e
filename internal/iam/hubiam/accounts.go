package hubiam

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// Spoke accounts. A spoke may live in an AWS account of its own: the
// account boundary is then the fence between teams, and the tag fence only
// separates the spokes that share that account. Each spoke account holds
// what a stack of this program's spoke-account kind makes there
// (components/spokeaccount):
//
//   - the spokes' permissions boundary, SpokeBoundary of the account, under
//     the same name as in the hub's account;
//   - the role the hub's Crossplane assumes (AccountRoleName), trusted by
//     the hub's Crossplane role alone and only with the account's external
//     ID (AccountRoleTrust), holding the hub Crossplane's fence for that
//     account (Crossplane of the account's Env);
//
// and the hub's Crossplane role may assume exactly the account roles of the
// accounts its stack lists (CrossplaneAccounts), nothing else.

// AccountRoleName is the role, and its managed policy, the hub's Crossplane
// assumes in a spoke account. Not under SpokeRolePrefix: no spoke role, and
// no role a spoke mints, can be or become it.
func AccountRoleName(hub string) string { return hub + "-crossplane-account" }

// AccountIDRE is the form of an AWS account ID.
var AccountIDRE = regexp.MustCompile(`^[0-9]{12}$`)

// externalIDRE is what STS accepts as an external ID (AssumeRole
// ExternalId: 2 to 1,224 characters of [\w+=,.@:/-]).
// (Go's regexp repeats at most 1,000 times, so the length is counted.)
var externalIDRE = regexp.MustCompile(`^[\w+=,.@:/-]+$`)

// External ID lengths STS accepts.
const (
	MinExternalIDLength = 2
	MaxExternalIDLength = 1224
)

// CheckExternalID reports an external ID STS would refuse.
func CheckExternalID(id string) error {
	if len(id) < MinExternalIDLength || len(id) > MaxExternalIDLength || !externalIDRE.MatchString(id) {
		return fmt.Errorf("external ID %q: want 2 to 1224 characters of letters, digits and _+=,.@:/- (what STS AssumeRole accepts)", id)
	}
	return nil
}

// InAccount is e for the documents of spoke account id: every resource the
// hub's Crossplane makes there, and every spoke role, is in that account;
// the hub's own roles (its Crossplane's and its Flux's) stay in the hub's.
func (e Env) InAccount(id string) Env {
	e.HubAccountID = e.HubAccount()
	e.AccountID = id
	return e
}

// HubAccount is the account of the hub's own roles: HubAccountID, or
// AccountID for the hub's own account.
func (e Env) HubAccount() string {
	if e.HubAccountID != "" {
		return e.HubAccountID
	}
	return e.AccountID
}

// hubRoleARN is the ARN of one of the hub's own roles.
func (e Env) hubRoleARN(name string) string {
	return fmt.Sprintf("arn:%s:iam::%s:role/%s", e.Partition, e.HubAccount(), name)
}

// CrossplaneRoleARN is the hub Crossplane role's ARN.
func (e Env) CrossplaneRoleARN() string { return e.hubRoleARN(CrossplaneRoleName(e.HubName)) }

// FluxRoleARN is the hub Flux role's ARN: every spoke's access entry, in
// whatever account, names it.
func (e Env) FluxRoleARN() string { return e.hubRoleARN(FluxRoleName(e.HubName)) }

// AccountRoleARN is the account role of spoke account id.
func (e Env) AccountRoleARN(id string) string {
	return fmt.Sprintf("arn:%s:iam::%s:role/%s", e.Partition, id, AccountRoleName(e.HubName))
}

// CrossplaneAccounts is the hub Crossplane role's second policy: assume
// the account role of each listed spoke account, and no other role. Empty
// for none (the role then carries no such policy).
func CrossplaneAccounts(e Env, accounts []string) policydoc.Document {
	if len(accounts) == 0 {
		return policydoc.Document{}
	}
	arns := make([]string, 0, len(accounts))
	for _, id := range slices.Sorted(slices.Values(accounts)) {
		arns = append(arns, e.AccountRoleARN(id))
	}
	return policydoc.NewDocument(policydoc.Statement{
		Sid: "SpokeAccounts", Effect: policydoc.Allow, Action: []string{"sts:AssumeRole"}, Resource: arns,
	})
}

// AccountRoleTrust is the account role's trust policy in the account of e
// (InAccount): the hub's Crossplane role, and only with externalID (the
// confused-deputy guard AWS documents for roles a third party assumes).
func AccountRoleTrust(e Env, externalID string) policydoc.Document {
	return policydoc.NewDocument(policydoc.Statement{
		Sid: "HubCrossplane", Effect: policydoc.Allow,
		Principal: map[string]any{"AWS": e.CrossplaneRoleARN()},
		Action:    []string{"sts:AssumeRole"},
		Condition: map[string]map[string]any{"StringEquals": {"sts:ExternalId": externalID}},
	})
}
