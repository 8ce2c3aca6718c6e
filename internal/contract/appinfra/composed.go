package appinfra

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
)

// Composed-resource kinds (provider-upjet-aws v2, cluster-scoped).
const (
	TableAPIVersion      = "dynamodb.aws.upbound.io/v1beta2" // v1beta1 is deprecated since provider v2.6.0
	QueueAPIVersion      = "sqs.aws.upbound.io/v1beta1"
	RoleAPIVersion       = "iam.aws.upbound.io/v1beta1"
	RolePolicyAPIVersion = "iam.aws.upbound.io/v1beta1"
	ExternalNameKey      = "crossplane.io/external-name"
	// CompositionResourceNameKey names a composed resource's template.
	CompositionResourceNameKey = "crossplane.io/composition-resource-name"
)

// Template names in the Composition.
const (
	TemplateTable           = "table"
	TemplateQueue           = "queue"
	TemplateDeadLetterQueue = "dead-letter-queue"
	TemplateRole            = "role"
	TemplateRolePolicy      = "role-policy"
)

// Expect is what one claim's composed resources must be on one spoke.
type Expect struct {
	ClaimName      string
	Namespace      string // the claim's namespace
	ServiceAccount string // the claim's spec.serviceAccountName
	SpokeName      string // the spoke's name (the fence tag eksfleet.io/spoke)
	EKSClusterName string // EKS cluster name of the spoke: <hub>-<spoke>
	AppRolePrefix  string // SPOKE_APP_ROLE_PREFIX
	BoundaryARN    string
	OIDCIssuer     string // without https://
	OIDCProvider   string // the spoke's IAM OIDC provider ARN
	// Partition, Region and AccountID place the claim's queues: the
	// dead-letter queue admits exactly its own main queue as a source.
	Partition, Region, AccountID string
	// KeepTable: the claim asks for deletion protection
	// (spec.table.deletionProtection). The table is then composed with
	// deletionPolicy Orphan: kept in AWS when the claim is deleted, where
	// DynamoDB would refuse the delete and the claim's deletion would wait
	// on it for good. (The Composition also keeps it while AWS still
	// reports protection, status.tableDeletionProtection, which a render
	// from Git does not hold.)
	KeepTable bool
	// Own holds the ARNs AWS reported for the table and queues (the
	// observed resources of the render). Empty: a first render, before AWS
	// answered; then the main queue and the role policy must not exist yet.
	Own AppResources
}

func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

