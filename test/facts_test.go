package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/appinfra"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// The facts checks hold the manifests to the Go packages that name things
// once (internal/contract/spokeinfo, internal/contract/clusterinfo, internal/contract/versions). They
// read the files as text and YAML, without building: the offline proof
// (TestProof) builds and validates what Flux applies; these catch what a
// build cannot tell, such as a spoke-info key Go does not know, or a chart
// pinned to another release than the one whose CRDs the proof reads.

// factCheck is one check over a manifests/ tree; it returns its problems.
type factCheck struct {
	name string
	run  func(t *testing.T, tree string) []string
}

var factChecks = []factCheck{
	{"spoke-info-keys", checkSpokeInfoKeys},
	{"bootstrap-substitute", checkBootstrapSubstitute},
	{"variables", checkVariables},
	{"kubernetes-versions", checkKubernetesVersions},
	{"reserved-tags", checkReservedTags},
	{"chart-versions", checkChartVersions},
	{"package-versions", checkPackageVersions},
	{"teardown-timeouts", checkTeardownTimeouts},
	{"function-input", checkFunctionInput},
}

// TestFacts runs every facts check on the repository's tree.
func TestFacts(t *testing.T) {
	for _, c := range factChecks {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range c.run(t, "../manifests") {
				t.Error(p)
			}
		})
	}
	t.Run("go-names", func(t *testing.T) {
		// The app path's variables are ones spoke-info carries.
		for _, v := range appinfra.Variables() {
			if !slices.Contains(spokeinfo.Names(), v) {
				t.Errorf("appinfra.Variables() has %s, which spoke-info does not carry (spokeinfo.Names())", v)
			}
		}
		if ex := clusterinfo.Example(); ex.FluxVersion != versions.Flux || ex.FluxOperatorVersion != versions.FluxOperator {
			t.Errorf("clusterinfo.Example() Flux %s / operator %s, want versions %s / %s", ex.FluxVersion, ex.FluxOperatorVersion, versions.Flux, versions.FluxOperator)
		}
	})
}

