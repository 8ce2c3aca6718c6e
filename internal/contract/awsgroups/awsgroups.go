// Package awsgroups names the API groups of the AWS provider family
// (provider-upjet-aws): each service's managed kinds are served
// cluster-scoped in <service>.aws.upbound.io and namespaced in
// <service>.aws.m.upbound.io (Crossplane v2), the family's ProviderConfig
// in aws.upbound.io (and aws.m.upbound.io). The function, the stand-in AWS,
// the proofs and fleet read them from here.
package awsgroups

import "strings"

const (
	// Suffix ends the group of every cluster-scoped managed kind.
	Suffix = ".aws.upbound.io"
	// NamespacedSuffix ends the group of every namespaced managed kind.
	NamespacedSuffix = ".aws.m.upbound.io"
	// ConfigGroup serves the cluster-scoped kinds' ProviderConfig.
	ConfigGroup = "aws.upbound.io"
)

// Service is the AWS service whose managed kinds group serves ("ec2" of
// ec2.aws.upbound.io and of ec2.aws.m.upbound.io); ok is false for any
// other group, the family's configuration groups included.
func Service(group string) (service string, namespaced, ok bool) {
	if s, found := strings.CutSuffix(group, Suffix); found && s != "" && !strings.Contains(s, ".") {
		return s, false, true
	}
	if s, found := strings.CutSuffix(group, NamespacedSuffix); found && s != "" && !strings.Contains(s, ".") {
		return s, true, true
	}
	return "", false, false
}

// Managed is whether group serves managed kinds of the family, either
// scope.
func Managed(group string) bool {
	_, _, ok := Service(group)
	return ok
}

// ClusterScoped is whether group serves the family's cluster-scoped
// managed kinds.
func ClusterScoped(group string) bool {
	_, namespaced, ok := Service(group)
	return ok && !namespaced
}
