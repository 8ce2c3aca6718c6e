package aws

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ForceNew are the arguments of the Terraform types the fleet composes
// that AWS cannot change in place: the update APIs do not take them (for
// example EKS UpdateNodegroupConfig takes labels, taints, scalingConfig,
// updateConfig and nodeRepairConfig, UpdateNodegroupVersion the version
// and launch template; a node group's instance types, AMI type, capacity
// type, subnets and role are fixed at CreateNodegroup), so Terraform marks
// them ForceNew and upjet refuses the update. Keys are JSON argument names
// of spec.forProvider; "block.field" is one field of a singleton block
// (Terraform's block.0.field). region is ForceNew for every regional type.
//
// A node group's launch template id and name are ForceNew, its version is
// not (terraform-provider-aws internal/service/eks/node_group.go,
// resourceNodeGroup's launch_template schema: id and name ForceNew, version
// Required only; resourceNodeGroupUpdate sends a new version with
// UpdateNodegroupVersion): EKS takes a launch template only at
// CreateNodegroup, so a node group made without one cannot be given one.
var ForceNew = map[string][]string{
	"aws_eks_node_group":                {"amiType", "capacityType", "clusterName", "diskSize", "instanceTypes", "nodeRoleArn", "remoteAccess", "subnetIds", "launchTemplate.id", "launchTemplate.name"},
	"aws_eks_cluster":                   {"roleArn", "bootstrapSelfManagedAddons"},
	"aws_eks_access_entry":              {"clusterName", "principalArn", "type"},
	"aws_eks_access_policy_association": {"clusterName", "principalArn", "policyArn"},
	"aws_eks_addon":                     {"addonName", "clusterName"},
	"aws_vpc":                           {"cidrBlock"},
	"aws_subnet":                        {"availabilityZone", "availabilityZoneId", "cidrBlock", "vpcId"},
	"aws_nat_gateway":                   {"allocationId", "connectivityType", "subnetId"},
	"aws_route":                         {"destinationCidrBlock", "routeTableId"},
	"aws_route_table":                   {"vpcId"},
	"aws_route_table_association":       {"gatewayId", "subnetId"},
	"aws_internet_gateway":              {},
	"aws_iam_role":                      {"path"},
	"aws_iam_role_policy":               {"role"},
	"aws_iam_role_policy_attachment":    {"policyArn", "role"},
	"aws_iam_openid_connect_provider":   {"url"},
	"aws_cloudwatch_log_group":          {"namePrefix"},
}

// asyncUpdates are the arguments whose update AWS runs for a while and
// reports only when done: an EKS control plane's and a node group's
// Kubernetes version (UpdateClusterVersion, UpdateNodegroupVersion return
// an update ID; DescribeCluster and DescribeNodegroup report the old
// version until it succeeds).
var asyncUpdates = map[string][]string{
	"aws_eks_cluster":    {"version"},
	"aws_eks_node_group": {"version"},
}

