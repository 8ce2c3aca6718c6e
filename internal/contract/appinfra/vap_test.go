package appinfra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
)

// TestNameLengthPolicy evaluates the spoke's ValidatingAdmissionPolicy with
// CEL, as the API server does, after Flux's substitution, and requires it to
// admit exactly the claims NameBudget admits: on a short and on the longest
// cluster names, for every split of namespace and name around the budget.
func TestNameLengthPolicy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(manifests(t), Dir, "name-length-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	var vap struct {
		Spec struct {
			MatchConstraints struct {
				ResourceRules []struct {
					APIGroups []string `json:"apiGroups"`
					Resources []string `json:"resources"`
				} `json:"resourceRules"`
			} `json:"matchConstraints"`
			Validations []struct {
				Expression        string `json:"expression"`
				MessageExpression string `json:"messageExpression"`
			} `json:"validations"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(docs[0]), &vap); err != nil {
		t.Fatal(err)
	}
	rr := vap.Spec.MatchConstraints.ResourceRules
	if len(rr) != 1 || strings.Join(rr[0].APIGroups, ",") != Group || strings.Join(rr[0].Resources, ",") != ClaimPlural {
		t.Fatalf("the policy matches %+v, want %s %s", rr, Group, ClaimPlural)
	}
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	for _, hub := range []string{"mgmt", strings.Repeat("h", 20)} {
		for _, spoke := range []string{"apps-staging", strings.Repeat("s", 20)} {
			cluster, prefix := hub+"-"+spoke, AppRolePrefix(hub+"-spoke-", spoke)
			vars := map[string]string{spokeinfo.AppRolePrefix: prefix, spokeinfo.EKSClusterName: cluster}
			var progs []cel.Program
			for _, v := range vap.Spec.Validations {
				for _, expr := range []string{v.Expression, v.MessageExpression} {
					ast, iss := env.Compile(substitute(expr, vars))
					if iss.Err() != nil {
						t.Fatalf("%s: %v", expr, iss.Err())
					}
					p, err := env.Program(ast)
					if err != nil {
						t.Fatal(err)
					}
					if expr == v.Expression {
						progs = append(progs, p)
					}
				}
			}
			budget := NameBudget(cluster, prefix)
			for total := budget - 2; total <= budget+2; total++ {
				for _, nsLen := range []int{1, total / 2, total - 1} {
					ns, name := strings.Repeat("n", nsLen), strings.Repeat("a", total-nsLen)
					obj := map[string]any{"metadata": map[string]any{"namespace": ns, "name": name}}
					admitted := true
					for _, p := range progs {
						out, _, err := p.Eval(map[string]any{"object": obj})
						if err != nil {
							t.Fatal(err)
						}
						admitted = admitted && out.Value() == true
					}
					if want := ValidateName(cluster, prefix, ns, name) == nil; admitted != want {
						t.Errorf("cluster %s, namespace %d + name %d characters: policy admits %v, NameBudget %d says %v",
							cluster, len(ns), len(name), admitted, budget, want)
					}
				}
			}
		}
	}
}
