// Package appinfra is the Go face of the AppInfrastructure API that every
// spoke serves (XRD and Composition in
// manifests/gitops-system/spoke-tools/app-infra): an application team claims
// a DynamoDB table, an SQS queue with a dead-letter queue and an IRSA role
// that reaches only those. Tests check the manifests against these names,
// and CheckRolePolicy/CheckTrustPolicy are the least-privilege rules the
// offline proof applies to what the Composition renders.
package appinfra

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
)

// API coordinates.
const (
	Group         = "platform.eksfleet.io"
	Version       = "v1alpha1"
	APIVersion    = Group + "/" + Version
	ClaimKind     = "AppInfrastructure"
	ClaimPlural   = "appinfrastructures"
	CompositeKind = "XAppInfrastructure"
	// CompositePlural names the XRD: <plural>.<group>.
	CompositePlural = "xappinfrastructures"
	XRDName         = CompositePlural + "." + Group
	CompositionName = CompositePlural + ".aws." + Group
	// Dir is the app-infra API's folder, relative to the manifests tree.
	Dir = "gitops-system/spoke-tools/app-infra"
)

// Labels Crossplane puts on the composite of a claim; the Composition derives
// names and the IRSA subject from them, so a team cannot name another
// namespace's ServiceAccount.
const (
	ClaimNameLabel      = "crossplane.io/claim-name"
	ClaimNamespaceLabel = "crossplane.io/claim-namespace"
)

// Variables returns the variables (internal/contract/spokeinfo's names) the
// spoke's Flux substitutes into the app-infra API and into the apps'
// overlays, from the spoke-info ConfigMap spoke-bootstrap/flux writes on
// every spoke.
func Variables() []string {
	return []string{spokeinfo.AccountID, spokeinfo.Partition, spokeinfo.Region, spokeinfo.EKSClusterName, spokeinfo.OIDCIssuer,
		spokeinfo.OIDCProviderARN, spokeinfo.AppRolePrefix, spokeinfo.BoundaryARN, spokeinfo.SpokeName}
}

// AppRolePrefix is SPOKE_APP_ROLE_PREFIX for a spoke, <hub>-spoke-<spoke>_
// (spokeiam.AppRolePrefix, which the spoke's fence admits).
func AppRolePrefix(spokeRolePrefix, spoke string) string {
	return spokeRolePrefix + spoke + fence.MintedRoleSeparator
}

// AWS names of one claim's resources (NameSeparator is the fence's
// separator, which no DNS label contains, so one namespace's names never
// cover another's):
//
//	table, queue       <EKS cluster>_<namespace>_<claim>
//	dead-letter queue  <EKS cluster>_<namespace>_<claim>_dlq
//	IAM role           <SPOKE_APP_ROLE_PREFIX><namespace>_<claim>
//
// so the app's ServiceAccount can name its role in Git.
const (
	NameSeparator    = fence.MintedRoleSeparator
	DeadLetterSuffix = NameSeparator + "dlq"
	// MaxRoleNameLength and MaxQueueNameLength are IAM's and SQS's limits
	// (DynamoDB allows 255).
	MaxRoleNameLength  = 64
	MaxQueueNameLength = 80
)

// NameBudget is how many characters a claim's namespace and name may have
// together on a spoke, so that its role name fits IAM's 64 and its
// dead-letter queue's name SQS's 80. A ValidatingAdmissionPolicy on every
// spoke (name-length-policy.yaml) enforces the same two sums.
func NameBudget(clusterName, appRolePrefix string) int {
	return min(MaxRoleNameLength-len(appRolePrefix)-len(NameSeparator),
		MaxQueueNameLength-len(clusterName)-2*len(NameSeparator)-len(DeadLetterSuffix))
}

// MaxNameLength bounds a claim's name alone; NameBudget bounds it with its
// namespace on a given spoke.
const MaxNameLength = 63

// Claim is an AppInfrastructure claim as stored in Git.
type Claim struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata is the part of ObjectMeta a claim file carries.
type Metadata struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Spec is what an application team may choose for its app's AWS resources.
type Spec struct {
	ServiceAccountName string `json:"serviceAccountName"`
	Table              Table  `json:"table"`
	Queue              *Queue `json:"queue,omitempty"`
}