// inUseRefusal are the types AWS refuses to delete while another resource
// uses them (usersOf): EC2 DependencyViolation for a VPC or subnet with
// resources in it, and for an internet gateway whose VPC still maps public
// addresses (a public NAT gateway's Elastic IP, an internet-facing load
// balancer's; the Terraform AWS provider's internet gateway delete detaches
// first and retries this error until its delete timeout,
// internal/service/ec2/vpc_internet_gateway.go detachInternetGateway); EKS
// ResourceInUseException for a cluster with node groups; IAM DeleteConflict
// for a role that still has policies attached or inline (the provider
// removes the role from its instance profiles, then retries DeleteRole on
// DeleteConflict: internal/service/iam/role.go, deleteRole and
// deleteRoleInstanceProfiles; it detaches policies itself only with
// force_detach_policies or policies in the role's own arguments, which the
// fleet does not use); EC2 AuthFailure for an Elastic IP a NAT gateway
// holds (the provider's EIP delete first disassociates an associated
// address, upbound/terraform-provider-aws upjet-v5.31.0
// internal/service/ec2/ec2_eip.go:286-291 and disassociateEIP 370-390,
// and AWS refuses a NAT gateway's association with AuthFailure, as
// hashicorp/terraform-provider-aws#13763 and genevieve/leftovers#33
// report it; the provider does not retry it, Crossplane does). The EIP's
// association ID is not modelled: the message names eipassoc- with the
// allocation's suffix.
var inUseRefusal = map[string]string{
	"aws_eip":              "disassociating EC2 EIP (%s): api error AuthFailure: You do not have permission to access the specified resource.",
	"aws_vpc":              "api error DependencyViolation: The vpc '%s' has dependencies and cannot be deleted.",
	"aws_subnet":           "api error DependencyViolation: The subnet '%s' has dependencies and cannot be deleted.",
	"aws_internet_gateway": "detaching EC2 Internet Gateway (%s): api error DependencyViolation: Network has some mapped public address(es). Please unmap those public address(es) before detaching the gateway.",
	"aws_eks_cluster":      "ResourceInUseException: Cluster has nodegroups attached (cluster %s)",
	"aws_iam_role":         "deleting IAM Role (%s): api error DeleteConflict: Cannot delete entity, must detach all policies first.",
}

// deletionProtected is DynamoDB's message refusing DeleteTable on a table
// with deletion protection on (as nubo-db/dynoxide#46 quotes it from
// DynamoDB; the error code is not modelled).
const deletionProtected = "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first."

// newResource is the resource a create makes, before it is put in the
// ledger (once every call of the create is authorized): AWS assigns the
// ID of a ProviderID type; the name is the external name.
func (p *Provider) newResource(s *session, kind, tf, owner, name string, args map[string]any) *Resource {
	region, _ := args["region"].(string)
	r := &Resource{Kind: kind, Type: tf, Owner: owner, Account: s.account, Attrs: args, Tags: tagsOf(args), Created: time.Now()}
	r.ReadyAt = r.Created.Add(p.readyAfter(tf))
	switch p.naming[tf] {
	case ByName:
		r.ID, r.Name = name, name
	case ByNameInTemplate:
		r.ID, r.Name = templatedID(tf, args, name), name
	default:
		r.ID = providerID(s.account, tf, args)
		r.Name = r.ID
	}
	r.ARN = arn(p.Partition, s.account, region, tf, r, args)
	if tf == "aws_eks_cluster" {
		// EKS makes each cluster its own CA when it creates it, and
		// reports it (base64 PEM) once the cluster is ACTIVE.
		r.Computed = map[string]any{"certificateAuthority": []any{map[string]any{"data": base64.StdEncoding.EncodeToString(clusterCA())}}}
	}
	return r
}

// providerID is an ID in the format AWS (or the Terraform provider, for
// composite IDs) gives the type.
func providerID(account, tf string, args map[string]any) string {
	prefix := map[string]string{
		"aws_vpc": "vpc-", "aws_subnet": "subnet-", "aws_internet_gateway": "igw-", "aws_eip": "eipalloc-",
		"aws_nat_gateway": "nat-", "aws_route_table": "rtb-", "aws_route_table_association": "rtbassoc-",
		"aws_security_group": "sg-", "aws_launch_template": "lt-",
	}
	s := func(k string) string { v, _ := args[k].(string); return v }
	switch tf {
	case "aws_route":
		// internal/service/ec2/vpc_route.go routeCreateID: r-<table><crc32 of the destination>.
		return fmt.Sprintf("r-%s%d", s("routeTableId"), crc32.ChecksumIEEE([]byte(s("destinationCidrBlock"))))
	case "aws_eks_access_entry":
		return s("clusterName") + ":" + s("principalArn")
	case "aws_eks_access_policy_association":
		return s("clusterName") + "#" + s("principalArn") + "#" + s("policyArn")
	case "aws_eks_addon":
		// internal/service/eks/addon.go addonCreateResourceID.
		return s("clusterName") + ":" + s("addonName")
	case "aws_iam_role_policy":
		return s("role") + ":" + s("name")
	case "aws_iam_role_policy_attachment":
		return s("role") + "-" + time.Now().UTC().Format("20060102150405") + randomDigits(12)
	case "aws_iam_openid_connect_provider":
		return ""
	case "aws_sqs_queue":
		// internal/service/sqs/queue.go resourceQueueCreate: the ID is the
		// queue URL CreateQueue returns.
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", s("region"), account, s("name"))
	}
	if pre, ok := prefix[tf]; ok {
		return pre + randomHex(17)
	}
	return strings.TrimPrefix(tf, "aws_") + "-" + randomHex(17)
}

