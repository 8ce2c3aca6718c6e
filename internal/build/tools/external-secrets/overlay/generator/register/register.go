// Package register replaces External Secrets' pkg/generator/register in the
// suite's build (binaries.ExternalSecrets): the fleet's manifests use no
// generator (no generatorRef, no generator kind), so none is registered and
// their SDKs (ACR, GCR, ECR, Grafana, Quay, Vault, ...) are not compiled.
// See ../../provider/register for why the cut is upstream's own.
package register