// Table is the DynamoDB table's shape.
type Table struct {
	HashKey             string `json:"hashKey"`
	HashKeyType         string `json:"hashKeyType,omitempty"`
	RangeKey            string `json:"rangeKey,omitempty"`
	RangeKeyType        string `json:"rangeKeyType,omitempty"`
	BillingMode         string `json:"billingMode"`
	ReadCapacity        *int   `json:"readCapacity,omitempty"`
	WriteCapacity       *int   `json:"writeCapacity,omitempty"`
	PointInTimeRecovery *bool  `json:"pointInTimeRecovery,omitempty"`
	DeletionProtection  *bool  `json:"deletionProtection,omitempty"`
}

// Queue is the SQS queue's shape; its dead-letter queue follows it.
type Queue struct {
	VisibilityTimeoutSeconds *int `json:"visibilityTimeoutSeconds,omitempty"`
	MessageRetentionSeconds  *int `json:"messageRetentionSeconds,omitempty"`
	MaxReceiveCount          *int `json:"maxReceiveCount,omitempty"`
}

// Status is what the composite reports back to the claim.
type Status struct {
	TableName          string `json:"tableName,omitempty"`
	TableARN           string `json:"tableArn,omitempty"`
	QueueARN           string `json:"queueArn,omitempty"`
	QueueURL           string `json:"queueUrl,omitempty"`
	DeadLetterQueueARN string `json:"deadLetterQueueArn,omitempty"`
	DeadLetterQueueURL string `json:"deadLetterQueueUrl,omitempty"`
	RoleARN            string `json:"roleArn,omitempty"`
	// TableDeletionProtection is what AWS reports: true, the table is
	// kept when the claim is deleted.
	TableDeletionProtection *bool `json:"tableDeletionProtection,omitempty"`
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName checks a claim's name and namespace against the rules the
// derived AWS names need on a spoke.
func ValidateName(clusterName, appRolePrefix, namespace, name string) error {
	if !dnsLabel.MatchString(name) {
		return fmt.Errorf("metadata.name %q: must be a DNS label (lower-case letters, digits, '-')", name)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("metadata.name %q: %d characters, at most %d allowed", name, len(name), MaxNameLength)
	}
	if n, max := len(namespace)+len(name), NameBudget(clusterName, appRolePrefix); n > max {
		return fmt.Errorf("metadata.namespace %q and metadata.name %q: %d characters together, at most %d allowed on cluster %s (role %s must fit IAM's %d, queue %s SQS's %d)",
			namespace, name, n, max, clusterName, RoleName(appRolePrefix, namespace, name), MaxRoleNameLength,
			DeadLetterQueueName(clusterName, namespace, name), MaxQueueNameLength)
	}
	return nil
}

// RoleName is the IAM role the Composition makes for a claim.
func RoleName(appRolePrefix, namespace, claim string) string {
	return appRolePrefix + namespace + NameSeparator + claim
}

// RoleARN is the ARN of RoleName, as the app's ServiceAccount annotates it.
func RoleARN(partition, account, appRolePrefix, namespace, claim string) string {
	return fmt.Sprintf("arn:%s:iam::%s:role/%s", partition, account, RoleName(appRolePrefix, namespace, claim))
}

// TableName is the DynamoDB table the Composition makes for a claim on the
// EKS cluster clusterName; QueueName and DeadLetterQueueName name its queues.
func TableName(clusterName, namespace, claim string) string {
	return clusterName + NameSeparator + namespace + NameSeparator + claim
}

// QueueName is the main queue's name.
func QueueName(clusterName, namespace, claim string) string {
	return TableName(clusterName, namespace, claim)
}

// DeadLetterQueueName is the dead-letter queue's name.
func DeadLetterQueueName(clusterName, namespace, claim string) string {
	return QueueName(clusterName, namespace, claim) + DeadLetterSuffix
}

// TableActions and QueueActions are the only actions the app's role may
// have; DeadLetterQueueActions lets it inspect and drain its dead letters.
var (
	TableActions = []string{"dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem",
		"dynamodb:DeleteItem", "dynamodb:DescribeTable", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query",
		"dynamodb:UpdateItem"}
	QueueActions = []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
		"sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:SendMessage"}
	DeadLetterQueueActions = []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
		"sqs:GetQueueUrl", "sqs:ReceiveMessage"}
)

// ServiceAccountSubject is the IRSA token subject of namespace/name.
func ServiceAccountSubject(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

func joinSorted(s []string) string { return strings.Join(s, ", ") }
