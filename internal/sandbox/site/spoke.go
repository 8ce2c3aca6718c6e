package site

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net/netip"
	"path/filepath"

	"golang.org/x/crypto/ssh"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/build/binaries"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// SpokeOptions configures StartSpoke.
type SpokeOptions struct {
	// Dir holds everything the spoke writes.
	Dir string
	// RepoRoot is the repository whose manifests/ the Git server serves.
	RepoRoot string
	// Network names the pod network, Prefix its addresses (distinct per
	// running suite).
	Network string
	Prefix  netip.Prefix
	// Edit changes the served tree before its first commit.
	Edit func(work string) error
	// Instance is the spoke's FluxInstance as the tree builds it.
	Instance *unstructured.Unstructured
}

// Spoke is a cluster running its own Flux as a spoke does once the hub's
// bootstrap is done: the Flux the FluxInstance installs (CRDs, and the
// source- and kustomize-controller as processes with their Deployments'
// arguments) and the GitRepository flux-system reading the repository from
// a Git server with a deploy key. What the hub's other bootstrap steps put
// on a spoke the caller applies (e.g. the objects the tree builds for
// them); nothing of the hub runs.
type Spoke struct {
	Site
}

// Stop stops every process and removes the network.
func (s *Spoke) Stop() { s.stopSite() }

// StartSpoke brings the spoke up and returns once its controllers run.
func StartSpoke(ctx context.Context, opts SpokeOptions) (s *Spoke, err error) {
	s = &Spoke{}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if opts.Instance == nil {
		return s, fmt.Errorf("spoke: no FluxInstance")
	}
	if err := s.startSite(ctx, SiteOptions{Dir: opts.Dir, Name: "spoke", RepoRoot: opts.RepoRoot, Network: opts.Network, Prefix: opts.Prefix,
		Edits: []func(string) error{opts.Edit}}); err != nil {
		return s, err
	}
	flux, err := FluxInstallation(ctx, opts.Instance)
	if err != nil {
		return s, err
	}
	var crds []*unstructured.Unstructured
	for _, o := range flux {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		}
	}
	identity, authorized, err := deployKey()
	if err != nil {
		return s, err
	}
	if err := s.Git.Authorize(authorized); err != nil {
		return s, err
	}
	source, err := kube.DecodeYAML(fmt.Appendf(nil, `apiVersion: v1
kind: Namespace
metadata: {name: flux-system}
---
apiVersion: v1
kind: Secret
metadata: {name: flux-system, namespace: flux-system}
stringData:
  identity: %q
  known_hosts: %q
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 1m
  url: %s
  ref: {branch: main}
  secretRef: {name: flux-system}
`, identity, s.Git.KnownHosts+"\n", s.Git.URL(RepoName)))
	if err != nil {
		return s, err
	}
	if err := s.Cluster.Apply(ctx, "spoke", append(crds, source...)...); err != nil {
		return s, err
	}
	s.Flux, err = StartFlux(ctx, filepath.Join(s.Cluster.Dir, "flux"), s.Cluster.Kubeconfig, flux, nil,
		binaries.SourceController, binaries.KustomizeController)
	return s, err
}

// deployKey makes an ed25519 key pair: the private key as Flux's SSH
// secret holds it (OpenSSH PEM) and the public key in authorized_keys form.
func deployKey() (identity, authorized string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return "", "", err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", "", err
	}
	return string(pem.EncodeToMemory(block)), string(ssh.MarshalAuthorizedKey(sp)), nil
}
