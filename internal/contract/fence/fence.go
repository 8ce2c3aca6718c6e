// Package fence names what tenancy between spokes rests on: the protected
// tag keys every spoke role carries (the hub's permissions boundary reads
// them as ${aws:PrincipalTag/...}) and every AWS resource of a spoke is
// tagged with, and the separator that follows a spoke's name in whatever
// its own Crossplane creates. The boundary (internal/iam/hubiam), the
// spoke roles (internal/iam/spokeiam), the composition function and the
// spokes' AppInfrastructure API all read these names.
package fence

const (
	// TagSpoke carries the spoke's name on every spoke role.
	TagSpoke = "eksfleet.io/spoke"
	// TagOIDC carries the spoke's OIDC issuer (without https://) on its
	// IRSA roles and on every role its Crossplane mints.
	TagOIDC = "eksfleet.io/oidc"
	// TagCluster is the tag every AWS resource of a spoke carries, value
	// <hub>-<spoke> (the composition's and the spoke controllers' tag).
	TagCluster = "eksfleet.io/cluster"
)

// ProtectedTags are the tag keys the fence reads from principals.
func ProtectedTags() []string { return []string{TagSpoke, TagCluster, TagOIDC} }

// MintedRoleSeparator follows the spoke's name in the names of what a
// spoke's own Crossplane creates (app roles, tables, queues); no DNS label
// contains it, so spoke pay's patterns never cover spoke pay-eu's.
const MintedRoleSeparator = "_"
