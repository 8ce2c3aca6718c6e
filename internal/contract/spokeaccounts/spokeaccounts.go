// Package spokeaccounts is what the fleet knows of an AWS account, other
// than the hub's, that holds spokes: the entry a spoke-account stack
// outputs (components/spokeaccount) and the fleet policy lists. The names
// of what the account holds are hubiam's (AccountRoleName,
// BoundaryPolicyName).
package spokeaccounts

import "strings"

// Account is one spoke account as the fleet policy lists it: exactly the
// spoke-account stack's output fleetPolicyAccount.
type Account struct {
	// ID is the account's ID (12 digits).
	ID string `json:"id"`
	// RoleARN is the role the hub's Crossplane assumes there.
	RoleARN string `json:"roleArn"`
	// ExternalID is what the hub's Crossplane presents when it does.
	ExternalID string `json:"externalId"`
}

// ProviderConfigName is the hub's ProviderConfig (aws.upbound.io) for a
// spoke account: the hub Crossplane's IRSA credentials, then the account's
// role (assumeRoleChain, with the external ID). The function points every
// AWS managed resource of a spoke in that account at it.
func ProviderConfigName(id string) string { return providerConfigPrefix + id }

const providerConfigPrefix = "account-"

// ProviderConfigAccount is the spoke account whose ProviderConfig name is
// (ProviderConfigName's inverse); false for any other name.
func ProviderConfigAccount(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, providerConfigPrefix)
	return id, ok && id != ""
}
