// Package awsreader reads an account's preflight.Inventory with the AWS
// SDK for Go v2: IAM's OIDC providers of EKS issuers with their tags, and
// EC2's launch templates in every region enabled for the account. Its
// credentials come from the SDK's default chain (environment, shared
// config, SSO, instance role) with the stack's aws:profile, as the AWS
// provider's do; it refuses to read when they reach another account than
// the provider's (an aws:assumeRole the SDK does not see, for one).
//
// Every call is a read: InventoryActions and RemainsActions list them.
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
	"github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
	taggingtypes "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"golang.org/x/sync/errgroup"

	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
)

// InventoryActions are the IAM actions Read calls (at every pulumi up):
// the deploying identity needs them beside what the program creates.
func InventoryActions() []string {
	return []string{
		"ec2:DescribeLaunchTemplates",
		"ec2:DescribeRegions",
		"iam:ListOpenIDConnectProviderTags",
		"iam:ListOpenIDConnectProviders",
		"sts:GetCallerIdentity",
	}
}

// RemainsActions are the IAM actions Remains calls (before a spoke
// account's stack is destroyed).
func RemainsActions() []string {
	return []string{
		"ec2:DescribeRegions",
		"iam:ListOpenIDConnectProviderTags",
		"iam:ListOpenIDConnectProviders",
		"iam:ListRoles",
		"sts:GetCallerIdentity",
		"tag:GetResources",
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

// config loads the SDK's configuration for q, and refuses when its
// credentials reach another account than q's.
func (r Reader) config(ctx context.Context, q preflight.Query) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{config.WithRegion(q.Region)}
	if q.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(q.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(opts, r.Options...)...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load the AWS SDK's configuration: %w", err)
	}
	id, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return aws.Config{}, fmt.Errorf("sts:GetCallerIdentity: %w", err)
	}
	if got := aws.ToString(id.Account); got != q.AccountID {
		return aws.Config{}, fmt.Errorf("the AWS SDK's credentials (%s) reach account %s, the AWS provider deploys into %s: give both the same credentials (AWS_PROFILE or aws:profile; an aws:assumeRole is the provider's alone)", aws.ToString(id.Arn), got, q.AccountID)
	}
	return cfg, nil
}

// Read implements preflight.Reader.
func (r Reader) Read(ctx context.Context, q preflight.Query) (preflight.Inventory, error) {
	cfg, err := r.config(ctx, q)
	if err != nil {
		return preflight.Inventory{}, err
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

// eachRegion runs read for every region enabled for the account
// (ec2:DescribeRegions without AllRegions: the EC2 API reference lists
// the regions disabled for the account only with AllRegions), a few
// regions at once, with the output collected under a lock.
func eachRegion(ctx context.Context, cfg aws.Config, read func(ctx context.Context, region string, add func(func())) error) error {
	regions, err := ec2.NewFromConfig(cfg).DescribeRegions(ctx, &ec2.DescribeRegionsInput{})
	if err != nil {
		return fmt.Errorf("ec2:DescribeRegions: %w", err)
	}
	var mu sync.Mutex
	add := func(f func()) { mu.Lock(); defer mu.Unlock(); f() }
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(regionParallelism)
	for _, reg := range regions.Regions {
		region := aws.ToString(reg.RegionName)
		g.Go(func() error { return read(gctx, region, add) })
	}
	return g.Wait()
}

// launchTemplates lists the templates of every region enabled for the
// account.
func launchTemplates(ctx context.Context, cfg aws.Config) ([]preflight.LaunchTemplate, error) {
	var out []preflight.LaunchTemplate
	err := eachRegion(ctx, cfg, func(ctx context.Context, region string, add func(func())) error {
		c := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region })
		p := ec2.NewDescribeLaunchTemplatesPaginator(c, &ec2.DescribeLaunchTemplatesInput{})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("ec2:DescribeLaunchTemplates in %s: %w", region, err)
			}
			add(func() {
				for _, t := range page.LaunchTemplates {
					out = append(out, preflight.LaunchTemplate{
						Region: region, ID: aws.ToString(t.LaunchTemplateId), Name: aws.ToString(t.LaunchTemplateName), Tags: ec2Tags(t.Tags),
					})
				}
			})
		}
		return nil
	})
	if err != nil {
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

// Remains implements preflight.Reader: the Resource Groups Tagging API's
// resources carrying key (any value) in every region enabled for the
// account, IAM's roles named rolePrefix*, and the EKS issuers' OIDC
// providers carrying key. The Tagging API's GetResources does not list IAM
// users and roles (its API reference, "Services that support the Resource
// Groups Tagging API"), and does not say that it lists OIDC providers, an
// IAM resource without a region: IAM's own list calls find both.
func (r Reader) Remains(ctx context.Context, q preflight.Query, key, rolePrefix string) ([]preflight.SpokeResource, error) {
	cfg, err := r.config(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []preflight.SpokeResource
	err = eachRegion(ctx, cfg, func(ctx context.Context, region string, add func(func())) error {
		c := resourcegroupstaggingapi.NewFromConfig(cfg, func(o *resourcegroupstaggingapi.Options) { o.Region = region })
		p := resourcegroupstaggingapi.NewGetResourcesPaginator(c, &resourcegroupstaggingapi.GetResourcesInput{
			TagFilters: []taggingtypes.TagFilter{{Key: aws.String(key)}},
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("tag:GetResources in %s: %w", region, err)
			}
			add(func() {
				for _, m := range page.ResourceTagMappingList {
					for _, t := range m.Tags {
						if aws.ToString(t.Key) == key {
							out = append(out, preflight.SpokeResource{Cluster: aws.ToString(t.Value), ARN: aws.ToString(m.ResourceARN)})
						}
					}
				}
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p := iam.NewListRolesPaginator(iam.NewFromConfig(cfg), &iam.ListRolesInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("iam:ListRoles: %w", err)
		}
		for _, role := range page.Roles {
			if strings.HasPrefix(aws.ToString(role.RoleName), rolePrefix) {
				out = append(out, preflight.SpokeResource{ARN: aws.ToString(role.Arn)})
			}
		}
	}
	providers, err := oidcProviders(ctx, iam.NewFromConfig(cfg))
	if err != nil {
		return nil, err
	}
	for _, p := range providers {
		if v, ok := p.Tags[key]; ok {
			out = append(out, preflight.SpokeResource{Cluster: v, ARN: p.ARN})
		}
	}
	return out, nil
}
