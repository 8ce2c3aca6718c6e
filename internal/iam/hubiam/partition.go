package hubiam

import (
	"fmt"
	"slices"
	"strings"
)

// SupportedPartitions are the AWS partitions the documents are right for:
// their service principals (ec2.amazonaws.com, eks.amazonaws.com) and the
// kms:ViaService endpoint secretsmanager.<region>.amazonaws.com are the
// same in aws and aws-us-gov. aws-cn uses .amazonaws.com.cn for both, and
// the ISO partitions other suffixes again, so those are refused rather than
// made to fail halfway through `pulumi up`.
var SupportedPartitions = []string{"aws", "aws-us-gov"}

// PartitionOf is the partition of an AWS region name.
func PartitionOf(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	case strings.HasPrefix(region, "us-iso-"):
		return "aws-iso"
	case strings.HasPrefix(region, "us-isob-"):
		return "aws-iso-b"
	case strings.HasPrefix(region, "eu-isoe-"):
		return "aws-iso-e"
	case strings.HasPrefix(region, "us-isof-"):
		return "aws-iso-f"
	}
	return "aws"
}

// CheckPartition refuses a region or partition the documents are not right
// for, naming the allowed partitions.
func CheckPartition(region, partition string) error {
	if p := PartitionOf(region); !slices.Contains(SupportedPartitions, p) {
		return fmt.Errorf("region %s is in partition %s; supported: %s (%s uses other service principal and endpoint suffixes)",
			region, p, strings.Join(SupportedPartitions, ", "), p)
	}
	if partition != "" && partition != PartitionOf(region) {
		return fmt.Errorf("partition %s does not match region %s (partition %s)", partition, region, PartitionOf(region))
	}
	return nil
}
