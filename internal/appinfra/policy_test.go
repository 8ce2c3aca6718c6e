package appinfra

import (
	"strings"
	"testing"
)

var own = AppResources{
	TableARN:           "arn:aws:dynamodb:eu-west-1:111122223333:table/mgmt-apps-staging-payment-app",
	QueueARN:           "arn:aws:sqs:eu-west-1:111122223333:mgmt-apps-staging-payment-app",
	DeadLetterQueueARN: "arn:aws:sqs:eu-west-1:111122223333:mgmt-apps-staging-payment-app-dlq",
}

// goodPolicy is the document the Composition's fmt string produces.
func goodPolicy(table, queue, dlq string) string {
	return `{"Version":"2012-10-17","Statement":[` +
		`{"Sid":"Table","Effect":"Allow","Action":["dynamodb:GetItem","dynamodb:PutItem","dynamodb:Query"],"Resource":["` + table + `"]},` +
		`{"Sid":"Queue","Effect":"Allow","Action":["sqs:SendMessage","sqs:ReceiveMessage","sqs:DeleteMessage"],"Resource":["` + queue + `"]},` +
		`{"Sid":"DeadLetterQueue","Effect":"Allow","Action":["sqs:ReceiveMessage"],"Resource":"` + dlq + `"}]}`
}

func TestCheckRolePolicy(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		own     AppResources
		wantErr string
	}{
		{name: "own resources only", doc: goodPolicy(own.TableARN, own.QueueARN, own.DeadLetterQueueARN), own: own},
		{name: "wildcard resource", doc: goodPolicy("*", own.QueueARN, own.DeadLetterQueueARN), own: own,
			wantErr: `Resource "*" is not one of the app's own resources`},
		{name: "another app's table", doc: goodPolicy("arn:aws:dynamodb:eu-west-1:111122223333:table/mgmt-apps-staging-other", own.QueueARN, own.DeadLetterQueueARN),
			own: own, wantErr: "is not one of the app's own resources"},
		{name: "table prefix wildcard", doc: goodPolicy(own.TableARN+"*", own.QueueARN, own.DeadLetterQueueARN), own: own,
			wantErr: "is not one of the app's own resources"},
		{name: "extra resource in a statement", doc: goodPolicy(own.TableARN+`","arn:aws:dynamodb:eu-west-1:111122223333:table/x`, own.QueueARN, own.DeadLetterQueueARN),
			own: own, wantErr: "table/x"},
		{name: "wildcard action", doc: strings.Replace(goodPolicy(own.TableARN, own.QueueARN, own.DeadLetterQueueARN), `"dynamodb:GetItem"`, `"dynamodb:*"`, 1),
			own: own, wantErr: `Action "dynamodb:*"`},
		{name: "table action on queue", doc: goodPolicy(own.QueueARN, own.TableARN, own.DeadLetterQueueARN), own: own,
			wantErr: "is not allowed"},
		{name: "send to dead-letter queue", doc: strings.Replace(goodPolicy(own.TableARN, own.QueueARN, own.DeadLetterQueueARN), `["sqs:ReceiveMessage"]`, `["sqs:SendMessage"]`, 1),
			own: own, wantErr: `Action "sqs:SendMessage"`},
		{name: "dead-letter queue not granted", doc: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"dynamodb:GetItem","Resource":"` + own.TableARN + `"},{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"` + own.QueueARN + `"}]}`,
			own: own, wantErr: "never grants access"},
		{name: "NotResource", doc: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"dynamodb:GetItem","NotResource":"` + own.TableARN + `"}]}`,
			own: own, wantErr: "NotAction/NotResource"},
		{name: "Deny statement", doc: strings.Replace(goodPolicy(own.TableARN, own.QueueARN, own.DeadLetterQueueARN), `"Effect":"Allow"`, `"Effect":"Deny"`, 1),
			own: own, wantErr: `Effect "Deny"`},
		{name: "unknown field", doc: `{"Version":"2012-10-17","Statement":[],"Extra":1}`, own: own, wantErr: "unknown field"},
		{name: "old version", doc: strings.Replace(goodPolicy(own.TableARN, own.QueueARN, own.DeadLetterQueueARN), "2012-10-17", "2008-10-17", 1),
			own: own, wantErr: "Version"},
		{name: "ARN unknown", doc: goodPolicy(own.TableARN, own.QueueARN, own.DeadLetterQueueARN),
			own: AppResources{TableARN: own.TableARN, QueueARN: own.QueueARN}, wantErr: "dead-letter queue's ARN is unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckRolePolicy(tt.doc, tt.own)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("want error containing %q, got none", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestCheckTrustPolicy(t *testing.T) {
	const (
		issuer   = "oidc.eks.eu-west-1.amazonaws.com/id/ABC"
		provider = "arn:aws:iam::111122223333:oidc-provider/" + issuer
	)
	trust := func(sub, op string) string {
		return `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + provider +
			`"},"Action":"sts:AssumeRoleWithWebIdentity","Condition":{"` + op + `":{"` + issuer + `:aud":"sts.amazonaws.com","` +
			issuer + `:sub":"` + sub + `"}}}]}`
	}
	tests := []struct {
		name, doc, wantErr string
	}{
		{name: "exact subject", doc: trust("system:serviceaccount:payments:payment-app", "StringEquals")},
		{name: "other account", doc: trust("system:serviceaccount:payments:other", "StringEquals"), wantErr: "want \"system:serviceaccount:payments:payment-app\""},
		{name: "other namespace", doc: trust("system:serviceaccount:kube-system:payment-app", "StringEquals"), wantErr: "StringEquals"},
		{name: "wildcard", doc: trust("system:serviceaccount:payments:*", "StringLike"), wantErr: "want only StringEquals"},
		{name: "other provider", doc: strings.Replace(trust("system:serviceaccount:payments:payment-app", "StringEquals"), "/id/ABC\"", "/id/XYZ\"", 1), wantErr: "Federated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTrustPolicy(tt.doc, provider, issuer, "payments", "payment-app")
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("want error containing %q, got none", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr bool
	}{
		{"payment-app", false},
		{strings.Repeat("a", MaxNameLength), false},
		{strings.Repeat("a", MaxNameLength+1), true},
		{"Payment", true},
		{"-x", true},
	}
	for _, tt := range tests {
		if err := ValidateName(tt.name); (err != nil) != tt.wantErr {
			t.Errorf("ValidateName(%q) = %v, wantErr %v", tt.name, err, tt.wantErr)
		}
	}
	// The longest names still make a valid IAM role name.
	long := RoleName(AppRolePrefix(strings.Repeat("h", 20)+"-spoke-", strings.Repeat("s", 20)), strings.Repeat("a", MaxNameLength))
	if len(long) != 64 {
		t.Errorf("longest role name has %d characters, want 64", len(long))
	}
}
