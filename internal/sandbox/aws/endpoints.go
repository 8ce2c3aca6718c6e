package aws

import (
	"cmp"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Endpoints serves the AWS APIs the hub's and the spokes' controllers call
// themselves (not through Crossplane), and those the program reads an
// account with (accountapi.go): STS AssumeRoleWithWebIdentity, which
// External Secrets calls with its service-account token, and Secrets
// Manager GetSecretValue, which it calls with the credentials it got. The wire
// formats are AWS's (STS: the query protocol, form-encoded in, XML out,
// https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRoleWithWebIdentity.html;
// Secrets Manager: JSON 1.1 with X-Amz-Target,
// https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html),
// as aws-sdk-go-v2 (the SDK External Secrets 0.20.4 builds with,
// pkg/provider/aws/auth/auth.go:325 and secretsmanager/secretsmanager.go:746)
// sends and reads them.
//
// Reproduced: the web identity token must be valid for the cluster that
// issued it (a TokenReview against that API server, which is how its
// signature is checked: the hub's, or a spoke's, picked by the token's
// issuer) with the audience the role's trust policy names, and its subject
// must be the one the trust policy's StringEquals condition names; a role
// that does not exist (neither the program nor Crossplane created it) is
// refused; a secret is found by name or ARN; a caller must hold credentials
// this STS issued; a value put later (PutSecretValue, as the program's
// SecretVersion update puts a rotated key document) is what GetSecretValue
// answers from then on, with a new VersionId. Not modelled: request signing
// (SigV4 signatures are not verified, only the access key they name), the
// role's permission policies unless Authorize is set, the secret's and the
// key's resource policies, the issuer URL
// against the trust policy's federated principal (the hub's tokens come
// from the local API server, not the EKS OIDC issuer the program's trust
// policies name), and version stages other than AWSCURRENT.
type Endpoints struct {
	Region, Account, Partition string
	// Roles are the IAM roles that exist: ARN to trust policy document.
	Roles map[string]string
	// Trust, when set, finds the trust policy of a role not in Roles (the
	// roles Crossplane created in the stand-in account).
	Trust func(roleARN string) (policy string, ok bool)
	// Secrets are the Secrets Manager secrets.
	Secrets []Secret
	// Review checks a service-account token as the API server's
	// TokenReview does: its user name and audiences, or an error.
	Review func(ctx context.Context, token string) (user string, audiences []string, err error)
	// Authorize, when set, decides a call of the role on resource with
	// the request's condition keys, as IAM would (Authorizer.Authorize);
	// nil lets every call with credentials through.
	Authorize func(roleARN, action, resource string, keys map[string]any) error
	// Ledgers are the accounts the read APIs answer from, by ID (each
	// caller reads its own account's; accountapi.go).
	Ledgers map[string]*Ledger
	// Regions are the regions enabled for the accounts (DescribeRegions);
	// empty: Region alone.
	Regions []string

	mu       sync.Mutex
	sessions map[string]string // access key ID to assumed role ARN
	calls    []string
}

// Secret is one Secrets Manager secret with its current value.
type Secret struct {
	ARN, Name, Value string
	// KMSKeyARN is the customer managed key the secret is encrypted
	// with (empty: AWS's own key, which needs no kms:Decrypt).
	KMSKeyARN string
	// Version counts the values put after the first (PutSecretValue).
	Version int
}

// PutSecretValue makes value the secret's current version, as Pulumi's
// SecretVersion update calls secretsmanager:PutSecretValue: GetSecretValue
// answers it, with a new VersionId, from then on.
func (e *Endpoints) PutSecretValue(arn, value string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.Secrets {
		if e.Secrets[i].ARN == arn {
			e.Secrets[i].Value = value
			e.Secrets[i].Version++
			return nil
		}
	}
	return fmt.Errorf("Secrets Manager: no secret %s", arn)
}

// Hosts are the endpoint host names, each to its handler.
func (e *Endpoints) Hosts() map[string]http.Handler {
	return map[string]http.Handler{
		"sts.amazonaws.com":                                  http.HandlerFunc(e.sts),
		"sts." + e.Region + ".amazonaws.com":                 http.HandlerFunc(e.sts),
		"secretsmanager." + e.Region + ".amazonaws.com":      http.HandlerFunc(e.secretsManager),
		"secretsmanager-fips." + e.Region + ".amazonaws.com": http.HandlerFunc(e.secretsManager),
	}
}

// Calls lists the calls served, in order: "Action principal -> result".
func (e *Endpoints) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

func (e *Endpoints) record(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, fmt.Sprintf(format, args...))
}

