package fleetvalidate

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/deploykey"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
)

// Auto-approval covers exactly what `fleet cluster add` writes, judged by
// content, not by path: the claim, its entry in the claims listing, and,
// for a cluster the request adds, the workloads folder's scaffolding
// (fleettree.WorkloadsScaffold) and one sealed deploy key. A workloads
// folder carrying anything else is applied by the spoke's Flux as part of
// the spoke, so it needs the governance review the CODEOWNERS file asks for.

// baseFunc reads a file as it is on the pull request's base (nil: absent).
type baseFunc func(rel string) ([]byte, error)

// newCluster reports whether name's claim file is absent on the base.
func newCluster(base baseFunc, name string) (bool, error) {
	b, err := base(fleettree.ClaimRel(name))
	if err != nil {
		return false, err
	}
	return b == nil, nil
}

// workloadsReason says why a changed file under gitops-workloads/clusters/
// is not the scaffolding `fleet cluster add` writes for a new cluster ("":
// it is).
func workloadsReason(tree *fleettree.Tree, base baseFunc, touched map[string]bool, f string) string {
	rest, _ := strings.CutPrefix(f, fleettree.WorkloadsDir+"/")
	name, _, _ := strings.Cut(rest, "/")
	if !touched[name] {
		return f + ": changes the workloads of cluster " + name + " (governance review)"
	}
	if base == nil {
		return f + ": cannot tell whether cluster " + name + " is new without the base (pass --base-ref): its workloads need review"
	}
	isNew, err := newCluster(base, name)
	if err != nil {
		return f + ": " + err.Error()
	}
	if !isNew {
		return f + ": changes the workloads of existing cluster " + name + " (governance review)"
	}
	b, err := tree.ReadFile(f)
	if err != nil {
		return f + ": removed or unreadable: not what `fleet cluster add` writes"
	}
	if want, ok := fleettree.WorkloadsScaffold(name)[f]; ok {
		if !sameYAML(b, want) {
			return f + ": differs from the scaffolding `fleet cluster add " + name + "` writes"
		}
		return ""
	}
	if f == fleettree.DeployKeyRel(name) {
		if why := deployKeyShape(b); why != "" {
			return f + ": " + why
		}
		return ""
	}
	return f + ": not a file `fleet cluster add " + name + "` writes (governance review)"
}

// sameYAML compares two single-document YAML files by content (comments
// and layout aside).
func sameYAML(a, b []byte) bool {
	var x, y any
	if yaml.Unmarshal(a, &x) != nil || yaml.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// deployKeyShape says why b is not exactly one SealedSecret that unseals
// into the spoke's deploy key Secret as `fleet cluster add` seals it: the
// Secret's name, namespace, type and keys, strict scope (no annotations),
// nothing else.
func deployKeyShape(b []byte) string {
	docs := strings.Split("\n"+string(b), "\n---")
	var objs []map[string]any
	for _, d := range docs {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(d), &o); err != nil {
			return fmt.Sprintf("not YAML: %v", err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	if len(objs) != 1 {
		return fmt.Sprintf("holds %d objects; `fleet cluster add` writes one SealedSecret", len(objs))
	}
	secret := (&deploykey.Key{}).Secret(deploykey.SecretName, deploykey.SecretNamespace, nil)
	keys := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	sealed := map[string]any{}
	data, _ := objs[0]["spec"].(map[string]any)["encryptedData"].(map[string]any)
	for k, v := range data {
		if s, ok := v.(string); !ok || s == "" {
			return "encryptedData." + k + " is not a sealed value"
		}
		sealed[k] = "sealed"
	}
	want := map[string]any{
		"apiVersion": "bitnami.com/v1alpha1", "kind": "SealedSecret",
		"metadata": map[string]any{"name": secret.Name, "namespace": secret.Namespace},
		"spec": map[string]any{
			"encryptedData": sealed,
			"template": map[string]any{
				"metadata": map[string]any{"name": secret.Name, "namespace": secret.Namespace},
				"type":     string(secret.Type),
			},
		},
	}
	got := objs[0]
	if spec, ok := got["spec"].(map[string]any); ok {
		spec = shallowCopy(spec)
		spec["encryptedData"] = sealed
		got = shallowCopy(got)
		got["spec"] = spec
	}
	gotKeys := make([]string, 0, len(sealed))
	for k := range sealed {
		gotKeys = append(gotKeys, k)
	}
	slices.Sort(gotKeys)
	if !reflect.DeepEqual(got, want) || !slices.Equal(gotKeys, keys) {
		return fmt.Sprintf("not the SealedSecret %s/%s with keys %v that `fleet cluster add` seals (no other fields, annotations or objects)",
			secret.Namespace, secret.Name, keys)
	}
	return ""
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// listingReason says why the claims listing differs from the base by
// more than entries for the claims the request adds.
func listingReason(tree *fleettree.Tree, base baseFunc, added map[string]bool) string {
	rel := fleettree.ClaimsDir + "/" + fleettree.Kustomization
	if base == nil {
		return rel + ": cannot compare the listing with the base (pass --base-ref)"
	}
	was, err := base(rel)
	if err != nil {
		return rel + ": " + err.Error()
	}
	now, err := tree.ReadFile(rel)
	if err != nil {
		return rel + ": " + err.Error()
	}
	var w, n map[string]any
	if err := yaml.Unmarshal(was, &w); err != nil {
		return rel + ": base: " + err.Error()
	}
	if err := yaml.Unmarshal(now, &n); err != nil {
		return rel + ": " + err.Error()
	}
	wr, _ := w["resources"].([]any)
	nr, _ := n["resources"].([]any)
	delete(w, "resources")
	delete(n, "resources")
	if !reflect.DeepEqual(w, n) {
		return rel + ": changes more than the resources list (governance review)"
	}
	old := map[any]bool{}
	for _, r := range wr {
		old[r] = true
	}
	for _, r := range nr {
		if old[r] {
			continue
		}
		s, _ := r.(string)
		name, ok := strings.CutSuffix(path.Clean(s), ".yaml")
		if !ok || strings.Contains(name, "/") || !added[name] {
			return fmt.Sprintf("%s: lists %v, which is not the claim file of a cluster this request adds", rel, r)
		}
	}
	return ""
}
