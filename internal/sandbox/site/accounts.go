package site

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/stacks"
)

// PreparedAccounts are the spoke accounts of the fleet policy in
// repoRoot's manifests/ that one of repoRoot's spoke-account stacks
// (Pulumi.*.yaml with eks-fleet:stackKind spoke-account) prepares as the
// policy's entry says: the entry's role is that stack's account role and
// its external ID the stack's. Each other account of the policy is named
// in missing, with why: a claim naming it is refused by STS on the hub, as
// on AWS for an account never prepared.
func PreparedAccounts(repoRoot string) (prepared []SpokeAccount, missing []string, err error) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "manifests", filepath.FromSlash(policy.RelPath)))
	if err != nil {
		return nil, nil, err
	}
	pol, err := policy.Parse(b, policy.RelPath)
	if err != nil {
		return nil, nil, err
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "Pulumi.*.yaml"))
	if err != nil {
		return nil, nil, err
	}
	type stack struct{ file, role, externalID string }
	var accountStacks []stack
	for _, f := range files {
		cfg, err := StackConfig(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		if cfg[stacks.FullKey(stacks.StackKindKey)] != stacks.KindSpokeAccount {
			continue
		}
		accountStacks = append(accountStacks, stack{file: filepath.Base(f),
			role: hubiam.AccountRoleName(cfg[stacks.FullKey(stacks.HubNameKey)]), externalID: cfg[stacks.FullKey(stacks.ExternalIDKey)]})
	}
	for _, a := range pol.Accounts {
		arn := strings.SplitN(a.RoleARN, ":", 6)
		i := slices.IndexFunc(accountStacks, func(s stack) bool {
			return len(arn) == 6 && arn[4] == a.ID && arn[5] == "role/"+s.role && a.ExternalID == s.externalID
		})
		if i < 0 {
			missing = append(missing, fmt.Sprintf("account %s of the fleet policy: no spoke-account stack here prepares its role %s with its external ID", a.ID, a.RoleARN))
			continue
		}
		prepared = append(prepared, SpokeAccount{ID: a.ID, Stack: accountStacks[i].file})
	}
	return prepared, missing, nil
}