// TestFactsPlanted plants one error per check in a copy of the repository's
// tree and asserts the check reports it.
func TestFactsPlanted(t *testing.T) {
	const (
		spokeInfo  = "gitops-system/spoke-bootstrap/flux/spoke-info.yaml"
		definition = "gitops-system/platform-apis/workload-cluster/definition.yaml"
	)
	const wcComposition = "gitops-system/platform-apis/workload-cluster/composition.yaml"
	cases := []struct {
		name  string
		check string
		edits []plant.Edit
		want  string
	}{
		{"spoke-info key Go does not name", "spoke-info-keys",
			[]plant.Edit{{File: spokeInfo, Old: "  GITOPS_SYSTEM_PATH:", New: "  SPOKE_EXTRA: ${quote}x${quote}\n  GITOPS_SYSTEM_PATH:"}}, "SPOKE_EXTRA"},
		{"spoke-info key missing", "spoke-info-keys",
			[]plant.Edit{{File: spokeInfo, Old: "  SPOKE_VPC_ID: ${quote}${SPOKE_VPC_ID}${quote}\n", New: ""}}, "SPOKE_VPC_ID"},
		{"spoke-info value unquoted", "spoke-info-keys",
			[]plant.Edit{{File: spokeInfo, Old: "ACCOUNT_ID: ${quote}${ACCOUNT_ID}${quote}", New: `ACCOUNT_ID: "${ACCOUNT_ID}"`}}, "ACCOUNT_ID"},
		{"spoke tool uses an unknown variable", "variables",
			[]plant.Edit{{File: "gitops-system/spoke-tools/crossplane/namespace.yaml", Old: "name: crossplane-system", New: "name: crossplane-system\n  labels:\n    owner: ${OWNER}"}}, "${OWNER}"},
		{"hub uses a spoke variable", "variables",
			[]plant.Edit{{File: "gitops-system/infrastructure/crossplane/namespace.yaml", Old: "name: crossplane-system", New: "name: crossplane-system\n  labels:\n    spoke: ${CLUSTER_NAME}"}}, "${CLUSTER_NAME}"},
		{"app uses a hub-only variable", "variables",
			[]plant.Edit{{File: "apps/payment-app/base/deployment.yaml", Old: "value: ${SPOKE_REGION}", New: "value: ${FLUX_ROLE_ARN}"}}, "${FLUX_ROLE_ARN}"},
		{"XRD allows a version Go does not", "kubernetes-versions",
			[]plant.Edit{{File: definition, Old: `enum: ["1.34", "1.35", "1.36"]`, New: `enum: ["1.33", "1.34", "1.35", "1.36"]`}}, "1.33"},
		{"XRD lets a claim set the load balancer controller's cluster tag", "reserved-tags",
			[]plant.Edit{{File: definition, Old: "'elbv2.k8s.aws/', ", New: ""}}, "fence.ReservedTagsCEL"},
		{"XRD compares a reserved prefix case-sensitively", "reserved-tags",
			[]plant.Edit{{File: definition, Old: "k.lowerAscii().startsWith(p)", New: "k.startsWith(p)"}}, "fence.ReservedTagsCEL"},
		{"XRD default differs", "kubernetes-versions",
			[]plant.Edit{{File: definition, Old: `default: "1.35"`, New: `default: "1.34"`}}, "default"},
		{"ESO chart behind the release", "chart-versions",
			[]plant.Edit{{File: "gitops-system/infrastructure/external-secrets/release.yaml", Old: `version: "` + versions.ExternalSecrets + `"`, New: `version: "0.0.1"`}}, "0.0.1"},
		{"image override on a chart that runs its own", "chart-versions",
			[]plant.Edit{{File: "gitops-system/infrastructure/crossplane/release.yaml", Old: "  values:\n", New: "  values:\n    image:\n      tag: v2.2.0\n"}}, "image"},
		{"LBC chart not in versions", "chart-versions",
			[]plant.Edit{{File: "gitops-system/spoke-tools/aws-load-balancer-controller/release.yaml", Old: `version: "1.14.0"`, New: `version: "1.13.4"`}}, "1.13.4"},
		{"Sealed Secrets image differs", "chart-versions",
			[]plant.Edit{{File: "gitops-system/spoke-bootstrap/sealed-secrets/release.yaml", Old: "tag: 0.36.6", New: "tag: 0.36.5"}}, "0.36.5"},
		{"flux-operator tag hard-coded", "chart-versions",
			[]plant.Edit{{File: "gitops-system/infrastructure/sources/flux-operator.yaml", Old: "tag: ${quote}${FLUX_OPERATOR_VERSION}${quote}", New: "tag: 0.58.0"}}, "FLUX_OPERATOR_VERSION"},
		{"provider tag differs", "package-versions",
			[]plant.Edit{{File: "gitops-system/spoke-tools/crossplane-packages/providers.yaml", Old: "provider-aws-sqs:v" + versions.ProviderAWS, New: "provider-aws-sqs:v0.0.1"}}, "v0.0.1"},
		{"function tag differs", "package-versions",
			[]plant.Edit{{File: "gitops-system/infrastructure/crossplane-packages/functions.yaml", Old: "function-auto-ready:v" + versions.FunctionAutoReady, New: "function-auto-ready:v0.0.1"}}, "v0.0.1"},
		{"function input reads another variable", "function-input",
			[]plant.Edit{{File: wcComposition, Old: "hubName: ${quote}${HUB_CLUSTER_NAME}${quote}", New: "hubName: ${quote}${HUB_VPC_CIDR}${quote}"}}, "HUB_VPC_CIDR"},
		{"function input field missing", "function-input",
			[]plant.Edit{{File: wcComposition, Old: "        gitopsSystemPath: ${quote}${GITOPS_SYSTEM_PATH}${quote}\n", New: ""}}, "gitopsSystemPath"},
		{"function input string unquoted", "function-input",
			[]plant.Edit{{File: wcComposition, Old: "accountId: ${quote}${ACCOUNT_ID}${quote}", New: "accountId: ${ACCOUNT_ID}"}}, "accountId"},
		{"a second step after the function", "function-input",
			[]plant.Edit{{File: wcComposition, Old: "    - step: workload-cluster\n", New: "    - step: auto-ready\n      functionRef:\n        name: function-auto-ready\n    - step: workload-cluster\n"}}, "one step"},
		{"managementPolicies back in the tree", "function-input",
			[]plant.Edit{{File: "gitops-system/spoke-tools/crossplane-packages/providers.yaml", Old: "spec:\n", New: "spec:\n  managementPolicies: []\n"}}, "managementPolicies"},
		{"own function tag differs from Go", "package-versions",
			[]plant.Edit{{File: "gitops-system/infrastructure/crossplane-packages/functions.yaml", Old: "function-workload-cluster:" + versions.WorkloadClusterFunction, New: "function-workload-cluster:v0.0.9"}}, "v0.0.9"},
		{"own function registry hard-coded", "package-versions",
			[]plant.Edit{{File: "gitops-system/infrastructure/crossplane-packages/functions.yaml", Old: "${FUNCTION_REGISTRY}/function-workload-cluster", New: "ghcr.io/gitops-fleet/eks-fleet/function-workload-cluster"}}, clusterinfo.FunctionRegistry},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := slices.IndexFunc(factChecks, func(f factCheck) bool { return f.name == c.check })
			if i < 0 {
				t.Fatalf("no facts check %q", c.check)
			}
			tree := plant.Repo(t, c.edits...)
			problems := factChecks[i].run(t, tree)
			found := false
			for _, p := range problems {
				found = found || strings.Contains(p, c.want)
			}
			if !found {
				t.Errorf("check %s did not report %q; problems: %q", c.check, c.want, problems)
			}
		})
	}
}

