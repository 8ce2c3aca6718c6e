// Package register replaces External Secrets' pkg/provider/register in the
// suite's build (binaries.ExternalSecrets): it registers the providers the
// fleet's secret stores name (the hub's ClusterSecretStore reads AWS
// Secrets Manager) and no other, so the build does not compile some forty
// providers' SDKs the fleet never configures. Upstream's register.go at the
// pinned release imports every provider; External Secrets 1.1.0 made the
// same cut an upstream build option (a build tag per provider,
// external-secrets#5578, `make build PROVIDER=aws`). A store naming any
// other provider fails as upstream's slim build fails it: no registered
// store backend.
package register

import (
	_ "github.com/external-secrets/external-secrets/pkg/provider/aws"
)
