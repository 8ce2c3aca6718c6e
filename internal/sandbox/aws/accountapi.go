package aws

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The AWS APIs that read an account (what the program's pre-flight check
// and a spoke account's delete guard call through aws-sdk-go-v2,
// internal/hub/preflight/awsreader), answered from the Ledger of the
// caller's account:
//   - STS GetCallerIdentity (the query protocol): the caller's assumed-role
//     ARN and account. It needs no permission, and an explicit deny does
//     not stop it (STS API reference, GetCallerIdentity), so it is not
//     authorized.
//   - EC2 DescribeRegions (the EC2 query protocol): the regions enabled
//     for the account (Endpoints.Regions). DescribeLaunchTemplates: the
//     launch templates of the request's region, with their tags.
//   - IAM ListRoles: the roles made in the account (and those of Roles in
//     it); ListOpenIDConnectProviders and ListOpenIDConnectProviderTags:
//     the OIDC providers made in the account, with their tags.
//   - The Resource Groups Tagging API's GetResources (JSON 1.1): the
//     resources with an ARN in the request's region carrying a tag the
//     TagFilters match (a key, and any of its values when it lists some).
//     IAM resources are not listed: GetResources does not support IAM users
//     and roles (its API reference, "Services that support the Resource
//     Groups Tagging API"), and whether it lists IAM's other, global
//     resources is not documented; the stand-in lists none of them, the
//     stricter answer for a caller that must find them (awsreader lists
//     roles and OIDC providers with IAM's own calls).
//
// Every call but GetCallerIdentity is decided by Authorize as the caller's
// role (on "*", or the OIDC provider a ListOpenIDConnectProviderTags
// names); a denied call gets the service's refusal (EC2's
// UnauthorizedOperation, IAM's AccessDenied, the Tagging API's
// AccessDeniedException). Not modelled: pagination (every answer is one
// page), the request filters awsreader does not send, and the fields of
// each answer awsreader does not read (a role's trust policy, a template's
// versions).

// DefaultRegions are the regions AWS enables for every account, those
// introduced before 20 March 2019 (AWS Account Management reference guide,
// "Enable or disable AWS Regions in your account"): what DescribeRegions
// answers without AllRegions for an account that enabled no other.
var DefaultRegions = []string{
	"ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-southeast-1", "ap-southeast-2",
	"ca-central-1", "eu-central-1", "eu-north-1", "eu-west-1", "eu-west-2", "eu-west-3",
	"sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
}

// Session makes credentials of roleARN, as STS issues them when an
// identity assumes the role (a deploying identity's SSO or AssumeRole
// session), and returns their access key ID; any secret key signs with it
// (signatures are not verified).
func (e *Endpoints) Session(roleARN string) string {
	key := "ASIA" + strings.ToUpper(randomHex(16))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sessions == nil {
		e.sessions = map[string]string{}
	}
	e.sessions[key] = roleARN
	return key
}

// regions are the regions enabled for the callers' accounts.
func (e *Endpoints) regions() []string {
	if len(e.Regions) > 0 {
		return e.Regions
	}
	return []string{e.Region}
}

// Handler serves every API of the stand-in (Hosts' and the read APIs) at
// one address, each request to its service and region as its SigV4
// credential scope names them (".../<region>/<service>/aws4_request"): an
// AWS SDK pointed there with its base endpoint (config.WithBaseEndpoint)
// reaches the stand-in only. A region not enabled for the accounts gets
// no answer, as its endpoint would not resolve.
func (e *Endpoints) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		region, service := scope(r)
		if !slices.Contains(e.regions(), region) && region != "us-east-1" {
			http.Error(w, "stand-in AWS: no endpoint in region "+region, http.StatusBadGateway)
			return
		}
		switch service {
		case "sts":
			e.sts(w, r)
		case "secretsmanager":
			e.secretsManager(w, r)
		case "iam":
			e.iam(w, r)
		case "ec2":
			e.ec2(w, r, region)
		case "tagging":
			e.tagging(w, r, region)
		default:
			http.Error(w, "stand-in AWS: no service "+service, http.StatusBadGateway)
		}
	})
}

// scope is the region and service of the request's SigV4 credential
// scope.
func scope(r *http.Request) (region, service string) {
	a := r.Header.Get("Authorization")
	i := strings.Index(a, "Credential=")
	if i < 0 {
		return "", ""
	}
	cred, _, _ := strings.Cut(a[i+len("Credential="):], ",")
	parts := strings.Split(cred, "/")
	if len(parts) != 5 {
		return "", ""
	}
	return parts[2], parts[3]
}

// ledgerOf is the Ledger of role's account.
func (e *Endpoints) ledgerOf(role string) *Ledger {
	if l, ok := e.Ledgers[accountOf(role)]; ok {
		return l
	}
	return NewLedger()
}