// CheckComposed holds the resources the app-infra Composition rendered for
// one claim to the fleet's rules: the names derived from spoke and claim,
// the permissions boundary, the trust of exactly the claim's
// ServiceAccount, and a role policy on exactly the app's own ARNs.
func CheckComposed(objs []*unstructured.Unstructured, e Expect) error {
	byTemplate := map[string]*unstructured.Unstructured{}
	var errs []error
	for _, u := range objs {
		t := u.GetAnnotations()[CompositionResourceNameKey]
		want := map[string]string{TemplateTable: TableAPIVersion + "/Table", TemplateQueue: QueueAPIVersion + "/Queue",
			TemplateDeadLetterQueue: QueueAPIVersion + "/Queue", TemplateRole: RoleAPIVersion + "/Role",
			TemplateRolePolicy: RolePolicyAPIVersion + "/RolePolicy"}[t]
		if got := u.GetAPIVersion() + "/" + u.GetKind(); want != got {
			errs = append(errs, fmt.Errorf("composed resource %q is a %s, want %s", t, got, want))
			continue
		}
		if _, dup := byTemplate[t]; dup {
			errs = append(errs, fmt.Errorf("composed resource %q appears twice", t))
		}
		byTemplate[t] = u
	}
	need := func(t string) *unstructured.Unstructured {
		u := byTemplate[t]
		if u == nil {
			errs = append(errs, fmt.Errorf("no composed %q", t))
		}
		return u
	}
	eq := func(what, got, want string) {
		if got != want {
			errs = append(errs, fmt.Errorf("%s = %q, want %q", what, got, want))
		}
	}
	if u := need(TemplateTable); u != nil {
		eq("table name", u.GetAnnotations()[ExternalNameKey], TableName(e.EKSClusterName, e.Namespace, e.ClaimName))
		want := "Delete"
		if e.KeepTable {
			want = "Orphan"
		}
		got := str(u, "spec", "deletionPolicy")
		if got == "" {
			got = "Delete" // Crossplane's default
		}
		eq(fmt.Sprintf("table deletionPolicy (deletion protection %v)", e.KeepTable), got, want)
	}
	// SQS lets any queue of the account name a queue as its dead-letter
	// queue unless that queue's redriveAllowPolicy says otherwise: the
	// dead-letter queue admits only the claim's main queue, and the main
	// queue none, so no other spoke's or team's queue redrives into them.
	if u := need(TemplateDeadLetterQueue); u != nil {
		eq("dead-letter queue name", str(u, "spec", "forProvider", "name"), DeadLetterQueueName(e.EKSClusterName, e.Namespace, e.ClaimName))
		own := ObservedARNs(e.Partition, e.Region, e.AccountID, e.EKSClusterName, e.Namespace, e.ClaimName)
		eqJSON(&errs, "dead-letter queue redriveAllowPolicy", str(u, "spec", "forProvider", "redriveAllowPolicy"),
			RedriveAllowPolicy{RedrivePermission: "byQueue", SourceQueueARNs: []string{own.QueueARN}})
	}
	if u := need(TemplateRole); u != nil {
		eq("role name", u.GetAnnotations()[ExternalNameKey], RoleName(e.AppRolePrefix, e.Namespace, e.ClaimName))
		eq("role permissions boundary", str(u, "spec", "forProvider", "permissionsBoundary"), e.BoundaryARN)
		// The spoke's fence admits iam:CreateRole only with its own values
		// of the protected tags (fence.ProtectedTags).
		for tag, want := range map[string]string{fence.TagSpoke: e.SpokeName, fence.TagCluster: e.EKSClusterName, fence.TagOIDC: e.OIDCIssuer} {
			eq("role tag "+tag, str(u, "spec", "forProvider", "tags", tag), want)
		}
		if err := CheckTrustPolicy(str(u, "spec", "forProvider", "assumeRolePolicy"), e.OIDCProvider, e.OIDCIssuer,
			e.Namespace, e.ServiceAccount); err != nil {
			errs = append(errs, err)
		}
	}
	if e.Own == (AppResources{}) {
		for _, t := range []string{TemplateQueue, TemplateRolePolicy} {
			if byTemplate[t] != nil {
				errs = append(errs, fmt.Errorf("composed %q before AWS reported the ARNs it needs", t))
			}
		}
		return errors.Join(errs...)
	}
	if u := need(TemplateQueue); u != nil {
		eq("queue name", str(u, "spec", "forProvider", "name"), QueueName(e.EKSClusterName, e.Namespace, e.ClaimName))
		eqJSON(&errs, "queue redriveAllowPolicy", str(u, "spec", "forProvider", "redriveAllowPolicy"), RedriveAllowPolicy{RedrivePermission: "denyAll"})
		var redrive struct {
			DeadLetterTargetARN string `json:"deadLetterTargetArn"`
			MaxReceiveCount     int    `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(str(u, "spec", "forProvider", "redrivePolicy")), &redrive); err != nil {
			errs = append(errs, fmt.Errorf("queue redrivePolicy: %w", err))
		}
		eq("queue redrive target", redrive.DeadLetterTargetARN, e.Own.DeadLetterQueueARN)
	}
	if u := need(TemplateRolePolicy); u != nil {
		eq("role policy's role", str(u, "spec", "forProvider", "role"), RoleName(e.AppRolePrefix, e.Namespace, e.ClaimName))
		if err := CheckRolePolicy(str(u, "spec", "forProvider", "policy"), e.Own); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RedriveAllowPolicy is an SQS queue's RedriveAllowPolicy attribute: which
// source queues may use it as their dead-letter queue.
type RedriveAllowPolicy struct {
	RedrivePermission string   `json:"redrivePermission"`
	SourceQueueARNs   []string `json:"sourceQueueArns,omitempty"`
}

// eqJSON compares a JSON attribute with want, decoded.
func eqJSON(errs *[]error, what, got string, want RedriveAllowPolicy) {
	var p RedriveAllowPolicy
	if err := json.Unmarshal([]byte(got), &p); err != nil {
		*errs = append(*errs, fmt.Errorf("%s %q: %w", what, got, err))
		return
	}
	if !reflect.DeepEqual(p, want) {
		*errs = append(*errs, fmt.Errorf("%s = %q, want %+v", what, got, want))
	}
}

// ObservedARNs returns the ARNs an account would report for a claim's table
// and queues on a spoke: what a second render feeds back as observed state.
func ObservedARNs(partition, region, account, clusterName, namespace, claim string) AppResources {
	return AppResources{
		TableARN:           fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s", partition, region, account, TableName(clusterName, namespace, claim)),
		QueueARN:           fmt.Sprintf("arn:%s:sqs:%s:%s:%s", partition, region, account, QueueName(clusterName, namespace, claim)),
		DeadLetterQueueARN: fmt.Sprintf("arn:%s:sqs:%s:%s:%s", partition, region, account, DeadLetterQueueName(clusterName, namespace, claim)),
	}
}

// WithObservedStatus returns copies of composed resources with the status
// AWS would report (ARN, URL, id), and the composite status the
// Composition's ToCompositeFieldPath patches derive from them. Feeding both
// back into a render reaches the steady state.
func WithObservedStatus(objs []*unstructured.Unstructured, own AppResources, roleARN string) ([]*unstructured.Unstructured, map[string]any) {
	var out []*unstructured.Unstructured
	xrStatus := map[string]any{}
	for _, u := range objs {
		c := u.DeepCopy()
		at := map[string]any{}
		switch c.GetAnnotations()[CompositionResourceNameKey] {
		case TemplateTable:
			at["arn"], at["id"] = own.TableARN, c.GetAnnotations()[ExternalNameKey]
			xrStatus["tableArn"], xrStatus["tableName"] = own.TableARN, at["id"]
		case TemplateQueue:
			at["arn"], at["url"] = own.QueueARN, queueURL(own.QueueARN)
			xrStatus["queueArn"], xrStatus["queueUrl"] = own.QueueARN, at["url"]
		case TemplateDeadLetterQueue:
			at["arn"], at["url"] = own.DeadLetterQueueARN, queueURL(own.DeadLetterQueueARN)
			xrStatus["deadLetterQueueArn"], xrStatus["deadLetterQueueUrl"] = own.DeadLetterQueueARN, at["url"]
		case TemplateRole:
			at["arn"] = roleARN
			xrStatus["roleArn"] = roleARN
		}
		_ = unstructured.SetNestedMap(c.Object, at, "status", "atProvider")
		out = append(out, c)
	}
	// The steady state: AWS has reported every ARN, whether or not the
	// first render composed the resource yet.
	xrStatus["tableArn"], xrStatus["queueArn"], xrStatus["deadLetterQueueArn"] = own.TableARN, own.QueueARN, own.DeadLetterQueueARN
	return out, xrStatus
}

// queueURL is the URL SQS gives the queue with arn (arn:aws:sqs:region:account:name).
func queueURL(arn string) string {
	p := strings.Split(arn, ":")
	if len(p) != 6 {
		return ""
	}
	return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", p[3], p[4], p[5])
}
