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
