package compose

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ResourcesSyncedCondition is the XR (and claim) condition type that says
// whether every composed resource applied its desired state. Crossplane
// derives the XR's Ready from the composed resources' Ready only, so a
// change the provider refuses (upjet refuses an update AWS would replace
// the resource for, for example a node group's instance types) would leave
// the resource Ready with the old value and nothing on the claim.
const ResourcesSyncedCondition = "ResourcesSynced"

// waitingForReferences starts the Synced message of a managed resource
// whose references do not resolve yet (crossplane-runtime v2
// pkg/reconciler/managed/api.go errResolveReferences).
const waitingForReferences = "cannot resolve references"

// syncedPart reports, as a notice, every observed composed resource whose
// Synced condition is False, with its reason and message, so a refused
// change shows on the claim (condition and warning event) instead of being
// silently ignored.
func syncedPart(p Params, c *Composed) error {
	if len(p.Observed) == 0 {
		return nil
	}
	var failing []string
	warn := false
	for _, key := range slices.Sorted(maps.Keys(p.Observed)) {
		o := p.Observed[key]
		status, reason, msg, ok := condition(o, "Synced")
		if !ok || status != "False" {
			continue
		}
		failing = append(failing, fmt.Sprintf("%s (%s %s): %s: %s", key, str(o, "kind"), str(o, "metadata", "name"), reason, msg))
		// A reference not resolvable yet is how every spoke's creation
		// waits (a node group for its ACTIVE cluster): on the condition,
		// but no warning event.
		warn = warn || !strings.HasPrefix(msg, waitingForReferences)
	}
	if len(failing) == 0 {
		c.Notices = append(c.Notices, Notice{Type: ResourcesSyncedCondition, Status: true, Reason: "Synced"})
		return nil
	}
	c.Notices = append(c.Notices, Notice{Type: ResourcesSyncedCondition, Warn: warn, Reason: "ComposedResourceNotSynced",
		Message: "composed resources not synced, their desired state is not applied: " + strings.Join(failing, "; ")})
	return nil
}
