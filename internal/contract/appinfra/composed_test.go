package appinfra

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var expect = Expect{
	ClaimName: "payment-app", Namespace: "payments", ServiceAccount: "payment-app",
	SpokeName: "apps-staging", EKSClusterName: "mgmt-apps-staging", AppRolePrefix: AppRolePrefix("mgmt-spoke-", "apps-staging"),
	BoundaryARN:  "arn:aws:iam::111122223333:policy/mgmt-spoke-boundary",
	OIDCIssuer:   "oidc.eks.eu-west-1.amazonaws.com/id/SPOKE",
	OIDCProvider: "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/SPOKE",
	Own:          ObservedARNs("aws", "eu-west-1", "111122223333", "mgmt-apps-staging", "payments", "payment-app"),
	Partition:    "aws", Region: "eu-west-1", AccountID: "111122223333",
}

func obj(apiVersion, kind, template string, annotations map[string]string, forProvider map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"spec": map[string]any{"forProvider": forProvider}}}
	a := map[string]string{CompositionResourceNameKey: template}
	for k, v := range annotations {
		a[k] = v
	}
	u.SetAnnotations(a)
	return u
}

// steadyState is what a correct Composition renders once AWS answered.
func steadyState(e Expect) []*unstructured.Unstructured {
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"` + e.OIDCProvider +
		`"},"Action":"sts:AssumeRoleWithWebIdentity","Condition":{"StringEquals":{"` + e.OIDCIssuer + `:aud":"sts.amazonaws.com","` +
		e.OIDCIssuer + `:sub":"system:serviceaccount:payments:payment-app"}}}]}`
	role := RoleName(e.AppRolePrefix, e.Namespace, e.ClaimName)
	return []*unstructured.Unstructured{
		obj(TableAPIVersion, "Table", TemplateTable, map[string]string{ExternalNameKey: TableName(e.EKSClusterName, e.Namespace, e.ClaimName)}, map[string]any{}),
		obj(QueueAPIVersion, "Queue", TemplateDeadLetterQueue, nil, map[string]any{"name": DeadLetterQueueName(e.EKSClusterName, e.Namespace, e.ClaimName),
			"redriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["` + e.Own.QueueARN + `"]}`}),
		obj(QueueAPIVersion, "Queue", TemplateQueue, nil, map[string]any{"name": QueueName(e.EKSClusterName, e.Namespace, e.ClaimName),
			"redrivePolicy":      `{"deadLetterTargetArn":"` + e.Own.DeadLetterQueueARN + `","maxReceiveCount":5}`,
			"redriveAllowPolicy": `{"redrivePermission":"denyAll"}`}),
		obj(RoleAPIVersion, "Role", TemplateRole, map[string]string{ExternalNameKey: role},
			map[string]any{"permissionsBoundary": e.BoundaryARN, "assumeRolePolicy": trust, "tags": map[string]any{
				"eksfleet.io/spoke": e.SpokeName, "eksfleet.io/cluster": e.EKSClusterName, "eksfleet.io/oidc": e.OIDCIssuer}}),
		obj(RolePolicyAPIVersion, "RolePolicy", TemplateRolePolicy, nil, map[string]any{"role": role,
			"policy": goodPolicy(e.Own.TableARN, e.Own.QueueARN, e.Own.DeadLetterQueueARN)}),
	}
}

func TestCheckComposed(t *testing.T) {
	set := func(template string, path []string, value string) func([]*unstructured.Unstructured) []*unstructured.Unstructured {
		return func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			for _, u := range objs {
				if u.GetAnnotations()[CompositionResourceNameKey] == template {
					if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
						panic(err)
					}
				}
			}
			return objs
		}
	}
	tests := []struct {
		name    string
		edit    func([]*unstructured.Unstructured) []*unstructured.Unstructured
		expect  Expect
		wantErr string
	}{
		{name: "steady state", expect: expect},
		{name: "protected table kept", expect: func() Expect { e := expect; e.KeepTable = true; return e }(),
			edit: set(TemplateTable, []string{"spec", "deletionPolicy"}, "Orphan")},
		{name: "protected table deleted with the claim", expect: func() Expect { e := expect; e.KeepTable = true; return e }(),
			wantErr: `table deletionPolicy (deletion protection true) = "Delete", want "Orphan"`},
		{name: "unprotected table orphaned", expect: expect, edit: set(TemplateTable, []string{"spec", "deletionPolicy"}, "Orphan"),
			wantErr: `table deletionPolicy (deletion protection false) = "Orphan", want "Delete"`},
		{name: "policy on every table", expect: expect,
			edit:    set(TemplateRolePolicy, []string{"spec", "forProvider", "policy"}, goodPolicy("arn:aws:dynamodb:eu-west-1:111122223333:table/*", expect.Own.QueueARN, expect.Own.DeadLetterQueueARN)),
			wantErr: "is not one of the app's own resources"},
		{name: "no boundary", expect: expect, edit: set(TemplateRole, []string{"spec", "forProvider", "permissionsBoundary"}, ""),
			wantErr: "permissions boundary"},
		{name: "trusts another account", expect: expect,
			edit: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				for _, u := range objs {
					if u.GetKind() == "Role" {
						p, _, _ := unstructured.NestedString(u.Object, "spec", "forProvider", "assumeRolePolicy")
						_ = unstructured.SetNestedField(u.Object, strings.Replace(p, "payments:payment-app", "payments:default", 1), "spec", "forProvider", "assumeRolePolicy")
					}
				}
				return objs
			}, wantErr: "trust policy"},
		{name: "role name of another spoke", expect: expect,
			edit: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				objs[3].SetAnnotations(map[string]string{CompositionResourceNameKey: TemplateRole, ExternalNameKey: RoleName(AppRolePrefix("mgmt-spoke-", "other"), "payments", "payment-app")})
				return objs
			}, wantErr: "role name"},
		{name: "role of another namespace's claim of the same name", expect: expect,
			edit: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				objs[3].SetAnnotations(map[string]string{CompositionResourceNameKey: TemplateRole, ExternalNameKey: RoleName(expect.AppRolePrefix, "orders", "payment-app")})
				return objs
			}, wantErr: "role name"},
		{name: "table of another namespace", expect: expect,
			edit: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				objs[0].SetAnnotations(map[string]string{CompositionResourceNameKey: TemplateTable, ExternalNameKey: TableName(expect.EKSClusterName, "orders", "payment-app")})
				return objs
			}, wantErr: "table name"},
		{name: "role without the fence's spoke tag", expect: expect, edit: set(TemplateRole, []string{"spec", "forProvider", "tags", "eksfleet.io/spoke"}, "other"),
			wantErr: "role tag eksfleet.io/spoke"},
		{name: "redrive elsewhere", expect: expect, edit: set(TemplateQueue, []string{"spec", "forProvider", "redrivePolicy"}, `{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:111122223333:x","maxReceiveCount":5}`),
			wantErr: "redrive target"},
		{name: "dead-letter queue open to every queue", expect: expect,
			edit:    set(TemplateDeadLetterQueue, []string{"spec", "forProvider", "redriveAllowPolicy"}, `{"redrivePermission":"allowAll"}`),
			wantErr: "dead-letter queue redriveAllowPolicy"},
		{name: "dead-letter queue admits another team's queue", expect: expect,
			edit: set(TemplateDeadLetterQueue, []string{"spec", "forProvider", "redriveAllowPolicy"},
				`{"redrivePermission":"byQueue","sourceQueueArns":["`+ObservedARNs("aws", "eu-west-1", "111122223333", "mgmt-apps-staging", "orders", "payment-app").QueueARN+`"]}`),
			wantErr: "dead-letter queue redriveAllowPolicy"},
		{name: "main queue usable as a dead-letter queue", expect: expect,
			edit:    set(TemplateQueue, []string{"spec", "forProvider", "redriveAllowPolicy"}, ""),
			wantErr: "queue redriveAllowPolicy"},
		{name: "policy before ARNs", expect: func() Expect { e := expect; e.Own = AppResources{}; return e }(),
			wantErr: "before AWS reported"},
		{name: "missing role policy", expect: expect, edit: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured { return objs[:4] },
			wantErr: `no composed "role-policy"`},
		{name: "wrong kind", expect: expect, edit: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			objs[4].SetKind("Policy")
			return objs
		}, wantErr: "is a iam.aws.upbound.io/v1beta1/Policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := steadyState(expect)
			if tt.edit != nil {
				objs = tt.edit(objs)
			}
			err := CheckComposed(objs, tt.expect)
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