// TestBootstrapSubstitutePlanted plants errors into the function's rendered
// bootstrap Kustomizations: the bootstrap-substitute check must report a
// variable missing and quote missing (the values come from Go, so the plant
// is in the rendered objects, not the tree).
func TestBootstrapSubstitutePlanted(t *testing.T) {
	objs, err := renderExampleClaim("../manifests")
	if err != nil {
		t.Fatal(err)
	}
	if p := bootstrapSubstituteProblems(objs); len(p) > 0 {
		t.Fatalf("repository tree: %q", p)
	}
	for _, c := range []struct{ name, drop, want string }{
		{"bootstrap variable not substituted", spokeinfo.VPCID, spokeinfo.VPCID},
		{"bootstrap step without quote", spokeinfo.Quote, spokeinfo.Quote},
	} {
		t.Run(c.name, func(t *testing.T) {
			planted := make([]*unstructured.Unstructured, len(objs))
			done := false
			for i, o := range objs {
				planted[i] = o
				if !done && o.GetKind() == "Kustomization" {
					planted[i] = o.DeepCopy()
					unstructured.RemoveNestedField(planted[i].Object, "spec", "postBuild", "substitute", c.drop)
					done = true
				}
			}
			problems := bootstrapSubstituteProblems(planted)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("check did not report %q; problems: %q", c.want, problems)
			}
		})
	}
}

