// Command pulumi-resource-kubernetes is the Kubernetes provider plugin as
// upstream's cmd/pulumi-resource-kubernetes builds it (main.go and
// generate.go at the pinned commit): the provider served with its Pulumi
// schema, whose version is the plugin's, and its Terraform mapping. Its
// module's cmd directory holds schema.json and terraform-mapping.json, from
// which upstream's `go generate` writes the embedded files;
// binaries.PulumiKubernetes copies them here before the build.
package main

import (
	_ "embed"
	"encoding/json"
	"log"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema.json
var schema []byte

//go:embed terraform-mapping.json
var terraformMapping []byte

func main() {
	// generate.go: the schema's version is the plugin's.
	var spec map[string]any
	if err := json.Unmarshal(schema, &spec); err != nil {
		log.Fatalf("embedded schema: %v", err)
	}
	spec["version"] = version.Version
	versioned, err := json.Marshal(spec)
	if err != nil {
		log.Fatalf("embedded schema: %v", err)
	}
	provider.Serve("kubernetes", version.Version, versioned, terraformMapping)
}