// allowed decides action on resource as role; false when it answered the
// refusal in the service's protocol.
func (e *Endpoints) allowed(w http.ResponseWriter, role, action, resource string) bool {
	if role == "" {
		e.record("%s -> InvalidClientTokenId", action)
		e.refuse(w, action, "InvalidClientTokenId: The security token included in the request is invalid.")
		return false
	}
	if e.Authorize == nil {
		e.record("%s %s -> ok", action, role)
		return true
	}
	if err := e.Authorize(role, action, resource, nil); err != nil {
		e.record("%s %s %s -> denied", action, role, resource)
		e.refuse(w, action, strings.TrimPrefix(err.Error(), "api error "))
		return false
	}
	e.record("%s %s %s -> ok", action, role, resource)
	return true
}

// refuse answers "<code>: <message>" in the protocol of action's service.
func (e *Endpoints) refuse(w http.ResponseWriter, action, codeMsg string) {
	code, msg, _ := strings.Cut(codeMsg, ": ")
	switch svc, _, _ := strings.Cut(action, ":"); svc {
	case "ec2":
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>`,
			xmlEscape(code), xmlEscape(msg), randomUUID())
	case "iam":
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
			xmlEscape(code), xmlEscape(msg), randomUUID())
	default:
		e.awsError(w, false, http.StatusBadRequest, code, msg)
	}
}

func randomUUID() string {
	h := randomHex(32)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// getCallerIdentity answers STS GetCallerIdentity for the request's
// credentials.
func (e *Endpoints) getCallerIdentity(w http.ResponseWriter, r *http.Request) {
	role := e.caller(r)
	if role == "" {
		e.record("sts:GetCallerIdentity -> InvalidClientTokenId")
		e.awsError(w, true, http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid.")
		return
	}
	e.record("sts:GetCallerIdentity %s -> ok", role)
	const session = "eks-fleet-deployer"
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>%s</Arn><UserId>AROA%s:%s</UserId><Account>%s</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
		xmlEscape(AssumedRoleARN(role, session)),
		strings.ToUpper(randomHex(17)), session, accountOf(role), randomUUID())
}

// ec2 answers DescribeRegions and DescribeLaunchTemplates in region.
func (e *Endpoints) ec2(w http.ResponseWriter, r *http.Request, region string) {
	if err := r.ParseForm(); err != nil {
		e.refuse(w, "ec2:", "InvalidParameterValue: "+err.Error())
		return
	}
	role := e.caller(r)
	const ns = "http://ec2.amazonaws.com/doc/2016-11-15/"
	var b strings.Builder
	switch a := r.PostForm.Get("Action"); a {
	case "DescribeRegions":
		if !e.allowed(w, role, "ec2:DescribeRegions", "*") {
			return
		}
		fmt.Fprintf(&b, `<DescribeRegionsResponse xmlns="%s"><requestId>%s</requestId><regionInfo>`, ns, randomUUID())
		for _, reg := range e.regions() {
			fmt.Fprintf(&b, `<item><regionName>%s</regionName><regionEndpoint>ec2.%s.amazonaws.com</regionEndpoint><optInStatus>opt-in-not-required</optInStatus></item>`, reg, reg)
		}
		b.WriteString(`</regionInfo></DescribeRegionsResponse>`)
	case "DescribeLaunchTemplates":
		if !e.allowed(w, role, "ec2:DescribeLaunchTemplates", "*") {
			return
		}
		fmt.Fprintf(&b, `<DescribeLaunchTemplatesResponse xmlns="%s"><requestId>%s</requestId><launchTemplates>`, ns, randomUUID())
		for _, t := range e.ledgerOf(role).Find("", func(x Resource) bool { return x.Type == "aws_launch_template" && x.Attrs["region"] == region }) {
			name, _ := t.Attrs["name"].(string)
			fmt.Fprintf(&b, `<item><launchTemplateId>%s</launchTemplateId><launchTemplateName>%s</launchTemplateName><createTime>%s</createTime><defaultVersionNumber>1</defaultVersionNumber><latestVersionNumber>%d</latestVersionNumber><tagSet>`,
				xmlEscape(t.ID), xmlEscape(name), t.Created.UTC().Format(time.RFC3339), t.Updates+1)
			for _, k := range slices.Sorted(maps.Keys(t.Tags)) {
				fmt.Fprintf(&b, `<item><key>%s</key><value>%s</value></item>`, xmlEscape(k), xmlEscape(t.Tags[k]))
			}
			b.WriteString(`</tagSet></item>`)
		}
		b.WriteString(`</launchTemplates></DescribeLaunchTemplatesResponse>`)
	default:
		e.record("ec2:%s -> refused", a)
		e.refuse(w, "ec2:"+a, "InvalidAction: the stand-in EC2 API serves DescribeRegions and DescribeLaunchTemplates only, not "+a)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, b.String())
}

// iam answers ListRoles, ListOpenIDConnectProviders and
// ListOpenIDConnectProviderTags.
func (e *Endpoints) iam(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		e.refuse(w, "iam:", "InvalidInput: "+err.Error())
		return
	}
	role := e.caller(r)
	a := r.PostForm.Get("Action")
	l := e.ledgerOf(role)
	var b strings.Builder
	switch a {
	case "ListRoles":
		if !e.allowed(w, role, "iam:ListRoles", "*") {
			return
		}
		type listed struct{ name, arn string }
		var roles []listed
		for _, x := range l.Find("", func(x Resource) bool { return x.Type == "aws_iam_role" }) {
			roles = append(roles, listed{x.Name, x.ARN})
		}
		for arn := range e.Roles {
			if accountOf(arn) == accountOf(role) {
				roles = append(roles, listed{arn[strings.LastIndex(arn, "/")+1:], arn})
			}
		}
		slices.SortFunc(roles, func(x, y listed) int { return strings.Compare(x.name, y.name) })
		b.WriteString(`<Roles>`)
		for _, x := range roles {
			path := strings.TrimSuffix(x.arn[strings.Index(x.arn, ":role")+len(":role"):], x.name)
			fmt.Fprintf(&b, `<member><Path>%s</Path><RoleName>%s</RoleName><RoleId>AROA%s</RoleId><Arn>%s</Arn><CreateDate>%s</CreateDate></member>`,
				xmlEscape(path), xmlEscape(x.name), strings.ToUpper(randomHex(17)), xmlEscape(x.arn), time.Now().UTC().Format(time.RFC3339))
		}
		b.WriteString(`</Roles><IsTruncated>false</IsTruncated>`)
	case "ListOpenIDConnectProviders":
		if !e.allowed(w, role, "iam:ListOpenIDConnectProviders", "*") {
			return
		}
		b.WriteString(`<OpenIDConnectProviderList>`)
		for _, x := range l.Find("", func(x Resource) bool { return x.Type == "aws_iam_openid_connect_provider" }) {
			fmt.Fprintf(&b, `<member><Arn>%s</Arn></member>`, xmlEscape(x.ARN))
		}
		b.WriteString(`</OpenIDConnectProviderList>`)
	case "ListOpenIDConnectProviderTags":
		arn := r.PostForm.Get("OpenIDConnectProviderArn")
		if !e.allowed(w, role, "iam:ListOpenIDConnectProviderTags", arn) {
			return
		}
		found := l.Find("", func(x Resource) bool { return x.Type == "aws_iam_openid_connect_provider" && x.ARN == arn })
		if len(found) == 0 {
			e.refuse(w, "iam:", "NoSuchEntity: OpenIDConnect Provider not found for arn "+arn)
			return
		}
		b.WriteString(`<Tags>`)
		for _, k := range slices.Sorted(maps.Keys(found[0].Tags)) {
			fmt.Fprintf(&b, `<member><Key>%s</Key><Value>%s</Value></member>`, xmlEscape(k), xmlEscape(found[0].Tags[k]))
		}
		b.WriteString(`</Tags><IsTruncated>false</IsTruncated>`)
	default:
		e.record("iam:%s -> refused", a)
		e.refuse(w, "iam:"+a, "InvalidAction: the stand-in IAM API serves ListRoles and the OIDC providers' lists only, not "+a)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<%sResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><%sResult>%s</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`,
		a, a, b.String(), a, randomUUID(), a)
}

