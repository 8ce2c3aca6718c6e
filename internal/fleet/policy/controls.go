package policy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Crossplane adds fields to the spec of every claim (its XRD's claim
// schema) that steer how the claim's composite is composed and deleted.
// They are not part of workloadcluster.Spec, so fleet never writes them;
// a hand-edited claim that sets them is checked here.

// PlatformComposition is the WorkloadCluster Composition the platform
// serves (platform-apis/workload-cluster/composition.yaml), the XRD's
// defaultCompositionRef.
const PlatformComposition = "workload-cluster-eks"

// Composite delete policies of a claim; the XRD defaults to Foreground
// (defaultCompositeDeletePolicy), so deleting a claim waits for the
// ordered teardown of everything it composed.
const (
	DeleteForeground = "Foreground"
	DeleteBackground = "Background"
)

// ClaimControlFields are the claim spec fields ClaimControls holds.
var ClaimControlFields = []string{"compositeDeletePolicy", "compositionRef", "compositionSelector",
	"compositionRevisionRef", "compositionRevisionSelector", "compositionUpdatePolicy"}

// ClaimControls are Crossplane's claim-level fields.
type ClaimControls struct {
	CompositeDeletePolicy       string       `json:"compositeDeletePolicy,omitempty"`
	CompositionRef              *NameRef     `json:"compositionRef,omitempty"`
	CompositionSelector         *LabelSelect `json:"compositionSelector,omitempty"`
	CompositionRevisionRef      *NameRef     `json:"compositionRevisionRef,omitempty"`
	CompositionRevisionSelector *LabelSelect `json:"compositionRevisionSelector,omitempty"`
	CompositionUpdatePolicy     string       `json:"compositionUpdatePolicy,omitempty"`
}

// NameRef refers to an object by name.
type NameRef struct {
	Name string `json:"name"`
}

// LabelSelect selects objects by labels.
type LabelSelect struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// SplitClaimControls removes the ClaimControlFields from a claim's spec
// (modifying it) and returns them; set reports whether any was present.
// A value of the wrong shape is an error naming the field.
func SplitClaimControls(spec map[string]any) (c ClaimControls, set bool, err error) {
	picked := map[string]any{}
	for _, f := range ClaimControlFields {
		if v, ok := spec[f]; ok {
			picked[f] = v
			delete(spec, f)
		}
	}
	if len(picked) == 0 {
		return c, false, nil
	}
	b, err := json.Marshal(picked)
	if err != nil {
		return c, true, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, true, fmt.Errorf("spec (compositeDeletePolicy, composition*): %w", err)
	}
	return c, true, nil
}

// CheckClaimControls returns the rules Crossplane's claim-level fields of
// the claim name break: a Background delete (Crossplane would delete the
// composite without waiting for the ordered teardown, so the spoke's AWS
// resources could outlive it) and any Composition or revision other than
// the platform's.
func CheckClaimControls(name string, c ClaimControls) []Violation {
	var out []Violation
	add := func(fam, rule, field, msg string, a ...any) {
		out = append(out, Violation{Family: fam, Rule: rule, Cluster: name, Field: field, Message: fmt.Sprintf(msg, a...)})
	}
	switch c.CompositeDeletePolicy {
	case "", DeleteForeground:
	case DeleteBackground:
		add(FamilyPolicy, "delete-policy", "spec.compositeDeletePolicy",
			"%q is not allowed: deleting the claim would not wait for the spoke's ordered teardown (AWS resources could be left behind); allowed %s, or leave it out (the XRD's default)",
			c.CompositeDeletePolicy, DeleteForeground)
	default:
		add(FamilyAPI, "delete-policy", "spec.compositeDeletePolicy", "%q: allowed %s (the fleet policy refuses %s)",
			c.CompositeDeletePolicy, DeleteForeground, DeleteBackground)
	}
	if r := c.CompositionRef; r != nil && r.Name != PlatformComposition {
		add(FamilyPolicy, "composition", "spec.compositionRef.name", "%q is not allowed: allowed %s, or leave compositionRef out (the XRD's default)",
			r.Name, PlatformComposition)
	}
	if c.CompositionSelector != nil {
		add(FamilyPolicy, "composition", "spec.compositionSelector",
			"may select a Composition other than the platform's: leave it out, or set compositionRef.name %s", PlatformComposition)
	}
	if r := c.CompositionRevisionRef; r != nil && !strings.HasPrefix(r.Name, PlatformComposition+"-") {
		add(FamilyPolicy, "composition", "spec.compositionRevisionRef.name", "%q is not a revision of the platform's Composition: allowed %s-<hash>, or leave it out",
			r.Name, PlatformComposition)
	}
	if c.CompositionRevisionSelector != nil {
		add(FamilyPolicy, "composition", "spec.compositionRevisionSelector",
			"may select a revision of a Composition other than the platform's: leave it out, or set compositionRef.name %s", PlatformComposition)
	}
	switch c.CompositionUpdatePolicy {
	case "", "Automatic", "Manual":
	default:
		add(FamilyAPI, "composition", "spec.compositionUpdatePolicy", "%q: allowed Automatic, Manual", c.CompositionUpdatePolicy)
	}
	return out
}
