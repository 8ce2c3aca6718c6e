package appinfra

import (
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"

	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// manifests returns the repository's manifests/ directory.
func manifests(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "manifests")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

func readObject(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// get walks a path of map keys and list indexes.
func get(t *testing.T, obj any, path ...any) any {
	t.Helper()
	cur := obj
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not an object", path)
			}
			cur = m[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: no item %d", path, k)
			}
			cur = l[k]
		}
	}
	return cur
}

func TestDefinitionMatchesGo(t *testing.T) {
	xrd := readObject(t, filepath.Join(manifests(t), Dir, "definition.yaml"))
	checks := []struct {
		path []any
		want any
	}{
		{[]any{"apiVersion"}, "apiextensions.crossplane.io/v1"},
		{[]any{"metadata", "name"}, XRDName},
		{[]any{"spec", "group"}, Group},
		{[]any{"spec", "names", "kind"}, CompositeKind},
		{[]any{"spec", "names", "plural"}, CompositePlural},
		{[]any{"spec", "claimNames", "kind"}, ClaimKind},
		{[]any{"spec", "claimNames", "plural"}, ClaimPlural},
		{[]any{"spec", "defaultCompositionRef", "name"}, CompositionName},
		{[]any{"spec", "versions", 0, "name"}, Version},
	}
	for _, c := range checks {
		if got := get(t, xrd, c.path...); got != c.want {
			t.Errorf("XRD %v = %v, want %v", c.path, got, c.want)
		}
	}
	comp := readObject(t, filepath.Join(manifests(t), Dir, "composition.yaml"))
	for _, c := range []struct {
		path []any
		want any
	}{
		{[]any{"metadata", "name"}, CompositionName},
		{[]any{"spec", "compositeTypeRef", "apiVersion"}, APIVersion},
		{[]any{"spec", "compositeTypeRef", "kind"}, CompositeKind},
		{[]any{"spec", "mode"}, "Pipeline"},
		{[]any{"spec", "pipeline", 0, "functionRef", "name"}, "function-patch-and-transform"},
		{[]any{"spec", "pipeline", 1, "functionRef", "name"}, "function-auto-ready"},
	} {
		if got := get(t, comp, c.path...); got != c.want {
			t.Errorf("Composition %v = %v, want %v", c.path, got, c.want)
		}
	}
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// TestVariablesDeclared keeps every ${VAR} of the app path in Variables(),
// the list the spoke's cluster-info must carry.
func TestVariablesDeclared(t *testing.T) {
	root := manifests(t)
	for _, dir := range []string{Dir, "apps/payment-app"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range varRef.FindAllStringSubmatch(string(b), -1) {
				// quote is set by spoke-tools/app-infra.yaml itself
				if !slices.Contains(Variables(), m[1]) && m[1] != spokeinfo.Quote {
					t.Errorf("%s uses ${%s}, which appinfra.Variables() does not list", path, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// template returns a P&T resource template of the Composition by name.
func template(t *testing.T, comp map[string]any, name string) map[string]any {
	t.Helper()
	for _, r := range get(t, comp, "spec", "pipeline", 0, "input", "resources").([]any) {
		if r.(map[string]any)["name"] == name {
			return r.(map[string]any)
		}
	}
	t.Fatalf("Composition has no resource %q", name)
	return nil
}

// combineFmt returns the fmt of the combine patch to toFieldPath.
func combineFmt(t *testing.T, tmpl map[string]any, toFieldPath string) (string, []string) {
	t.Helper()
	for _, p := range tmpl["patches"].([]any) {
		pm := p.(map[string]any)
		if pm["toFieldPath"] != toFieldPath || pm["type"] != "CombineFromComposite" {
			continue
		}
		if get(t, pm, "policy", "fromFieldPath") != "Required" {
			t.Errorf("%s patch to %s: want policy.fromFieldPath Required", tmpl["name"], toFieldPath)
		}
		var vars []string
		for _, v := range get(t, pm, "combine", "variables").([]any) {
			vars = append(vars, v.(map[string]any)["fromFieldPath"].(string))
		}
		return get(t, pm, "combine", "string", "fmt").(string), vars
	}
	t.Fatalf("%s has no combine patch to %s", tmpl["name"], toFieldPath)
	return "", nil
}

func substitute(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string { return vars[varRef.FindStringSubmatch(m)[1]] })
}

// exampleSpoke is the values a spoke's Flux substitutes, for offline checks.
var exampleSpoke = map[string]string{
	spokeinfo.AccountID: "111122223333", spokeinfo.Partition: "aws", spokeinfo.Region: "eu-west-1",
	spokeinfo.EKSClusterName: "mgmt-apps-staging", spokeinfo.AppRolePrefix: AppRolePrefix("mgmt-spoke-", "apps-staging"), spokeinfo.SpokeName: "apps-staging",
	spokeinfo.BoundaryARN:     "arn:aws:iam::111122223333:policy/mgmt-spoke-boundary",
	spokeinfo.OIDCIssuer:      "oidc.eks.eu-west-1.amazonaws.com/id/SPOKE0123456789",
	spokeinfo.OIDCProviderARN: "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/SPOKE0123456789",
}

// TestCompositionPolicies fills the Composition's policy templates the way
// function-patch-and-transform does (fmt.Sprintf) and holds them to the
// least-privilege rules.
func TestCompositionPolicies(t *testing.T) {
	comp := readObject(t, filepath.Join(manifests(t), Dir, "composition.yaml"))

	format, vars := combineFmt(t, template(t, comp, "role-policy"), "spec.forProvider.policy")
	if want := []string{"status.tableArn", "status.queueArn", "status.deadLetterQueueArn"}; !slices.Equal(vars, want) {
		t.Fatalf("role policy variables %v, want %v", vars, want)
	}
	doc := fmt.Sprintf(substitute(format, exampleSpoke), own.TableARN, own.QueueARN, own.DeadLetterQueueARN)
	if err := CheckRolePolicy(doc, own); err != nil {
		t.Errorf("the Composition's role policy: %v", err)
	}

	format, vars = combineFmt(t, template(t, comp, "role"), "spec.forProvider.assumeRolePolicy")
	if want := []string{"metadata.labels[" + ClaimNamespaceLabel + "]", "spec.serviceAccountName"}; !slices.Equal(vars, want) {
		t.Fatalf("trust policy variables %v, want %v", vars, want)
	}
	doc = fmt.Sprintf(substitute(format, exampleSpoke), "payments", "payment-app")
	if err := CheckTrustPolicy(doc, exampleSpoke[spokeinfo.OIDCProviderARN], exampleSpoke[spokeinfo.OIDCIssuer], "payments", "payment-app"); err != nil {
		t.Errorf("the Composition's trust policy: %v", err)
	}

	// Every name the Composition derives is the Go one, from the claim's
	// namespace and name in that order.
	nsName := []string{"metadata.labels[" + ClaimNamespaceLabel + "]", "metadata.labels[crossplane.io/claim-name]"}
	for _, n := range []struct {
		template, path string
		want           string
	}{
		{"role", "metadata.annotations[crossplane.io/external-name]", RoleName(exampleSpoke[spokeinfo.AppRolePrefix], "payments", "payment-app")},
		{"role-policy", "spec.forProvider.role", RoleName(exampleSpoke[spokeinfo.AppRolePrefix], "payments", "payment-app")},
		{"table", "metadata.annotations[crossplane.io/external-name]", TableName(exampleSpoke[spokeinfo.EKSClusterName], "payments", "payment-app")},
		{"queue", "spec.forProvider.name", QueueName(exampleSpoke[spokeinfo.EKSClusterName], "payments", "payment-app")},
		{"dead-letter-queue", "spec.forProvider.name", DeadLetterQueueName(exampleSpoke[spokeinfo.EKSClusterName], "payments", "payment-app")},
	} {
		format, vars := combineFmt(t, template(t, comp, n.template), n.path)
		if !slices.Equal(vars, nsName) {
			t.Errorf("%s %s from %v, want %v", n.template, n.path, vars, nsName)
		}
		if got := fmt.Sprintf(substitute(format, exampleSpoke), "payments", "payment-app"); got != n.want {
			t.Errorf("%s %s = %q, want %q", n.template, n.path, got, n.want)
		}
	}
	if got := get(t, template(t, comp, "role"), "base", "spec", "forProvider", "permissionsBoundary"); got != "${"+spokeinfo.BoundaryARN+"}" {
		t.Errorf("role permissionsBoundary %v, want ${%s}", got, spokeinfo.BoundaryARN)
	}
}

// TestPaymentAppMatchesClaim checks that the app's ServiceAccount is the one
// its claims' roles trust, annotates the role those claims make, and that
// the app reads the table and queue names the claims' resources get.
func TestPaymentAppMatchesClaim(t *testing.T) {
	root := filepath.Join(manifests(t), "apps/payment-app")
	sa := readObject(t, filepath.Join(root, "base/serviceaccount.yaml"))
	saName := get(t, sa, "metadata", "name").(string)
	deploy := readObject(t, filepath.Join(root, "base/deployment.yaml"))
	if got := get(t, deploy, "spec", "template", "spec", "serviceAccountName"); got != saName {
		t.Errorf("Deployment runs as %v, want the IRSA ServiceAccount %s", got, saName)
	}
	for _, overlay := range []string{"staging", "production"} {
		claim := readObject(t, filepath.Join(root, "overlays", overlay, "appinfrastructure.yaml"))
		name := get(t, claim, "metadata", "name").(string)
		ns := get(t, claim, "metadata", "namespace")
		if ns == nil {
			ns = "payments" // from the team's Kustomization
		}
		if err := ValidateName(exampleSpoke[spokeinfo.EKSClusterName], exampleSpoke[spokeinfo.AppRolePrefix], ns.(string), name); err != nil {
			t.Errorf("%s claim: %v", overlay, err)
		}
		if got := get(t, claim, "spec", "serviceAccountName"); got != saName {
			t.Errorf("%s claim trusts ServiceAccount %v, the app runs as %s", overlay, got, saName)
		}
		arn := substitute(get(t, sa, "metadata", "annotations", "eks.amazonaws.com/role-arn").(string), exampleSpoke)
		want := RoleARN("aws", exampleSpoke[spokeinfo.AccountID], exampleSpoke[spokeinfo.AppRolePrefix], ns.(string), name)
		if arn != want {
			t.Errorf("%s: ServiceAccount annotation %s, the claim's role is %s", overlay, arn, want)
		}
		// the app finds its table and queue by the names the claim's
		// resources get
		env := map[string]string{}
		for _, e := range get(t, deploy, "spec", "template", "spec", "containers", 0, "env").([]any) {
			e := e.(map[string]any)
			if v, ok := e["value"].(string); ok {
				env[e["name"].(string)] = substitute(v, exampleSpoke)
			}
		}
		cluster := exampleSpoke[spokeinfo.EKSClusterName]
		for k, want := range map[string]string{"TABLE_NAME": TableName(cluster, ns.(string), name), "QUEUE_NAME": QueueName(cluster, ns.(string), name)} {
			if env[k] != want {
				t.Errorf("%s: the app reads %s=%q, the claim's resource is %q", overlay, k, env[k], want)
			}
		}
	}
}

// TestTeamRoleIsNamespaced keeps team access least-privilege: a Role (never
// a ClusterRole binding), no wildcards, no RBAC or Secrets.
func TestTeamRoleIsNamespaced(t *testing.T) {
	dir := filepath.Join(manifests(t), "gitops-workloads/teams")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no teams")
	}
	for _, e := range entries {
		role := readObject(t, filepath.Join(dir, e.Name(), "role.yaml"))
		if role["kind"] != "Role" {
			t.Errorf("team %s: kind %v, want Role", e.Name(), role["kind"])
		}
		sawClaims := false
		for _, r := range role["rules"].([]any) {
			rule := r.(map[string]any)
			for _, field := range []string{"apiGroups", "resources", "verbs"} {
				for _, v := range rule[field].([]any) {
					s := v.(string)
					if strings.Contains(s, "*") || s == "escalate" || s == "bind" || s == "impersonate" ||
						s == "secrets" || s == "roles" || s == "rolebindings" || s == "rbac.authorization.k8s.io" {
						t.Errorf("team %s: Role grants %s %q", e.Name(), field, s)
					}
					if s == ClaimPlural {
						sawClaims = true
					}
				}
			}
		}
		if !sawClaims {
			t.Errorf("team %s: Role does not let the team manage %s", e.Name(), ClaimPlural)
		}
		rb := readObject(t, filepath.Join(dir, e.Name(), "rolebinding.yaml"))
		if get(t, rb, "roleRef", "kind") != "Role" || get(t, rb, "roleRef", "name") != get(t, role, "metadata", "name") {
			t.Errorf("team %s: RoleBinding must bind the team's Role, binds %v", e.Name(), rb["roleRef"])
		}
	}
}

// TestStatusARNsFromComposed: the ARNs the role policy names reach the
// composite's status only from the composed resources' own
// status.atProvider.arn, so the policy can name nothing but them.
func TestStatusARNsFromComposed(t *testing.T) {
	comp := readObject(t, filepath.Join(manifests(t), Dir, "composition.yaml"))
	want := map[string]string{"status.tableArn": TemplateTable, "status.queueArn": TemplateQueue,
		"status.deadLetterQueueArn": TemplateDeadLetterQueue}
	writers := map[string][]string{}
	for _, r := range get(t, comp, "spec", "pipeline", 0, "input", "resources").([]any) {
		tmpl := r.(map[string]any)
		for _, p := range tmpl["patches"].([]any) {
			pm := p.(map[string]any)
			to, _ := pm["toFieldPath"].(string)
			if _, ok := want[to]; !ok {
				continue
			}
			writers[to] = append(writers[to], fmt.Sprintf("%s %s from %v", tmpl["name"], pm["type"], pm["fromFieldPath"]))
			if pm["type"] != "ToCompositeFieldPath" || pm["fromFieldPath"] != "status.atProvider.arn" || tmpl["name"] != want[to] {
				t.Errorf("%s is written by %s %s from %v; want only %s's status.atProvider.arn", to, tmpl["name"], pm["type"], pm["fromFieldPath"], want[to])
			}
		}
	}
	for to := range want {
		if len(writers[to]) != 1 {
			t.Errorf("%s has writers %v, want exactly one", to, writers[to])
		}
	}
}

// jsonFields lists the json names of a struct type's fields.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func schemaFields(t *testing.T, schema any) []string {
	t.Helper()
	props, _ := get(t, schema, "properties").(map[string]any)
	var out []string
	for k := range props {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestGoTypesMatchXRD keeps the Go types and the XRD's schema field for
// field, so what fleet or a test writes is what the API accepts.
func TestGoTypesMatchXRD(t *testing.T) {
	xrd := readObject(t, filepath.Join(manifests(t), Dir, "definition.yaml"))
	root := get(t, xrd, "spec", "versions", 0, "schema", "openAPIV3Schema", "properties")
	spec := get(t, root, "spec")
	for _, c := range []struct {
		name   string
		schema any
		typ    reflect.Type
	}{
		{"spec", spec, reflect.TypeOf(Spec{})},
		{"spec.table", get(t, spec, "properties", "table"), reflect.TypeOf(Table{})},
		{"spec.queue", get(t, spec, "properties", "queue"), reflect.TypeOf(Queue{})},
		{"status", get(t, root, "status"), reflect.TypeOf(Status{})},
	} {
		if got, want := jsonFields(c.typ), schemaFields(t, c.schema); !slices.Equal(got, want) {
			t.Errorf("%s: Go fields %v, XRD fields %v", c.name, got, want)
		}
	}
	// Every overlay's claim decodes into the Go type without unknown fields.
	for _, overlay := range []string{"staging", "production"} {
		b, err := os.ReadFile(filepath.Join(manifests(t), "apps/payment-app/overlays", overlay, "appinfrastructure.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var c Claim
		if err := yaml.UnmarshalStrict(b, &c); err != nil {
			t.Errorf("%s claim: %v", overlay, err)
		}
		if c.APIVersion != APIVersion || c.Kind != ClaimKind {
			t.Errorf("%s claim is %s %s, want %s %s", overlay, c.APIVersion, c.Kind, APIVersion, ClaimKind)
		}
	}
}
