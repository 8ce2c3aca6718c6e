package site

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitops-fleet/eks-fleet/internal/contract/sealingkey"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
)

// PushTree makes repoRoot's manifests/ the served tree's next commit, with
// the edits StartHub made to it, authorizes the spokes' deploy keys it
// names (AuthorizeDeployKeys) and returns the commit.
func (h *Hub) PushTree(repoRoot, message string) (string, error) {
	src := filepath.Join(repoRoot, "manifests")
	if _, err := os.Stat(src); err != nil {
		return "", fmt.Errorf("push the tree: %w", err)
	}
	dst := filepath.Join(h.Repo.Work, "manifests")
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := copyDir(src, dst); err != nil {
		return "", fmt.Errorf("push the tree: %w", err)
	}
	for _, edit := range h.edits {
		if edit == nil {
			continue
		}
		if err := edit(h.Repo.Work); err != nil {
			return "", fmt.Errorf("push the tree: %w", err)
		}
	}
	if err := h.AuthorizeDeployKeys(); err != nil {
		return "", err
	}
	if err := h.Repo.Commit(message); err != nil {
		return "", err
	}
	return h.Repo.Head()
}

// AuthorizeDeployKeys lets the Git server accept the public part of every
// spoke deploy key in the served tree (what a team adds to its Git host
// after `fleet cluster add`). A key sealed for another hub's certificate
// is accepted too, but its spoke cannot unseal it.
func (h *Hub) AuthorizeDeployKeys() error {
	pattern := filepath.Join(h.Repo.Work, "manifests", filepath.FromSlash(fleettree.DeployKeyRel("*")))
	files, err := filepath.Glob(pattern)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		pub, ok := fleettree.DeployKeyPublic(b)
		if !ok {
			continue
		}
		if err := h.Git.AuthorizeOnce(pub); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// SealingCertificate is the active sealing key's certificate the program
// wrote to Secrets Manager (what `pulumi stack output sealingCertificate`
// prints).
func (h *Hub) SealingCertificate() (string, error) {
	for _, doc := range h.Bootstrap.Secrets {
		var m map[string]string
		if err := json.Unmarshal([]byte(doc), &m); err == nil && m[sealingkey.CertProperty] != "" {
			return m[sealingkey.CertProperty], nil
		}
	}
	return "", fmt.Errorf("the program wrote no sealing key document to Secrets Manager")
}

// Head is the commit the work tree's branch points at.
func (r *Repo) Head() (string, error) {
	out, err := gitOutput(r.Work, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// AuthorizeOnce is Authorize for a key not yet authorized.
func (g *GitServer) AuthorizeOnce(authorizedKey string) error {
	k, err := parseKey(authorizedKey)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.ContainsFunc(g.authorized, func(a []byte) bool { return string(a) == string(k) }) {
		g.authorized = append(g.authorized, k)
	}
	return nil
}

// HubKustomizations are the Flux Kustomizations the tree in manifests (a
// manifests/ directory) applies on the hub: what its clusters/mgmt builds,
// in that order. The root Kustomization the program makes (flux-system) is
// not in the tree and not in the list.
func HubKustomizations(manifests string) ([]string, error) {
	return FluxKustomizations(filepath.Join(manifests, "gitops-system", "clusters", "mgmt"))
}

// FluxKustomizations are the names of the Flux Kustomizations that dir
// builds (kustomize), in the order it builds them; none is an error.
func FluxKustomizations(dir string) ([]string, error) {
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []string
	for _, r := range rm.Resources() {
		if r.GetKind() == "Kustomization" && r.GetApiVersion() == "kustomize.toolkit.fluxcd.io/v1" {
			out = append(out, r.GetName())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s builds no Flux Kustomization", dir)
	}
	return out, nil
}
