// Package engineconfig gives tests a stack's settings as the Pulumi engine
// hands them to the program: it runs the Pulumi SDK's own config merge
// (workspace.ValidateStackConfigAndApplyProjectConfig, what `pulumi up`
// runs before the program starts: declared types, settings the project
// requires, declared defaults) on a project file and a stack file.
package engineconfig

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/pulumi/esc"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

// StackName is the stack a Pulumi.<stack>.yaml file configures.
func StackName(stackFile string) string {
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(stackFile), "Pulumi."), ".yaml")
}

// Values are stackFile's settings after the engine's merge with project,
// keyed "namespace:key", structured values as JSON: the program's config.
// The engine's refusal (a required setting missing, a value of the wrong
// type) is returned as it is.
func Values(project *workspace.Project, stackFile string) (map[string]string, error) {
	sink := diag.DefaultSink(io.Discard, io.Discard, diag.FormatOptions{Color: "never"})
	ps, err := workspace.LoadProjectStack(sink, project, stackFile)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", stackFile, err)
	}
	if err := workspace.ValidateStackConfigAndApplyProjectConfig(context.Background(), StackName(stackFile), project, esc.Value{},
		ps.Config, config.NopEncrypter, config.NopDecrypter); err != nil {
		return nil, err
	}
	m, err := ps.Config.Decrypt(config.NopDecrypter)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stackFile, err)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k.String()] = v
	}
	return out, nil
}

// FileValues is Values with the project file at projectFile.
func FileValues(projectFile, stackFile string) (map[string]string, error) {
	project, err := workspace.LoadProject(projectFile)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", projectFile, err)
	}
	return Values(project, stackFile)
}
