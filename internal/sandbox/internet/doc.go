// Package internet stands in for the internet the sandbox's processes
// reach: an HTTPS proxy with its own CA (Internet) that answers each
// planned host from a local handler and records any other host; OCI
// registries (Registry) and Helm chart repositories (ChartRepo, Chart) it
// serves; and the Crossplane package images pushed there, built from the
// pinned upstream modules and this repository's function
// (ProviderPackage, FunctionPackage, WorkloadClusterPackage). Which hosts a
// hub reaches, with what, is the hub's (package site).
package internet