// tagging answers GetResources in region.
func (e *Endpoints) tagging(w http.ResponseWriter, r *http.Request, region string) {
	target := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "ResourceGroupsTaggingAPI_20170126.")
	if target != "GetResources" {
		e.record("tag:%s -> refused", target)
		e.refuse(w, "tag:"+target, "InvalidAction: the stand-in Tagging API serves GetResources only, not "+target)
		return
	}
	var in struct {
		TagFilters []struct {
			Key    string
			Values []string
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		e.refuse(w, "tag:", "InvalidParameterException: "+err.Error())
		return
	}
	role := e.caller(r)
	if !e.allowed(w, role, "tag:GetResources", "*") {
		return
	}
	type tag struct{ Key, Value string }
	type mapping struct {
		ResourceARN string
		Tags        []tag
	}
	out := []mapping{}
	for _, x := range e.ledgerOf(role).Find("", func(x Resource) bool {
		parts := strings.SplitN(x.ARN, ":", 6)
		if len(parts) != 6 || parts[2] == "iam" || parts[3] != region {
			return false
		}
		for _, f := range in.TagFilters {
			v, ok := x.Tags[f.Key]
			if !ok || (len(f.Values) > 0 && !slices.Contains(f.Values, v)) {
				return false
			}
		}
		return true
	}) {
		m := mapping{ResourceARN: x.ARN}
		for _, k := range slices.Sorted(maps.Keys(x.Tags)) {
			m.Tags = append(m.Tags, tag{k, x.Tags[k]})
		}
		out = append(out, m)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(map[string]any{"PaginationToken": "", "ResourceTagMappingList": out})
}
