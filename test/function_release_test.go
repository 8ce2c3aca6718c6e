package test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fnjson"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
)

var updateReleases = flag.Bool("update-function-release", false,
	"record the composition function's output under a new versions.WorkloadClusterFunction in testdata/function-releases.json")

const releasesFile = "testdata/function-releases.json"

// functionRelease is what one release of the composition function composes
// for the golden claims: a digest of its whole output, and the tree paths
// its bootstrap Kustomizations read (a hub running that release reads them
// from the hub's Git branch).
type functionRelease struct {
	Version      string   `json:"version"`
	OutputSHA256 string   `json:"outputSha256"`
	TreePaths    []string `json:"treePaths"`
}

// goldenClaimsDir holds the golden claims: fixed, so that the digest
// follows the function, not the tree (a platform repository adds claims
// every day).
const goldenClaimsDir = "testdata/function-golden-claims"

// goldenFunctionRun composes every golden claim with the example hub's
// input, until each converges with every composed resource Ready; it
// returns the digest of the whole output and the sorted tree paths of its
// Kustomizations (the per-spoke workloads folders aside).
func goldenFunctionRun(t *testing.T) (string, []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenClaimsDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden claims in %s: %d, %v", goldenClaimsDir, len(files), err)
	}
	in, err := compose.InputFrom(clusterinfo.Example())
	if err != nil {
		t.Fatal(err)
	}
	// One golden spoke is in an add-on wave (T4-M3), so that the digest
	// covers what waves compose.
	in.SpokeAddonWaves = clusterinfo.AddonWaves{{Name: "canary", Clusters: []string{"golden-per-az"},
		Versions: clusterinfo.AddonVersions{"eu-west-1": {"1.35": {"vpc-cni": "v1.21.0-eksbuild.2"}}}}}
	specs := map[string]workloadcluster.Spec{}
	for _, f := range files {
		var c workloadcluster.Claim
		if err := yaml.UnmarshalStrict(mustRead(t, f), &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		specs[c.Metadata.Name] = c.Spec
	}
	h := sha256.New()
	paths := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		p := compose.Params{Input: in, Spoke: name, Spec: specs[name]}
		first, err := compose.Compose(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, observed := convergeReady(t, p)
		settled := fnjson.TTLFor(out, observed, nil, time.Time{})
		if settled != fnjson.SettledTTL {
			t.Errorf("%s: converged with every composed resource Ready, the TTL is %s, want %s (settled): pending %q, under way %q, conditions %v",
				name, settled, fnjson.SettledTTL, out.Pending, out.Progressing, out.Notices)
		}
		// The response's TTLs are output too: they decide how often every
		// hub re-applies every spoke (issue 45), while it is made, once it
		// has waited long for the same thing, and once it is settled; and
		// so is the Settled condition that says what it waits for.
		wait := fnjson.Waiting(first, nil)
		long := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		waited := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": fnjson.SettledCondition,
			"status": "False", "reason": fnjson.ReasonWaiting, "message": wait, "lastTransitionTime": long.Format(time.RFC3339)}}}}
		b, err := json.Marshal(struct {
			Spoke       string
			Objects     map[string]compose.Object
			Status      map[string]any
			Pending     []string
			Notices     []compose.Notice
			TTL         string `json:",omitempty"`
			PendingTTL  string `json:",omitempty"`
			Waiting     string `json:",omitempty"`
			LongWaitTTL string `json:",omitempty"`
		}{name, out.Objects, out.Status, out.Pending, out.Notices, ttlSince(settled), fnjson.TTLFor(first, nil, nil, time.Time{}),
			wait, fnjson.TTLFor(first, nil, waited, long.Add(fnjson.LongWait))})
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
		for _, o := range out.Objects {
			for _, obj := range embedded(o) {
				p, _ := factField(obj, "spec", "path").(string)
				if obj["kind"] == "Kustomization" && p != "" && !strings.Contains(p, "gitops-workloads/clusters/") {
					paths[strings.TrimPrefix(p, "./")] = true
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), slices.Sorted(maps.Keys(paths))
}

// ttlSince is the TTL as the digest holds it: releases up to v0.2.0 were
// recorded before the digest covered the TTL, and answered function-sdk-go's
// default of 60s, which the digest leaves out so that their records stand.
func ttlSince(ttl string) string {
	if ttl == "60s" {
		return ""
	}
	return ttl
}

// convergeReady composes until nothing more appears, each composed
// resource observed Ready and AWS's identifiers reported as the provider
// reports them (the VPC's, the subnets', the cluster's ARN and OIDC issuer,
// the launch template's version), so the bootstrap is composed too.
func convergeReady(t *testing.T, p compose.Params) (compose.Composed, map[string]compose.Object) {
	t.Helper()
	prev := -1
	for range 10 {
		c, err := compose.Compose(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Objects) == prev {
			return c, p.Observed
		}
		prev = len(c.Objects)
		p.Observed = map[string]compose.Object{}
		for k, o := range c.Objects {
			st := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
			switch {
			case k == "cluster":
				account := "111122223333"
				if p.Spec.Account != "" {
					account = p.Spec.Account
				}
				st["atProvider"] = map[string]any{"arn": "arn:aws:eks:eu-west-1:" + account + ":cluster/mgmt-" + p.Spoke,
					"identity": []any{map[string]any{"oidc": []any{map[string]any{"issuer": "https://oidc.eks.eu-west-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF"}}}},
					// the API endpoint and CA, which only a spoke in another
					// account reads (its kubeconfig carries them)
					"endpoint":             "https://0123456789ABCDEF0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com",
					"certificateAuthority": []any{map[string]any{"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="}}}
			case k == "vpc":
				st["atProvider"] = map[string]any{"id": "vpc-0" + p.Spoke}
			case k == "launch-template":
				st["atProvider"] = map[string]any{"id": "lt-0" + p.Spoke, "latestVersion": float64(1)}
			case o["kind"] == "Subnet":
				st["atProvider"] = map[string]any{"id": "subnet-0" + strings.ReplaceAll(k, "-", "")}
			}
			p.Observed[k] = compose.Object{"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": o["metadata"], "spec": o["spec"], "status": st}
		}
	}
	t.Fatal("function did not converge")
	return compose.Composed{}, nil
}

// embedded returns o and, for a provider-kubernetes Object, the manifest it
// applies.
func embedded(o compose.Object) []compose.Object {
	out := []compose.Object{o}
	if m, ok := factField(o, "spec", "forProvider", "manifest").(map[string]any); ok {
		out = append(out, m)
	}
	return out
}

// TestFunctionReleases holds the composition function's output to its
// version (turn-4 review R2): a hub pulls the function by its tag, so an
// output change under the same tag never reaches hubs that already pulled
// it, and a tree change that removes a path an earlier release composes
// stalls every spoke of a hub still running it.
//   - The output for the golden claims must equal what the current
//     version recorded; a change needs a new versions.WorkloadClusterFunction
//     (recorded with -update-function-release).
//   - Every tree path the previous release's Kustomizations read must still
//     exist: remove one a release after the function stops composing it.
func TestFunctionReleases(t *testing.T) {
	var recs []functionRelease
	if b, err := os.ReadFile(releasesFile); err == nil {
		if err := json.Unmarshal(b, &recs); err != nil {
			t.Fatalf("%s: %v", releasesFile, err)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sum, paths := goldenFunctionRun(t)
	i := slices.IndexFunc(recs, func(r functionRelease) bool { return r.Version == versions.WorkloadClusterFunction })
	switch {
	case i < 0 && *updateReleases:
		recs = append(recs, functionRelease{Version: versions.WorkloadClusterFunction, OutputSHA256: sum, TreePaths: paths})
		b, err := json.MarshalIndent(recs, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(releasesFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		i = len(recs) - 1
	case i < 0:
		t.Fatalf("%s records no output for versions.WorkloadClusterFunction %s: run go test ./test -run TestFunctionReleases -update-function-release",
			releasesFile, versions.WorkloadClusterFunction)
	case i != len(recs)-1:
		t.Fatalf("versions.WorkloadClusterFunction %s is not the last release recorded in %s (%s): versions only go forward",
			versions.WorkloadClusterFunction, releasesFile, recs[len(recs)-1].Version)
	}
	if recs[i].OutputSHA256 != sum || !slices.Equal(recs[i].TreePaths, paths) {
		t.Errorf("the function's output for the golden claims changed (sha256 %s, tree paths %v), but versions.WorkloadClusterFunction is still %s (recorded sha256 %s, tree paths %v): "+
			"bump the version (and the package tag in gitops-system/infrastructure/crossplane-packages/functions.yaml), then record it with -update-function-release",
			sum, paths, versions.WorkloadClusterFunction, recs[i].OutputSHA256, recs[i].TreePaths)
	}
	if i > 0 {
		prev := recs[i-1]
		for _, p := range prev.TreePaths {
			if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(p))); err != nil {
				t.Errorf("the tree no longer has %s, which function release %s composes: hubs still running it would stall every spoke's bootstrap; remove it a release later", p, prev.Version)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "function %s: output sha256 %s, %d tree paths\n", versions.WorkloadClusterFunction, sum, len(paths))
}