func randomDigits(n int) string {
	h := randomHex(n)
	var b strings.Builder
	for _, c := range h {
		b.WriteByte(byte('0' + c%10))
	}
	return b.String()
}

// arn is the resource's ARN in AWS's format for the type ("" for types
// without one).
func arn(partition, account, region, tf string, r *Resource, args map[string]any) string {
	s := func(k string) string { v, _ := args[k].(string); return v }
	ec2 := func(typ string) string {
		return fmt.Sprintf("arn:%s:ec2:%s:%s:%s/%s", partition, region, account, typ, r.ID)
	}
	switch tf {
	case "aws_vpc":
		return ec2("vpc")
	case "aws_subnet":
		return ec2("subnet")
	case "aws_internet_gateway":
		return ec2("internet-gateway")
	case "aws_eip":
		return ec2("elastic-ip")
	case "aws_nat_gateway":
		return ec2("natgateway")
	case "aws_route_table":
		return ec2("route-table")
	case "aws_launch_template":
		return ec2("launch-template")
	case "aws_eks_cluster":
		return EKSClusterARN(partition, account, region, r.Name)
	case "aws_eks_node_group":
		return fmt.Sprintf("arn:%s:eks:%s:%s:nodegroup/%s/%s/%s", partition, region, account, s("clusterName"), r.Name, randomHex(8))
	case "aws_eks_access_entry":
		// access-entry/<cluster>/<identity type>/<account>/<name>/<id>
		// (the catalogue's ARN format for EKS access entries)
		typ, acct, who := "role", account, s("principalArn")
		if a := strings.SplitN(who, ":", 6); len(a) == 6 {
			acct = a[4]
			typ, who, _ = strings.Cut(a[5], "/")
			who = who[strings.LastIndex(who, "/")+1:]
		}
		return fmt.Sprintf("arn:%s:eks:%s:%s:access-entry/%s/%s/%s/%s/%s", partition, region, account, s("clusterName"), typ, acct, who, randomHex(8))
	case "aws_eks_addon":
		return fmt.Sprintf("arn:%s:eks:%s:%s:addon/%s/%s/%s", partition, region, account, s("clusterName"), s("addonName"), randomHex(8))
	case "aws_dynamodb_table":
		return fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s", partition, region, account, r.Name)
	case "aws_sqs_queue":
		return fmt.Sprintf("arn:%s:sqs:%s:%s:%s", partition, region, account, s("name"))
	case "aws_cloudwatch_log_group":
		return fmt.Sprintf("arn:%s:logs:%s:%s:log-group:%s", partition, region, account, r.Name)
	case "aws_iam_role":
		path := s("path")
		if path == "" {
			path = "/"
		}
		return fmt.Sprintf("arn:%s:iam::%s:role%s%s", partition, account, path, r.Name)
	case "aws_iam_openid_connect_provider":
		a := fmt.Sprintf("arn:%s:iam::%s:oidc-provider/%s", partition, account, strings.TrimPrefix(s("url"), "https://"))
		r.ID, r.Name = a, a
		return a
	}
	return ""
}

// EKSClusterARN is the ARN AWS gives the EKS cluster name.
func EKSClusterARN(partition, account, region, name string) string {
	return fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", partition, region, account, name)
}

