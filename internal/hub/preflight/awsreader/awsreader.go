// Package awsreader reads an account's preflight.Inventory with the AWS
// SDK for Go v2: IAM's OIDC providers of EKS issuers with their tags, and
// EC2's launch templates in every region enabled for the account. Its
// credentials come from the SDK's default chain (environment, shared
// config, SSO, instance role) with the stack's aws:profile, as the AWS
// provider's do; it refuses to read when they reach another account than
// the provider's (an aws:assumeRole the SDK does not see, for one).
//
// The calls are read-only: sts:GetCallerIdentity,
// iam:ListOpenIDConnectProviders, iam:ListOpenIDConnectProviderTags,
// ec2:DescribeRegions and ec2:DescribeLaunchTemplates.
package awsreader

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"golang.org/x/sync/errgroup"

	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
)

// Actions are the IAM actions Read calls: the deploying identity needs
// them beside what the program creates.
func Actions() []string {
	return []string{
		"ec2:DescribeLaunchTemplates",
		"ec2:DescribeRegions",
		"iam:ListOpenIDConnectProviderTags",
		"iam:ListOpenIDConnectProviders",
		"sts:GetCallerIdentity",
	}
}

// Reader is a preflight.Reader on the AWS APIs.
type Reader struct {
	// Options are applied after the defaults and the query's region and
	// profile (tests point the SDK at an emulator's endpoint with them).
	Options []func(*config.LoadOptions) error
}

// regionParallelism bounds the regions read at once.
const regionParallelism = 8

// Read implements preflight.Reader.
func (r Reader) Read(ctx context.Context, q preflight.Query) (preflight.Inventory, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(q.Region)}
	if q.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(q.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(opts, r.Options...)...)
	if err != nil {
		return preflight.Inventory{}, fmt.Errorf("load the AWS SDK's configuration: %w", err)
	}
	id, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return preflight.Inventory{}, fmt.Errorf("sts:GetCallerIdentity: %w", err)
	}
	if got := aws.ToString(id.Account); got != q.AccountID {
		return preflight.Inventory{}, fmt.Errorf("the AWS SDK's credentials (%s) reach account %s, the AWS provider deploys into %s: give both the same credentials (AWS_PROFILE or aws:profile; an aws:assumeRole is the provider's alone)", aws.ToString(id.Arn), got, q.AccountID)
	}
	var inv preflight.Inventory
	if inv.OIDCProviders, err = oidcProviders(ctx, iam.NewFromConfig(cfg)); err != nil {
		return preflight.Inventory{}, err
	}
	if inv.LaunchTemplates, err = launchTemplates(ctx, cfg); err != nil {
		return preflight.Inventory{}, err
	}
	return inv, nil
}

// oidcProviders lists the EKS issuers' providers with their tags.
func oidcProviders(ctx context.Context, c *iam.Client) ([]preflight.OIDCProvider, error) {
	list, err := c.ListOpenIDConnectProviders(ctx, &iam.ListOpenIDConnectProvidersInput{})
	if err != nil {
		return nil, fmt.Errorf("iam:ListOpenIDConnectProviders: %w", err)
	}
	var out []preflight.OIDCProvider
	for _, e := range list.OpenIDConnectProviderList {
		arn := aws.ToString(e.Arn)
		if !preflight.IsEKSProvider(arn) {
			continue
		}
		tags := map[string]string{}
		p := iam.NewListOpenIDConnectProviderTagsPaginator(c, &iam.ListOpenIDConnectProviderTagsInput{OpenIDConnectProviderArn: e.Arn})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("iam:ListOpenIDConnectProviderTags %s: %w", arn, err)
			}
			addIAMTags(tags, page.Tags)
		}
		out = append(out, preflight.OIDCProvider{ARN: arn, Tags: tags})
	}
	return out, nil
}

func addIAMTags(into map[string]string, tags []iamtypes.Tag) {
	for _, t := range tags {
		into[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
}

// launchTemplates lists the templates of every region enabled for the
// account (ec2:DescribeRegions without AllRegions), a few regions at once.
func launchTemplates(ctx context.Context, cfg aws.Config) ([]preflight.LaunchTemplate, error) {
	regions, err := ec2.NewFromConfig(cfg).DescribeRegions(ctx, &ec2.DescribeRegionsInput{})
	if err != nil {
		return nil, fmt.Errorf("ec2:DescribeRegions: %w", err)
	}
	var (
		mu  sync.Mutex
		out []preflight.LaunchTemplate
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(regionParallelism)
	for _, reg := range regions.Regions {
		region := aws.ToString(reg.RegionName)
		g.Go(func() error {
			c := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region })
			p := ec2.NewDescribeLaunchTemplatesPaginator(c, &ec2.DescribeLaunchTemplatesInput{})
			for p.HasMorePages() {
				page, err := p.NextPage(gctx)
				if err != nil {
					return fmt.Errorf("ec2:DescribeLaunchTemplates in %s: %w", region, err)
				}
				mu.Lock()
				for _, t := range page.LaunchTemplates {
					out = append(out, preflight.LaunchTemplate{
						Region: region, ID: aws.ToString(t.LaunchTemplateId), Name: aws.ToString(t.LaunchTemplateName), Tags: ec2Tags(t.Tags),
					})
				}
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b preflight.LaunchTemplate) int {
		if a.Region != b.Region {
			return strings.Compare(a.Region, b.Region)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func ec2Tags(tags []ec2types.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}
