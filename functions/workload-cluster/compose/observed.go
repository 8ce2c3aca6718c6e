package compose

import "strings"

// atProvider is status.atProvider.<field> of an observed object (nil when
// absent).
func atProvider(o Object, field string) any {
	st, _ := o["status"].(map[string]any)
	at, _ := st["atProvider"].(map[string]any)
	return at[field]
}

// IsReady reports whether an observed object's Ready condition is True.
func IsReady(o Object) bool {
	st, _ := o["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// oidcIssuer is the spoke cluster's OIDC issuer without https://, as the
// observed cluster reports it (status.atProvider.identity[0].oidc[0].issuer);
// empty until the cluster exists.
func (p Params) oidcIssuer() string {
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