// EKSCluster is the API server endpoint and OIDC issuer URL the account
// reports for the EKS cluster with this ARN and ID once it is ACTIVE, in
// EKS's formats (https://<id>.gr7.<region>.eks.amazonaws.com,
// https://oidc.eks.<region>.amazonaws.com/id/<id>). They follow from the
// ARN and ID, so a suite can give a local API server the issuer before AWS
// reports it.
func EKSCluster(arn, id, region string) (endpoint, issuer string) {
	h := strings.ToUpper(fmt.Sprintf("%08X%024X", crc32.ChecksumIEEE([]byte(arn)), crc32.ChecksumIEEE([]byte(id))))
	return fmt.Sprintf("https://%s.gr7.%s.eks.amazonaws.com", h, region), fmt.Sprintf("https://oidc.eks.%s.amazonaws.com/id/%s", region, h)
}

// clusterCA is a new self-signed CA certificate (PEM) as EKS makes one
// for a cluster's API server (subject CN kubernetes, ten years).
func clusterCA() []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// computed is what AWS reports of a resource beyond its arguments, at
// this moment (an EKS cluster's status and, once ACTIVE, its issuer).
func computed(r *Resource, now time.Time) map[string]any {
	region, _ := r.Attrs["region"].(string)
	out := map[string]any{"id": r.ID}
	if r.ARN != "" {
		out["arn"] = r.ARN
	}
	if len(r.Tags) > 0 {
		t := map[string]any{}
		for k, v := range r.Tags {
			t[k] = v
		}
		out["tagsAll"] = t
	}
	ready := !now.Before(r.ReadyAt)
	for k := range r.Previous {
		out[k] = r.Reported(k, now)
	}
	switch r.Type {
	case "aws_eks_cluster":
		out["status"] = "CREATING"
		if ready {
			endpoint, issuer := EKSCluster(r.ARN, r.ID, region)
			out["status"] = "ACTIVE"
			out["endpoint"] = endpoint
			out["identity"] = []any{map[string]any{"oidc": []any{map[string]any{"issuer": issuer}}}}
			if ca, ok := r.Computed["certificateAuthority"]; ok {
				out["certificateAuthority"] = ca
			}
		}
	case "aws_eks_node_group":
		out["status"] = "CREATING"
		if ready {
			out["status"] = "ACTIVE"
		}
	case "aws_launch_template":
		// every update is a new version, made the default
		// (updateDefaultVersion): EC2 keeps each modification of a launch
		// template as a new version
		out["latestVersion"] = int64(1 + r.Updates)
		out["defaultVersion"] = int64(1 + r.Updates)
	case "aws_vpc":
		out["ownerId"] = ""
	case "aws_eip":
		out["allocationId"] = r.ID
		out["publicIp"] = fmt.Sprintf("198.51.100.%d", crc32.ChecksumIEEE([]byte(r.ID))%254+1)
	}
	return out
}

// setAtProvider writes status.atProvider: the arguments as applied and
// what AWS computed.
func (p *Provider) setAtProvider(u *unstructured.Unstructured, r *Resource) {
	at := map[string]any{}
	for k, v := range jsonNorm(r.Attrs).(map[string]any) {
		at[k] = v
	}
	for k, v := range computed(r, time.Now()) {
		at[k] = v
	}
	statusMap(u)
	_ = unstructured.SetNestedMap(u.Object, at, "status", "atProvider")
}

// immutable returns upjet's refusal for the first changed ForceNew
// argument ("" when the change can be applied in place).
func (p *Provider) immutable(tf string, diff []string, old, cur map[string]any) string {
	for _, k := range diff {
		for _, f := range ForceNew[tf] {
			block, field, nested := strings.Cut(f, ".")
			if !nested || block != k {
				continue
			}
			o, c := fmt.Sprint(blockField(old[k], field)), fmt.Sprint(blockField(cur[k], field))
			if o != c {
				return fmt.Sprintf("cannot change the value of the argument %q from %q to %q", snake(k)+".0."+snake(field), o, c)
			}
		}
		if k != "region" && !slices.Contains(ForceNew[tf], k) {
			continue
		}
		ok, oldV, newV := firstDifference(snake(k), jsonNorm(old[k]), jsonNorm(cur[k]))
		if ok {
			return fmt.Sprintf("cannot change the value of the argument %q from %q to %q", oldV[0], oldV[1], newV)
		}
	}
	return ""
}

