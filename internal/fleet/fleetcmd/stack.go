package fleetcmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) stackCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "stack",
		Short: "Check the Pulumi program's stack configuration",
		Args:  maxArgs(0, ""),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(&cobra.Command{
		Use:   "validate FILE",
		Short: "Validate a Pulumi.<stack>.yaml offline, as 'pulumi up' would",
		Long: `Runs the program's own stack validation (package stacks) on a stack file, without
Pulumi or AWS: every setting's form and range, known settings only. Encrypted
(secure:) values count as set but cannot be checked.`,
		Example: `  fleet stack validate Pulumi.dev.yaml`,
		Args:    exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.deps.Stacks == nil {
				return &exitError{code: ExitFailed, err: errors.New("stack validate: the stack validator (package stacks) is not available in this build")}
			}
			if err := a.deps.Stacks.ValidateStackFile(args[0]); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintf(a.stdout, "%s: OK\n", args[0])
			return nil
		},
	})
	return c
}
