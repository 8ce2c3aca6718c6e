package compose

import (
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// atProvider is status.atProvider.<field> of an observed object (nil when
// absent).
func atProvider(o Object, field string) any {
	st, _ := o["status"].(map[string]any)
	at, _ := st["atProvider"].(map[string]any)
	return at[field]
}

// IsReady reports whether an observed object's Ready condition is True.
func IsReady(o Object) bool {
	return ConditionTrue(o, "Ready")
}

// condition returns an observed object's condition of type typ.
func condition(o any, typ string) (status, reason, message string, ok bool) {
	conds, _ := field(o, "status", "conditions").([]any)
	for _, c := range conds {
		if str(c, "type") == typ {
			return str(c, "status"), str(c, "reason"), str(c, "message"), true
		}
	}
	return "", "", "", false
}

// oidcIssuer is the spoke cluster's OIDC issuer without https://, as the
// observed cluster reports it (status.atProvider.identity[0].oidc[0].issuer);
// empty until the cluster exists. A cluster that exists never loses its
// issuer, but an observation can lack it (a status written without
// atProvider, a provider restarted mid-reconcile): then the issuer the OIDC
// provider and the IRSA roles were composed with is kept, since composing
// without them would delete them.
func (p Params) oidcIssuer() string {
	if issuer := p.reportedIssuer(); issuer != "" {
		return issuer
	}
	if url := str(field(p.Observed["oidc-provider"], "spec", "forProvider"), "url"); url != "" {
		return strings.TrimPrefix(url, "https://")
	}
	for _, key := range []string{"role-crossplane", "role-lbc"} {
		if issuer := str(field(p.Observed[key], "spec", "forProvider", "tags"), fence.TagOIDC); issuer != "" {
			return issuer
		}
	}
	return ""
}

// reportedIssuer is the issuer the observed cluster reports ("" if none).
func (p Params) reportedIssuer() string {
	first := func(v any) map[string]any {
		l, _ := v.([]any)
		if len(l) == 0 {
			return nil
		}
		m, _ := l[0].(map[string]any)
		return m
	}
	issuer, _ := first(first(atProvider(p.Observed["cluster"], "identity"))["oidc"])["issuer"].(string)
	return strings.TrimPrefix(issuer, "https://")
}

// subnetIDs are the IDs of the spoke's subnets in use that AWS has
// reported (status.atProvider.id, or the external name the provider set
// when it created the subnet): the subnets its load balancers may go into
// (spokeiam.SubnetFence). A subnet not reported yet is left out, so a load
// balancer cannot go into it until it is.
func (p Params) subnetIDs() []string {
	var ids []string
	for _, z := range AZSuffixes[:min(p.Spec.AvailabilityZones, len(AZSuffixes))] {
		for _, key := range []string{"subnet-public-" + z, "subnet-private-" + z} {
			o := p.Observed[key]
			id, _ := atProvider(o, "id").(string)
			if id == "" {
				id = str(o, "metadata", "annotations", externalName)
			}
			if spokeiam.IsSubnetID(id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}