// blockField is field of a singleton block (an object, or a one-element
// list as v1beta1 kinds write it); "" when absent, as Terraform's diff
// reads a block that is not set.
func blockField(block any, field string) any {
	if l, ok := block.([]any); ok && len(l) == 1 {
		block = l[0]
	}
	m, _ := block.(map[string]any)
	if v, ok := m[field]; ok && v != nil {
		return v
	}
	return ""
}

// firstDifference flattens old and cur as Terraform's InstanceDiff keys
// (a.0.b) and returns the first key that differs with both values.
func firstDifference(prefix string, old, cur any) (bool, [2]string, string) {
	fo, fc := map[string]string{}, map[string]string{}
	flatten(prefix, old, fo)
	flatten(prefix, cur, fc)
	var keys []string
	for k := range fo {
		keys = append(keys, k)
	}
	for k := range fc {
		if _, ok := fo[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if fo[k] != fc[k] {
			return true, [2]string{k, fo[k]}, fc[k]
		}
	}
	return false, [2]string{}, ""
}

func flatten(prefix string, v any, into map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(prefix+"."+snake(k), e, into)
		}
	case []any:
		into[prefix+".#"] = fmt.Sprint(len(x))
		for i, e := range x {
			flatten(fmt.Sprintf("%s.%d", prefix, i), e, into)
		}
	case nil:
	default:
		into[prefix] = fmt.Sprint(x)
	}
}

// snake turns upjet's JSON names back into Terraform's.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// delete is the managed reconciler's delete: an Orphan policy leaves the
// resource in AWS; otherwise AWS deletes it unless another resource still
// uses it, and the finalizer goes once it is gone.
func (p *Provider) delete(ctx context.Context, s *session, kind, tf string, mg *managed) error {
	u := &mg.Unstructured
	if !meta.FinalizerExists(u, finalizer) {
		return nil
	}
	before := u.DeepCopy()
	policy, _, _ := unstructured.NestedString(u.Object, "spec", "deletionPolicy")
	fp, _, _ := unstructured.NestedMap(u.Object, "spec", "forProvider")
	id, _ := p.identity(tf, u, arguments(fp))
	if r := s.ledger.get(kind, id); r != nil && id != "" {
		if policy == "Orphan" {
			s.ledger.orphan(kind, id)
		} else {
			if protected, _ := r.Attrs["deletionProtectionEnabled"].(bool); protected && tf == "aws_dynamodb_table" {
				// DynamoDB DeleteTable on a table with deletion
				// protection, in AWS's words
				mg.SetConditions(xpv2.Deleting(), xpv2.ReconcileError(fmt.Errorf("%s: %s", errReconcileDelete, deletionProtected)))
				s.ledger.refuse(kind, id, "deletion protection")
				return p.writeStatus(ctx, before, u)
			}
			if msg, ok := inUseRefusal[tf]; ok {
				if users := s.ledger.usersOf(r); len(users) > 0 {
					named := id
					if tf == "aws_eip" {
						named = "eipassoc-" + strings.TrimPrefix(id, "eipalloc-")
					}
					mg.SetConditions(xpv2.Deleting(), xpv2.ReconcileError(fmt.Errorf("%s: %s", errReconcileDelete, fmt.Sprintf(msg, named))))
					s.ledger.refuse(kind, id, "used by "+strings.Join(users, ", "))
					return p.writeStatus(ctx, before, u)
				}
			}
			if err := p.authorizeCalls(s, providerCalls[tf].delete, tf, r, r.Attrs, false, nil); err != nil {
				mg.SetConditions(xpv2.Deleting(), xpv2.ReconcileError(fmt.Errorf("%s: %w", errReconcileDelete, err)))
				return p.writeStatus(ctx, before, u)
			}
			if err := p.deleteSideEffects(ctx, s, r); err != nil {
				mg.SetConditions(xpv2.Deleting(), xpv2.ReconcileError(fmt.Errorf("%s: %w", errReconcileDelete, err)))
				return p.writeStatus(ctx, before, u)
			}
			s.ledger.remove(kind, id)
		}
	}
	meta.RemoveFinalizer(u, finalizer)
	return p.Client.Update(ctx, u)
}