// checkFunctionInput: the WorkloadCluster Composition is one step calling
// function-workload-cluster, whose input is exactly compose.InputVariables:
// each field the ${VAR} Flux substitutes from cluster-info, strings written
// quote-VAR-quote (so an account ID stays a string). Nothing in the tree
// pauses a composed resource with managementPolicies (the function composes
// only what is in use).
func checkFunctionInput(t *testing.T, tree string) []string {
	var problems []string
	// Fields whose value is a YAML value, not a string: compose.Input's
	// fields of any other Go type.
	values := map[string]bool{}
	in := reflect.TypeOf(compose.Input{})
	for i := range in.NumField() {
		if f := in.Field(i); f.Type.Kind() != reflect.String {
			values[strings.Split(f.Tag.Get("json"), ",")[0]] = true
		}
	}
	n := 0
	for _, d := range factReadDocs(t, tree, "gitops-system/platform-apis") {
		if !factIsKind(d, "apiextensions.crossplane.io", "Composition") || factStr(d.obj, "spec", "compositeTypeRef", "kind") != "XWorkloadCluster" {
			continue
		}
		n++
		pipeline, _ := factField(d.obj, "spec", "pipeline").([]any)
		if len(pipeline) != 1 || factStr(pipeline[0], "functionRef", "name") != versions.WorkloadClusterFunctionPackage {
			problems = append(problems, fmt.Sprintf("%s: want one step calling %s, got %d steps", d.file, versions.WorkloadClusterFunctionPackage, len(pipeline)))
			continue
		}
		input, _ := factField(pipeline[0], "input").(map[string]any)
		vars := compose.InputVariables()
		for k, v := range input {
			if k == "apiVersion" || k == "kind" {
				continue
			}
			want, ok := vars[k]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: function input %s is no field of compose.Input", d.file, k))
				continue
			}
			w := "${" + want + "}"
			if !values[k] {
				w = "${" + spokeinfo.Quote + "}" + w + "${" + spokeinfo.Quote + "}"
			}
			if s, _ := v.(string); s != w {
				problems = append(problems, fmt.Sprintf("%s: function input %s = %v, want %s (cluster-info %s)", d.file, k, v, w, want))
			}
		}
		for k, want := range vars {
			if _, ok := input[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s: function input lacks %s (cluster-info %s)", d.file, k, want))
			}
		}
	}
	if n != 1 {
		problems = append(problems, fmt.Sprintf("%d XWorkloadCluster Compositions in platform-apis, want 1", n))
	}
	err := factWalkYAML(tree, "gitops-system", func(rel string, b []byte) error {
		if bytes.Contains(factComment.ReplaceAll(b, nil), []byte("managementPolicies")) {
			problems = append(problems, fmt.Sprintf("%s: managementPolicies: the function composes only what is in use", rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

// factDoc is one document of a YAML file of the tree.
type factDoc struct {
	file string // relative to manifests/, slash-separated
	obj  map[string]any
}

// factReadDocs returns every YAML document under dirs (relative to tree).
func factReadDocs(t *testing.T, tree string, dirs ...string) []factDoc {
	t.Helper()
	var out []factDoc
	for _, dir := range dirs {
		err := factWalkYAML(tree, dir, func(rel string, b []byte) error {
			dec := yaml.NewDecoder(bytes.NewReader(b))
			for {
				var obj map[string]any
				err := dec.Decode(&obj)
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("%s: %w", rel, err)
				}
				if obj != nil {
					out = append(out, factDoc{rel, obj})
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func factWalkYAML(tree, dir string, fn func(rel string, b []byte) error) error {
	root := filepath.Join(tree, filepath.FromSlash(dir))
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), b)
	})
}

// factField returns the value at path (map keys) of obj, or nil.
func factField(obj any, path ...string) any {
	for _, k := range path {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[k]
	}
	return obj
}

func factStr(obj any, path ...string) string {
	s, _ := factField(obj, path...).(string)
	return s
}

func factIsKind(d factDoc, group, kind string) bool {
	return d.obj["kind"] == kind && strings.HasPrefix(factStr(d.obj, "apiVersion"), group+"/")
}

func factSortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// factDiffNames reports names only in got or only in want.
func factDiffNames(what string, got, want []string) []string {
	var out []string
	for _, g := range got {
		if !slices.Contains(want, g) {
			out = append(out, fmt.Sprintf("%s has %s, which Go does not name", what, g))
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, fmt.Sprintf("%s lacks %s, which Go names", what, w))
		}
	}
	return out
}

var factQuoted = regexp.MustCompile(`^\$\{quote\}.*\$\{quote\}$`)

// checkSpokeInfoKeys: the keys of spoke-bootstrap/flux/spoke-info.yaml are
// spokeinfo.Names(), and every value is wrapped in ${quote}.
func checkSpokeInfoKeys(t *testing.T, tree string) []string {
	const file = "gitops-system/spoke-bootstrap/flux"
	var problems []string
	found := false
	for _, d := range factReadDocs(t, tree, file) {
		if d.obj["kind"] != "ConfigMap" || factStr(d.obj, "metadata", "name") != spokeinfo.Name {
			continue
		}
		found = true
		if ns := factStr(d.obj, "metadata", "namespace"); ns != spokeinfo.Namespace {
			problems = append(problems, fmt.Sprintf("%s: namespace %q, want %q", d.file, ns, spokeinfo.Namespace))
		}
		data, _ := d.obj["data"].(map[string]any)
		keys := map[string]bool{}
		for k, v := range data {
			keys[k] = true
			if s, ok := v.(string); !ok || !factQuoted.MatchString(s) {
				problems = append(problems, fmt.Sprintf("%s: %s = %v: write ${quote}...${quote} so that Flux's substitution keeps it a string", d.file, k, v))
			}
		}
		problems = append(problems, factDiffNames(d.file+" data", factSortedKeys(keys), spokeinfo.Names())...)
	}
	if !found {
		problems = append(problems, fmt.Sprintf("no ConfigMap %s under %s", spokeinfo.Name, file))
	}
	return problems
}

// checkBootstrapSubstitute: every bootstrap Kustomization the function
// composes for the example claim substitutes exactly the bootstrap
// variables spoke-bootstrap uses (spokeinfo.BootstrapNames) and quote.
func checkBootstrapSubstitute(t *testing.T, tree string) []string {
	objs, err := renderExampleClaim(tree)
	if err != nil {
		return []string{err.Error()}
	}
	return bootstrapSubstituteProblems(objs)
}

// bootstrapSubstituteProblems checks the composed bootstrap Kustomizations
// among objs (see checkBootstrapSubstitute).
func bootstrapSubstituteProblems(objs []*unstructured.Unstructured) []string {
	var problems []string
	n := 0
	for _, o := range objs {
		if o.GetKind() != "Kustomization" || !strings.HasPrefix(o.GetAPIVersion(), "kustomize.toolkit.fluxcd.io/") {
			continue
		}
		n++
		subst, _, _ := unstructured.NestedMap(o.Object, "spec", "postBuild", "substitute")
		if q, ok := subst[spokeinfo.Quote]; !ok || q != spokeinfo.QuoteValue {
			problems = append(problems, fmt.Sprintf("composed Kustomization %s: postBuild.substitute.%s = %v, want %q", o.GetName(), spokeinfo.Quote, q, spokeinfo.QuoteValue))
		}
		names := map[string]bool{}
		for k := range subst {
			names[k] = true
		}
		problems = append(problems, factDiffNames(fmt.Sprintf("composed Kustomization %s postBuild.substitute", o.GetName()), factSortedKeys(names), spokeinfo.BootstrapNames())...)
	}
	if n == 0 {
		problems = append(problems, "the function composes no bootstrap Kustomization for the example claim")
	}
	return problems
}

var (
	factVarUse       = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	factComment      = regexp.MustCompile(`(?m)^\s*#.*$`)
	factDeployKeyDir = regexp.MustCompile(`^gitops-workloads/clusters/[^/]+/flux-system/`)
)

// checkVariables: every ${VAR} in the hub's part of the system tree is a
// cluster-info name, in spoke-bootstrap a cluster-info or bootstrap name,
// and in what the spoke's own Flux applies (spoke-tools, workloads, apps)
// a spoke-info name; a Flux Kustomization's own postBuild.substitute keys
// count as names for the part of the tree it is in.
func checkVariables(t *testing.T, tree string) []string {
	hub := []string{"gitops-system/clusters/mgmt", "gitops-system/infrastructure", "gitops-system/platform-apis", "gitops-system/workload-clusters"}
	spoke := []string{"gitops-system/spoke-tools", "gitops-workloads", "apps"}
	bootstrap := []string{"gitops-system/spoke-bootstrap"}
	// The deploy key step is a spoke-bootstrap step that reads the workloads tree.
	isBootstrap := func(rel string) bool {
		return strings.HasPrefix(rel, "gitops-system/spoke-bootstrap/") || factDeployKeyDir.MatchString(rel)
	}
	local := func(dirs []string) []string {
		var out []string
		for _, d := range factReadDocs(t, tree, dirs...) {
			if !factIsKind(d, "kustomize.toolkit.fluxcd.io", "Kustomization") {
				continue
			}
			subst, _ := factField(d.obj, "spec", "postBuild", "substitute").(map[string]any)
			for k := range subst {
				out = append(out, k)
			}
		}
		return out
	}
	zones := []struct {
		what    string
		dirs    []string
		allowed []string
		match   func(rel string) bool
	}{
		{"a hub file (substituteFrom cluster-info)", hub, append(clusterinfo.Names(), local(hub)...), func(string) bool { return true }},
		{"a spoke-bootstrap file (cluster-info and the Composition's substitute)", append(bootstrap, "gitops-workloads/clusters"),
			slices.Concat(clusterinfo.Names(), spokeinfo.BootstrapNames(), sealingkey.SpokeVariables()), isBootstrap},
		{"a file the spoke's Flux applies (substituteFrom spoke-info)", spoke, append(spokeinfo.Names(), local(spoke)...),
			func(rel string) bool { return !isBootstrap(rel) }},
	}
	var problems []string
	for _, z := range zones {
		for _, dir := range z.dirs {
			err := factWalkYAML(tree, dir, func(rel string, b []byte) error {
				if !z.match(rel) {
					return nil
				}
				seen := map[string]bool{}
				for _, m := range factVarUse.FindAllStringSubmatch(factComment.ReplaceAllString(string(b), ""), -1) {
					if !slices.Contains(z.allowed, m[1]) && !seen[m[1]] {
						seen[m[1]] = true
						problems = append(problems, fmt.Sprintf("%s uses ${%s}, which is not a variable of %s", rel, m[1], z.what))
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return problems
}

// checkKubernetesVersions: the WorkloadCluster XRD's kubernetesVersion enum
// and default are versions.Kubernetes() and versions.DefaultKubernetes.
func checkKubernetesVersions(t *testing.T, tree string) []string {
	var problems []string
	found := forXRDSpecField(t, tree, "kubernetesVersion", func(file string, kv any) {
		var enum []string
		list, _ := factField(kv, "enum").([]any)
		for _, e := range list {
			enum = append(enum, fmt.Sprint(e))
		}
		if !slices.Equal(enum, versions.Kubernetes()) {
			problems = append(problems, fmt.Sprintf("%s: kubernetesVersion enum %v, want versions.Kubernetes() %v", file, enum, versions.Kubernetes()))
		}
		if def := fmt.Sprint(factField(kv, "default")); def != versions.DefaultKubernetes {
			problems = append(problems, fmt.Sprintf("%s: kubernetesVersion default %s, want versions.DefaultKubernetes %s", file, def, versions.DefaultKubernetes))
		}
	})
	if !found {
		problems = append(problems, "no XRD under gitops-system/platform-apis has spec.kubernetesVersion")
	}
	return problems
}

// forXRDSpecField calls fn with the schema of spec.<name> in every version
// of every XRD under gitops-system/platform-apis, and reports whether any
// had it.
func forXRDSpecField(t *testing.T, tree, name string, fn func(file string, schema any)) bool {
	found := false
	for _, d := range factReadDocs(t, tree, "gitops-system/platform-apis") {
		if !factIsKind(d, "apiextensions.crossplane.io", "CompositeResourceDefinition") {
			continue
		}
		vs, _ := factField(d.obj, "spec", "versions").([]any)
		for _, v := range vs {
			if sch := factField(v, "schema", "openAPIV3Schema", "properties", "spec", "properties", name); sch != nil {
				found = true
				fn(d.file, sch)
			}
		}
	}
	return found
}

// checkReservedTags: the WorkloadCluster XRD refuses, in spec.tags, every
// key fence.ReservedTagPrefixes reserves, with the rule and message the
// fence package writes (TestClaimTagsCannotCarryFenceKeys runs the rule on
// the real CEL).
func checkReservedTags(t *testing.T, tree string) []string {
	var problems []string
	found := forXRDSpecField(t, tree, "tags", func(file string, tags any) {
		rules, _ := factField(tags, "x-kubernetes-validations").([]any)
		want := []string{fence.ReservedTagsCEL() + "\n" + fence.ReservedTagsMessage() + "\n<nil>"}
		var got []string
		for _, r := range rules {
			got = append(got, fmt.Sprint(factField(r, "rule"))+"\n"+fmt.Sprint(factField(r, "message"))+"\n"+fmt.Sprint(factField(r, "messageExpression")))
		}
		if !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s: spec.tags validations\n%q\nwant the rule fence.ReservedTagsCEL() and message fence.ReservedTagsMessage(), no messageExpression\n%q", file, got, want))
		}
	})
	if !found {
		problems = append(problems, "no XRD under gitops-system/platform-apis has spec.tags")
	}
	return problems
}

// checkChartVersions: every HelmRelease of the system tree installs a chart
// version internal/contract/versions pins, runs the chart's own image unless the
// chart lags the pinned release (Sealed Secrets, image.tag the release),
// and the Flux Operator chart comes from the OCIRepository whose tag is
// ${FLUX_OPERATOR_VERSION}. The Sealed Secrets chart is the one in the
// pinned release's module, whose CRD the proof validates against.
func checkChartVersions(t *testing.T, tree string) []string {
	type pin struct {
		chart, image string // image "": no override
	}
	pins := map[string]pin{
		"crossplane":                   {versions.Crossplane, ""},
		"external-secrets":             {versions.ExternalSecrets, ""},
		"sealed-secrets":               {versions.SealedSecretsChart, versions.SealedSecrets},
		"aws-load-balancer-controller": {versions.AWSLoadBalancerControllerChart, ""},
	}
	var problems []string
	seen := map[string]bool{}
	docs := factReadDocs(t, tree, "gitops-system")
	for _, d := range docs {
		if !factIsKind(d, "helm.toolkit.fluxcd.io", "HelmRelease") {
			continue
		}
		name := factStr(d.obj, "metadata", "name")
		if ref := factField(d.obj, "spec", "chartRef"); ref != nil {
			if factStr(ref, "kind") != "OCIRepository" || factStr(ref, "name") != "flux-operator" {
				problems = append(problems, fmt.Sprintf("%s: HelmRelease %s: chartRef %v is not the flux-operator OCIRepository", d.file, name, ref))
			}
			seen["flux-operator"] = true
			continue
		}
		chart := factStr(d.obj, "spec", "chart", "spec", "chart")
		version := fmt.Sprint(factField(d.obj, "spec", "chart", "spec", "version"))
		p, ok := pins[chart]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: HelmRelease %s installs chart %q, which internal/contract/versions does not pin", d.file, name, chart))
			continue
		}
		seen[chart] = true
		if version != p.chart {
			problems = append(problems, fmt.Sprintf("%s: HelmRelease %s: chart %s version %s, want %s (internal/contract/versions)", d.file, name, chart, version, p.chart))
		}
		image := factField(d.obj, "spec", "values", "image")
		switch tag := fmt.Sprint(factField(image, "tag")); {
		case p.image == "" && image != nil:
			problems = append(problems, fmt.Sprintf("%s: HelmRelease %s: values.image overrides the image of chart %s %s, which already runs the pinned release", d.file, name, chart, version))
		case p.image != "" && tag != p.image:
			problems = append(problems, fmt.Sprintf("%s: HelmRelease %s: values.image.tag %s, want %s (internal/contract/versions)", d.file, name, tag, p.image))
		}
	}
	for _, d := range docs {
		if factIsKind(d, "source.toolkit.fluxcd.io", "OCIRepository") && factStr(d.obj, "metadata", "name") == "flux-operator" {
			tag := factStr(d.obj, "spec", "ref", "tag")
			if want := "${" + clusterinfo.FluxOperatorVersion + "}"; strings.ReplaceAll(tag, "${"+spokeinfo.Quote+"}", "") != want {
				problems = append(problems, fmt.Sprintf("%s: OCIRepository flux-operator ref.tag %q, want %s (versions.FluxOperator through cluster-info)", d.file, tag, want))
			}
		}
		if factIsKind(d, "fluxcd.controlplane.io", "FluxInstance") {
			v := factStr(d.obj, "spec", "distribution", "version")
			if want := "${" + clusterinfo.FluxVersion + "}"; strings.ReplaceAll(v, "${"+spokeinfo.Quote+"}", "") != want {
				problems = append(problems, fmt.Sprintf("%s: FluxInstance distribution.version %q, want %s (versions.Flux through cluster-info)", d.file, v, want))
			}
		}
	}
	for _, c := range []string{"crossplane", "external-secrets", "sealed-secrets", "aws-load-balancer-controller", "flux-operator"} {
		if !seen[c] {
			problems = append(problems, fmt.Sprintf("no HelmRelease in gitops-system installs %s", c))
		}
	}
	// The Sealed Secrets chart is the pinned release's own.
	dir, err := upstream.Dir(context.Background(), upstream.SealedSecretsModule, "v"+versions.SealedSecrets)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "helm", "sealed-secrets", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version string `yaml:"version"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != versions.SealedSecretsChart {
		problems = append(problems, fmt.Sprintf("versions.SealedSecretsChart %s, but sealed-secrets v%s holds chart %s", versions.SealedSecretsChart, versions.SealedSecrets, chart.Version))
	}
	return problems
}

var factPackageRef = regexp.MustCompile(`^xpkg\.crossplane\.io/crossplane-contrib/([a-z0-9-]+):(v[0-9.]+)$`)

// ownFunctionRef is this project's function as the hub installs it: from
// the registry cluster-info names, at versions.WorkloadClusterFunction.
var ownFunctionRef = "${" + clusterinfo.FunctionRegistry + "}/" + versions.WorkloadClusterFunctionPackage + ":" + versions.WorkloadClusterFunction

// checkPackageVersions: every Crossplane Provider is a provider-upjet-aws
// family member at versions.ProviderAWS, every Function is
// patch-and-transform or auto-ready at its pinned release, or this
// project's function at versions.WorkloadClusterFunction (exactly one).
func checkPackageVersions(t *testing.T, tree string) []string {
	var problems []string
	n, own := 0, 0
	for _, d := range factReadDocs(t, tree, "gitops-system") {
		isProvider, isFunction := factIsKind(d, "pkg.crossplane.io", "Provider"), factIsKind(d, "pkg.crossplane.io", "Function")
		if !isProvider && !isFunction {
			continue
		}
		n++
		pkg := factStr(d.obj, "spec", "package")
		if isFunction && strings.Contains(pkg, versions.WorkloadClusterFunctionPackage) {
			own++
			if pkg != ownFunctionRef {
				problems = append(problems, fmt.Sprintf("%s: Function package %q, want %q (cluster-info %s, internal/contract/versions.WorkloadClusterFunction)", d.file, pkg, ownFunctionRef, clusterinfo.FunctionRegistry))
			}
			continue
		}
		m := factPackageRef.FindStringSubmatch(pkg)
		if m == nil {
			problems = append(problems, fmt.Sprintf("%s: %s package %q is not xpkg.crossplane.io/crossplane-contrib/NAME:vX.Y.Z", d.file, d.obj["kind"], pkg))
			continue
		}
		want := ""
		switch {
		case isProvider && strings.HasPrefix(m[1], "provider-aws-"):
			want = "v" + versions.ProviderAWS
		case isFunction && m[1] == "function-patch-and-transform":
			want = "v" + versions.FunctionPatchAndTransform
		case isFunction && m[1] == "function-auto-ready":
			want = "v" + versions.FunctionAutoReady
		default:
			problems = append(problems, fmt.Sprintf("%s: %s %s has no pinned release in internal/contract/versions", d.file, d.obj["kind"], m[1]))
			continue
		}
		if m[2] != want {
			problems = append(problems, fmt.Sprintf("%s: %s %s at %s, want %s (internal/contract/versions)", d.file, d.obj["kind"], m[1], m[2], want))
		}
	}
	if n == 0 {
		problems = append(problems, "no Crossplane Provider or Function in gitops-system")
	}
	if own != 1 {
		problems = append(problems, fmt.Sprintf("%d Functions install %s, want exactly one on the hub", own, versions.WorkloadClusterFunctionPackage))
	}
	return problems
}
