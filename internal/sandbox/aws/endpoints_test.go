package aws

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/components/sealingkeys"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

// TestSecretsManagerAuthorizes: GetSecretValue answers a role whose
// policies allow reading the secret and decrypting it through Secrets
// Manager, and refuses, with AWS's AccessDeniedException naming the
// action, a role that may read the secret but not decrypt it, and a role
// that may do neither.
func TestSecretsManagerAuthorizes(t *testing.T) {
	const (
		acct   = "111122223333"
		secret = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:mgmt-sealing-key-AbCdEf"
		key    = "arn:aws:kms:eu-west-1:111122223333:key/0f0f0f0f-1111-2222-3333-444455556666"
	)
	env := hubiam.Env{HubName: "mgmt", AccountID: acct, Partition: "aws", Region: "eu-west-1"}
	toolDir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	eso := hubiam.ExternalSecrets(env, secret, key)
	noKMS := policydoc.Document{Version: eso.Version}
	for _, st := range eso.Statement {
		if st.Action[0] != "kms:Decrypt" {
			noKMS.Statement = append(noKMS.Statement, st)
		}
	}
	roles := map[string]Role{
		"arn:aws:iam::111122223333:role/eso":    {Inline: []policydoc.Document{eso}},
		"arn:aws:iam::111122223333:role/no-kms": {Inline: []policydoc.Document{noKMS}},
		"arn:aws:iam::111122223333:role/flux":   {Inline: []policydoc.Document{hubiam.Flux(env)}},
	}
	a, err := NewAuthorizer(toolDir, nil, roles)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// the sealing key's policy as the program writes it: it delegates to IAM
	a.ResourcePolicies = map[string]policydoc.Document{key: sealingkeys.KeyPolicy("aws", acct)}
	l := NewLedger()
	e := &Endpoints{Region: "eu-west-1", Account: acct, Partition: "aws",
		Secrets: []Secret{{ARN: secret, Name: "mgmt-sealing-key", Value: "{}", KMSKeyARN: key}},
		Authorize: func(role, action, resource string, keys map[string]any) error {
			return a.Authorize(role, acct, l, action, resource, keys)
		},
		sessions: map[string]string{"ASIAESO": "arn:aws:iam::111122223333:role/eso", "ASIANOKMS": "arn:aws:iam::111122223333:role/no-kms", "ASIAFLUX": "arn:aws:iam::111122223333:role/flux"},
	}
	cases := map[string]struct {
		reason, key string
		status      int
		want        string
	}{
		"Reader":    {reason: "The hub's External Secrets role reads and decrypts the sealing key.", key: "ASIAESO", status: http.StatusOK, want: `"SecretString":"{}"`},
		"NoDecrypt": {reason: "Reading a KMS-encrypted secret needs kms:Decrypt through Secrets Manager.", key: "ASIANOKMS", status: http.StatusBadRequest, want: "kms:Decrypt on resource: " + key},
		"Other":     {reason: "The Flux role may not read the sealing key.", key: "ASIAFLUX", status: http.StatusBadRequest, want: "secretsmanager:GetSecretValue on resource: " + secret},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "https://secretsmanager.eu-west-1.amazonaws.com/", strings.NewReader(`{"SecretId":"mgmt-sealing-key"}`))
			r.Header.Set("X-Amz-Target", "secretsmanager.GetSecretValue")
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+tc.key+"/20261128/eu-west-1/secretsmanager/aws4_request, SignedHeaders=host, Signature=0")
			w := httptest.NewRecorder()
			e.secretsManager(w, r)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("%s\ngot %d %s\nwant %d with %q", tc.reason, w.Code, w.Body.String(), tc.status, tc.want)
			}
		})
	}
}