// deleteSideEffects are what deleting r takes with it, in Terraform's
// delete or in AWS:
//   - a route table: the provider disassociates every subnet first
//     (upbound/terraform-provider-aws upjet-v5.31.0
//     internal/service/ec2/vpc_route_table.go:358-365, resourceRouteTableDelete,
//     DisassociateRouteTable for each association, each authorized), and
//     EC2's DeleteRouteTable takes the table's routes with it. The managed
//     resources of those associations and routes then find nothing to
//     delete (the provider takes NotFound on delete as done).
func (p *Provider) deleteSideEffects(ctx context.Context, s *session, r *Resource) error {
	if r.Type != "aws_route_table" {
		return nil
	}
	var gone []Resource
	for _, o := range s.ledger.All() {
		if o.Attrs["routeTableId"] != r.ID {
			continue
		}
		switch o.Type {
		case "aws_route_table_association":
			if err := p.authorizeCalls(s, providerCalls[o.Type].delete, o.Type, &o, o.Attrs, false, nil); err != nil {
				return fmt.Errorf("deleting Route Table (%s): %w", r.ID, err)
			}
			gone = append(gone, o)
		case "aws_route":
			gone = append(gone, o)
		}
	}
	for _, o := range gone {
		s.ledger.remove(o.Kind, o.ID)
	}
	return nil
}

// usersOf lists the resources that keep AWS from deleting r: for an EKS
// cluster its node groups (DeleteCluster: ResourceInUseException while node
// groups or Fargate profiles exist; access entries go with the cluster),
// for the rest the resources whose arguments name r's ID. Tags are labels,
// not uses: a resource tagged with a cluster's name does not hold it.
func (l *Ledger) usersOf(r *Resource) []string {
	var out []string
	all := l.All()
	for _, o := range all {
		if o.Kind == r.Kind && o.ID == r.ID {
			continue
		}
		uses := mentions(withoutTags(o.Attrs), r.ID)
		switch r.Type {
		case "aws_eks_cluster":
			uses = o.Type == "aws_eks_node_group" && o.Attrs["clusterName"] == r.Name
		case "aws_internet_gateway":
			uses = mapsPublicAddress(all, o, r.Attrs["vpcId"])
		case "aws_iam_role":
			uses = (o.Type == "aws_iam_role_policy" || o.Type == "aws_iam_role_policy_attachment") && o.Attrs["role"] == r.Name
		}
		if uses {
			out = append(out, o.Kind+"/"+o.ID)
		}
	}
	return out
}

// mapsPublicAddress reports whether o maps a public address in vpc: a
// public NAT gateway in one of its subnets, or an internet-facing load
// balancer in it.
func mapsPublicAddress(all []Resource, o Resource, vpc any) bool {
	switch o.Type {
	case "aws_nat_gateway":
		if o.Attrs["connectivityType"] == "private" {
			return false
		}
		for _, s := range all {
			if s.Type == "aws_subnet" && s.ID == o.Attrs["subnetId"] {
				return vpc != nil && s.Attrs["vpcId"] == vpc
			}
		}
	case "aws_lb":
		return o.Attrs["internal"] == false && vpc != nil && o.Attrs["vpcId"] == vpc
	}
	return false
}

// withoutTags is attrs without the tag arguments.
func withoutTags(attrs map[string]any) map[string]any {
	out := make(map[string]any, len(attrs))
	for k, v := range attrs {
		if k != "tags" && k != "tagsAll" && k != "tagSpecifications" {
			out[k] = v
		}
	}
	return out
}

func mentions(v any, id string) bool {
	switch x := v.(type) {
	case string:
		return x == id
	case map[string]any:
		for _, e := range x {
			if mentions(e, id) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if mentions(e, id) {
				return true
			}
		}
	}
	return false
}
