// Package fleettree knows where things live in the manifests tree that
// fleet edits and checks, and reads the cluster claims from it.
package fleettree

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
)

// Paths below the tree (the repository's manifests/ directory).
const (
	ClaimsDir        = "gitops-system/workload-clusters"
	WorkloadsDir     = "gitops-workloads/clusters"
	Kustomization    = "kustomization.yaml"
	DeployKeyDir     = "flux-system"
	DeployKeyFile    = "deploy-key.yaml"
	DefaultCertFile  = "gitops-system/sealing-cert.pem"
	DefaultKnownHost = "gitops-system/known_hosts"
)

// Tree is a manifests tree on disk.
//
// With Pending, the tree is read as if that change were applied: ReadFile,
// Stat, ReadDir and what reads through them (ClaimsLenient, the policy
// checks) see the change, and nothing on disk is touched.
type Tree struct {
	Root    string
	Pending *treeedit.Change
}

// Find returns the default tree: manifests/ next to the go.mod found by
// walking up from dir, else dir/manifests.
func Find(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if st, err := os.Stat(filepath.Join(d, "manifests")); err == nil && st.IsDir() {
				return filepath.Join(d, "manifests"), nil
			}
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	m := filepath.Join(abs, "manifests")
	if st, err := os.Stat(m); err == nil && st.IsDir() {
		return m, nil
	}
	return "", fmt.Errorf("no manifests/ tree found from %s (walked up to go.mod): pass --tree DIR", abs)
}

// Open checks that root looks like a fleet tree.
func Open(root string) (*Tree, error) {
	st, err := os.Stat(filepath.Join(root, ClaimsDir))
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--tree %s: no %s directory: is this the manifests/ tree?", root, ClaimsDir)
	}
	return &Tree{Root: root}, nil
}

// Path joins rel (slash-separated) onto the tree root.
func (t *Tree) Path(rel string) string { return filepath.Join(t.Root, filepath.FromSlash(rel)) }

// ClaimRel is the claim file of a cluster, relative to the tree.
func ClaimRel(name string) string { return ClaimsDir + "/" + name + ".yaml" }

// WorkloadsRel is a cluster's folder in the workloads tree.
func WorkloadsRel(name string) string { return WorkloadsDir + "/" + name }

// DeployKeyRel is the sealed deploy key of a cluster.
func DeployKeyRel(name string) string {
	return WorkloadsRel(name) + "/" + DeployKeyDir + "/" + DeployKeyFile
}

// DeployKeyContent is a cluster's deploy-key file: a comment naming the
// public part (to add as the repository's deploy key), then the
// SealedSecret.
func DeployKeyContent(name, public string, sealed []byte) []byte {
	return append([]byte("# Deploy key of spoke "+name+" (public part: "+public+")\n"), sealed...)
}

// DeployKeyPublic is the public part DeployKeyContent names in a deploy-key
// file, and false when the file does not start with that comment.
func DeployKeyPublic(content []byte) (string, bool) {
	line, _, _ := strings.Cut(string(content), "\n")
	_, rest, ok := strings.Cut(line, " (public part: ")
	if !ok || !strings.HasPrefix(line, "# Deploy key of spoke ") || !strings.HasSuffix(rest, ")") {
		return "", false
	}
	return strings.TrimSuffix(rest, ")"), true
}

// ClaimFile is a claim read from the tree.
type ClaimFile struct {
	Rel   string // path relative to the tree
	Claim *workloadcluster.Claim
}

// Claims reads every WorkloadCluster document in the claims directory
// (sorted by file), whether or not its kustomization lists it. A file that
// does not parse is an error.
func (t *Tree) Claims() ([]ClaimFile, error) {
	claims, bad, err := t.ClaimsLenient()
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, bad[0]
	}
	return claims, nil
}

// FileError is a claim file that does not parse.
type FileError struct {
	Rel string
	Err error
}

func (e *FileError) Error() string { return e.Rel + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// ClaimsLenient is Claims that returns the files that do not parse
// separately, so a checker can report them all and still check the rest.
func (t *Tree) ClaimsLenient() ([]ClaimFile, []*FileError, error) {
	entries, err := t.ReadDir(ClaimsDir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading claims: %w", err)
	}
	var rels []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || (!strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml")) || n == Kustomization {
			continue
		}
		rels = append(rels, ClaimsDir+"/"+n)
	}
	// Files are read and parsed on every core (a fleet has one per
	// cluster); the result is in file order.
	type parsedFile struct {
		claims        []*workloadcluster.Claim
		readErr, pErr error
	}
	res := make([]parsedFile, len(rels))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range rels {
		g.Go(func() error {
			b, err := t.ReadFile(rels[i])
			if err != nil {
				res[i].readErr = err
				return nil
			}
			res[i].claims, res[i].pErr = ParseClaims(b)
			return nil
		})
	}
	_ = g.Wait()
	var out []ClaimFile
	var bad []*FileError
	for i, rel := range rels {
		if err := res[i].readErr; err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", rel, err)
		}
		if err := res[i].pErr; err != nil {
			bad = append(bad, &FileError{Rel: rel, Err: err})
			continue
		}
		for _, c := range res[i].claims {
			out = append(out, ClaimFile{Rel: rel, Claim: c})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out, bad, nil
}

// parsed remembers ParseClaims by content: a request reads every claim
// file of the tree twice (as it is, then with the change), and a file's
// claims depend on its bytes only.
var parsed sync.Map // string(content) -> parsedClaims

type parsedClaims struct {
	claims []*workloadcluster.Claim
	err    error
}

// ParseClaims returns the WorkloadCluster documents of a YAML stream;
// other kinds are skipped. Unknown fields are an error (the API would
// prune or reject them). Each call returns claims of its own (callers may
// change them).
func ParseClaims(b []byte) ([]*workloadcluster.Claim, error) {
	v, ok := parsed.Load(string(b))
	if !ok {
		claims, err := parseClaims(b)
		v, _ = parsed.LoadOrStore(string(b), parsedClaims{claims, err})
	}
	p := v.(parsedClaims)
	if p.err != nil {
		return nil, p.err
	}
	var out []*workloadcluster.Claim
	for _, c := range p.claims {
		out = append(out, c.DeepCopy())
	}
	return out, nil
}

func parseClaims(b []byte) ([]*workloadcluster.Claim, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []*workloadcluster.Claim
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if head.Kind != workloadcluster.ClaimKind || !strings.HasPrefix(head.APIVersion, workloadcluster.Group+"/") {
			continue
		}
		var c workloadcluster.Claim
		if err := yaml.UnmarshalStrict(doc, &c); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i+1, workloadcluster.ClaimKind, err)
		}
		out = append(out, &c)
	}
}

// Find returns the claim of a cluster by name.
func FindClaim(claims []ClaimFile, name string) (ClaimFile, bool) {
	for _, c := range claims {
		if c.Claim.Metadata.Name == name {
			return c, true
		}
	}
	return ClaimFile{}, false
}

// MarshalClaim renders a claim as the YAML fleet writes.
func MarshalClaim(c *workloadcluster.Claim) ([]byte, error) {
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding claim %s: %w", c.Metadata.Name, err)
	}
	head := "# Cluster request for spoke " + c.Metadata.Name + ", written by `fleet cluster add`.\n" +
		"# Edit with fleet (cluster upgrade/remove) or by hand; `fleet validate` checks it.\n"
	return append([]byte(head), b...), nil
}
