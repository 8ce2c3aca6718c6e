package site

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gitops-fleet/eks-fleet/components/deleteguard"
	"github.com/gitops-fleet/eks-fleet/internal/hub"
	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight/awsreader"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// DeployerRole is the role a stack is deployed as in account's stand-in
// (the caller CaptureAccount reports for a spoke account's; the suite
// runs HubPreflight as the hub account's).
func DeployerRole(account string) string {
	return "arn:aws:iam::" + account + ":role/platform-deployer"
}

// DeployerPolicy is what the deploying role may do beyond making the
// program's resources: read the account as the program's pre-flight check
// and a spoke account's delete guard do (awsreader's actions, each on
// every resource).
func DeployerPolicy() policydoc.Document {
	actions := slices.Compact(slices.Sorted(slices.Values(append(awsreader.InventoryActions(), awsreader.RemainsActions()...))))
	return policydoc.NewDocument(policydoc.Statement{Effect: "Allow", Action: actions, Resource: []string{"*"}})
}

// accountOfARN is the account of an ARN ("" when it is none).
func accountOfARN(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return ""
	}
	return parts[4]
}

// HubPreflight runs the hub's program again as role (a role of the hub's
// account), as `pulumi up -s mgmt` runs it with the stack's config as it
// is now, to its pre-flight check: with the program's own account reader
// (awsreader: the AWS SDK's requests) on the stand-in's APIs, on the
// account as it is now. It returns the program's error (the check's
// refusal naming what the fleet does not own, or the reader's), nil when
// the check passes.
func (h *Hub) HubPreflight(ctx context.Context, role string) error {
	srv := httptest.NewServer(h.Endpoints.Handler())
	defer srv.Close()
	m := mocks.New()
	m.RealKeys, m.Prior, m.CallerARN = true, h.Bootstrap.Mocks, role
	return m.Run(h.cfg, hub.Program(h.reader(srv.URL, role)))
}

// reader is the program's account reader, sending to the stand-in at url
// with credentials of role.
func (h *Hub) reader(url, role string) awsreader.Reader {
	return awsreader.Reader{Options: []func(*config.LoadOptions) error{
		config.WithBaseEndpoint(url),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(h.Endpoints.Session(role), "stand-in", "stand-in")),
	}}
}

// AccountGuard runs spoke account id's stack program again as role, as
// `pulumi destroy --run-program` runs it before it deletes anything, with
// the program's own account reader (awsreader: the AWS SDK's requests) on
// the stand-in's APIs: the pre-flight check reads the account as it is
// now, then the stack's DeleteGuard runs the check its before-delete hook
// runs (the engine and the AWS provider are not had here: the resources
// stay under the mocks, as CaptureAccount made them). It returns the
// program's error (the pre-flight check's refusal, the reader's), else
// the guard's: nil when the stack may go.
func (h *Hub) AccountGuard(ctx context.Context, id, role string) error {
	a, ok := h.spokeAccounts[id]
	if !ok {
		return fmt.Errorf("no spoke account %s in the stand-in", id)
	}
	srv := httptest.NewServer(h.Endpoints.Handler())
	defer srv.Close()
	reader := h.reader(srv.URL, role)
	var guard *deleteguard.DeleteGuard
	_, err := runAccount(filepath.Join(h.repoRoot, a.Stack), id, role, a.Config, func(*mocks.Mocks) pulumi.RunFunc {
		return func(pctx *pulumi.Context) error {
			acfg, errs := stacks.AccountFromValues(stacks.Read(pctx))
			if len(errs) > 0 {
				return stacks.Join(pctx.Stack(), errs)
			}
			acct, err := hub.BuildAccount(pctx, acfg, reader)
			if err != nil {
				return err
			}
			guard = acct.Account.Guard
			return nil
		}
	})
	if err != nil {
		return err
	}
	return guard.Check(ctx)
}