// awsError writes an error in the protocol's format.
func (e *Endpoints) awsError(w http.ResponseWriter, xmlProtocol bool, status int, code, msg string) {
	if xmlProtocol {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
			code, xmlEscape(msg), randomHex(32))
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (e *Endpoints) sts(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		e.awsError(w, true, http.StatusBadRequest, "InvalidParameterValue", err.Error())
		return
	}
	if r.PostForm.Get("Action") == "GetCallerIdentity" {
		e.getCallerIdentity(w, r)
		return
	}
	if a := r.PostForm.Get("Action"); a != "AssumeRoleWithWebIdentity" {
		e.record("sts:%s -> refused", a)
		e.awsError(w, true, http.StatusBadRequest, "InvalidAction", "the stand-in STS serves AssumeRoleWithWebIdentity and GetCallerIdentity only, not "+a)
		return
	}
	role, token := r.PostForm.Get("RoleArn"), r.PostForm.Get("WebIdentityToken")
	user, auds, err := e.Review(r.Context(), token)
	if err != nil {
		e.record("sts:AssumeRoleWithWebIdentity %s -> InvalidIdentityToken", role)
		e.awsError(w, true, http.StatusBadRequest, "InvalidIdentityToken", err.Error())
		return
	}
	trust, ok := e.Roles[role]
	if !ok && e.Trust != nil {
		trust, ok = e.Trust(role)
	}
	if !ok {
		e.record("sts:AssumeRoleWithWebIdentity %s %s -> AccessDenied (no such role)", user, role)
		e.awsError(w, true, http.StatusForbidden, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
		return
	}
	if err := trusts(trust, user, auds); err != nil {
		e.record("sts:AssumeRoleWithWebIdentity %s %s -> AccessDenied (%v)", user, role, err)
		e.awsError(w, true, http.StatusForbidden, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
		return
	}
	key := "ASIA" + strings.ToUpper(randomHex(16))
	e.mu.Lock()
	if e.sessions == nil {
		e.sessions = map[string]string{}
	}
	e.sessions[key] = role
	e.mu.Unlock()
	e.record("sts:AssumeRoleWithWebIdentity %s %s -> ok", user, role)
	session := r.PostForm.Get("RoleSessionName")
	name := role[strings.LastIndex(role, "/")+1:]
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<AssumeRoleWithWebIdentityResult>
<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>
<SubjectFromWebIdentityToken>%s</SubjectFromWebIdentityToken>
<AssumedRoleUser><Arn>arn:%s:sts::%s:assumed-role/%s/%s</Arn><AssumedRoleId>AROA%s:%s</AssumedRoleId></AssumedRoleUser>
<Audience>%s</Audience>
</AssumeRoleWithWebIdentityResult>
<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`,
		key, randomHex(40), randomHex(64), time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		xmlEscape(user), e.Partition, cmp.Or(accountOf(role), e.Account), xmlEscape(name), xmlEscape(session), strings.ToUpper(randomHex(17)), xmlEscape(session),
		xmlEscape(strings.Join(auds, ",")), randomHex(32))
}

// trusts checks a web identity against a trust policy: some statement
// allowing sts:AssumeRoleWithWebIdentity whose StringEquals conditions on
// the token's sub and aud hold.
func trusts(doc, user string, auds []string) error {
	var p struct {
		Statement []struct {
			Effect    string
			Action    any
			Condition map[string]map[string]any
		}
	}
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		return fmt.Errorf("trust policy: %w", err)
	}
	for _, s := range p.Statement {
		if s.Effect != "Allow" || !slices.Contains(stringsOf(s.Action), "sts:AssumeRoleWithWebIdentity") {
			continue
		}
		ok := true
		for op, conds := range s.Condition {
			for k, v := range conds {
				want := stringsOf(v)
				switch {
				case strings.HasSuffix(k, ":sub") && op == "StringEquals":
					ok = ok && slices.Contains(want, user)
				case strings.HasSuffix(k, ":aud") && op == "StringEquals":
					any := false
					for _, a := range auds {
						any = any || slices.Contains(want, a)
					}
					ok = ok && any
				default:
					ok = false // a condition the stand-in does not evaluate
				}
			}
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("no statement trusts %s with audiences %v", user, auds)
}

func stringsOf(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// caller is the role whose STS credentials signed the request (the access
// key in the SigV4 Authorization header's Credential).
func (e *Endpoints) caller(r *http.Request) string {
	a := r.Header.Get("Authorization")
	i := strings.Index(a, "Credential=")
	if i < 0 {
		return ""
	}
	key := a[i+len("Credential="):]
	key = key[:strings.IndexAny(key+"/", "/")]
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessions[key]
}

func (e *Endpoints) secretsManager(w http.ResponseWriter, r *http.Request) {
	target := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "secretsmanager.")
	role := e.caller(r)
	if role == "" {
		e.record("secretsmanager:%s -> UnrecognizedClientException", target)
		e.awsError(w, false, http.StatusBadRequest, "UnrecognizedClientException", "The security token included in the request is invalid.")
		return
	}
	var in struct {
		SecretID     string `json:"SecretId"`
		VersionStage string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		e.awsError(w, false, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	if target != "GetSecretValue" {
		e.record("secretsmanager:%s %s -> refused", target, role)
		e.awsError(w, false, http.StatusBadRequest, "InvalidAction", "the stand-in Secrets Manager serves GetSecretValue only, not "+target)
		return
	}
	if in.VersionStage != "" && in.VersionStage != "AWSCURRENT" {
		e.awsError(w, false, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: "+in.VersionStage)
		return
	}
	sec, ok := e.secret(in.SecretID)
	if !ok {
		e.record("secretsmanager:GetSecretValue %s %s -> ResourceNotFoundException", role, in.SecretID)
		e.awsError(w, false, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	if e.Authorize != nil {
		// Secrets Manager decrypts with the caller's permission on the
		// key (kms:ViaService names it).
		err := e.Authorize(role, "secretsmanager:GetSecretValue", sec.ARN, nil)
		if err == nil && sec.KMSKeyARN != "" {
			err = e.Authorize(role, "kms:Decrypt", sec.KMSKeyARN, map[string]any{"kms:ViaService": "secretsmanager." + e.Region + ".amazonaws.com"})
		}
		if err != nil {
			e.record("secretsmanager:GetSecretValue %s %s -> AccessDeniedException", role, in.SecretID)
			e.awsError(w, false, http.StatusBadRequest, "AccessDeniedException", strings.TrimPrefix(err.Error(), "api error AccessDeniedException: "))
			return
		}
	}
	e.record("secretsmanager:GetSecretValue %s %s -> ok", role, in.SecretID)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"ARN": sec.ARN, "Name": sec.Name, "SecretString": sec.Value, "VersionId": fmt.Sprintf("00000000-0000-4000-8000-%012d", sec.Version+1),
		"VersionStages": []string{"AWSCURRENT"}, "CreatedDate": float64(time.Now().Unix()),
	})
}

// secret finds a secret by ARN or name (Secrets Manager's SecretId takes
// either).
func (e *Endpoints) secret(id string) (Secret, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sec := range e.Secrets {
		if sec.ARN == id || sec.Name == id {
			return sec, true
		}
	}
	return Secret{}, false
}
