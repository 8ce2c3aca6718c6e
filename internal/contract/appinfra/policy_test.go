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

// At the longest hub and spoke names the validators admit, every name a
// claim within NameBudget makes fits its AWS limit, and one character more
// is refused; two namespaces' claims of one name never share a name.
func TestValidateName(t *testing.T) {
	hub, spoke := strings.Repeat("h", 20), strings.Repeat("s", 20)
	cluster, prefix := hub+"-"+spoke, AppRolePrefix(hub+"-spoke-", spoke)
	budget := NameBudget(cluster, prefix)
	if budget < 10 {
		t.Fatalf("budget %d at the longest names leaves no room", budget)
	}
	for _, tt := range []struct {
		ns, name string
		wantErr  bool
	}{
		{"payments", "payment-app", budget < len("paymentspayment-app")},
		{"t", strings.Repeat("a", budget-1), false},
		{"t", strings.Repeat("a", budget), true},
		{strings.Repeat("n", budget-1), "a", false},
		{"payments", "Payment", true},
		{"payments", "-x", true},
	} {
		err := ValidateName(cluster, prefix, tt.ns, tt.name)
		if (err != nil) != tt.wantErr {
			t.Errorf("ValidateName(%q, %q) = %v, wantErr %v", tt.ns, tt.name, err, tt.wantErr)
		}
		if err != nil {
			continue
		}
		if n := RoleName(prefix, tt.ns, tt.name); len(n) > MaxRoleNameLength {
			t.Errorf("role %s: %d characters", n, len(n))
		}
		if n := DeadLetterQueueName(cluster, tt.ns, tt.name); len(n) > MaxQueueNameLength {
			t.Errorf("queue %s: %d characters", n, len(n))
		}
	}
	// Exactly at the budget, the tightest name is exactly at its limit.
	ns, name := "t", strings.Repeat("a", budget-1)
	if len(RoleName(prefix, ns, name)) != MaxRoleNameLength && len(DeadLetterQueueName(cluster, ns, name)) != MaxQueueNameLength {
		t.Error("the budget is not tight: one of the names should be at its limit")
	}
	// Two teams' "orders" claims on one spoke.
	a, b := "team-a", "team-b"
	for _, pair := range [][2]string{
		{RoleName(prefix, a, "orders"), RoleName(prefix, b, "orders")},
		{TableName(cluster, a, "orders"), TableName(cluster, b, "orders")},
		{QueueName(cluster, a, "orders"), QueueName(cluster, b, "orders")},
		// namespace "a" with claim "b_c" cannot exist (no '_' in DNS labels),
		// so "a_b" + "c" and "a" + "b_c" never collide.
		{TableName(cluster, "a-b", "c"), TableName(cluster, "a", "b-c")},
	} {
		if pair[0] == pair[1] {
			t.Errorf("two claims share %s", pair[0])
		}
	}
}
