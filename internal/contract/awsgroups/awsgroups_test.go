package awsgroups

import "testing"

func TestService(t *testing.T) {
	type want struct {
		service    string
		namespaced bool
		ok         bool
	}
	cases := map[string]struct {
		reason string
		group  string
		want   want
	}{
		"ClusterScoped":         {reason: "a service's cluster-scoped managed kinds", group: "ec2.aws.upbound.io", want: want{service: "ec2", ok: true}},
		"Namespaced":            {reason: "a service's namespaced managed kinds (Crossplane v2)", group: "eks.aws.m.upbound.io", want: want{service: "eks", namespaced: true, ok: true}},
		"ConfigGroup":           {reason: "the family's ProviderConfig group serves no managed kind", group: "aws.upbound.io"},
		"NamespacedConfigGroup": {reason: "nor does its namespaced configuration group", group: "aws.m.upbound.io"},
		"OtherFamily":           {reason: "another provider family's group", group: "ec2.gcp.upbound.io"},
		"Nested":                {reason: "a group with more labels before the suffix is not the family's", group: "x.ec2.aws.upbound.io"},
		"Crossplane":            {reason: "Crossplane's own groups", group: "apiextensions.crossplane.io"},
		"Suffix":                {reason: "the bare suffix", group: ".aws.upbound.io"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			service, namespaced, ok := Service(tc.group)
			if got := (want{service, namespaced, ok}); got != tc.want {
				t.Errorf("%s\nService(%q) = %+v, want %+v", tc.reason, tc.group, got, tc.want)
			}
			if got := Managed(tc.group); got != tc.want.ok {
				t.Errorf("%s\nManaged(%q) = %v, want %v", tc.reason, tc.group, got, tc.want.ok)
			}
			if got := ClusterScoped(tc.group); got != (tc.want.ok && !tc.want.namespaced) {
				t.Errorf("%s\nClusterScoped(%q) = %v", tc.reason, tc.group, got)
			}
		})
	}
}
