package site

import (
	"context"
	"net/netip"
	"path/filepath"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/kube"
)

// Site is what a hub and a spoke both run on: a pod network, a cluster
// (API server, controller manager, scheduler, a kwok node), a Git server
// serving the repository's manifests/ and the Flux controllers started on
// the cluster.
type Site struct {
	Net     *kube.Network
	Cluster *kube.Cluster
	Git     *GitServer
	Repo    *Repo
	Flux    map[string]*kube.Proc
}

// SiteOptions places a site.
type SiteOptions struct {
	// Dir holds everything the site writes; Name names its cluster.
	Dir, Name string
	// RepoRoot is the repository whose manifests/ the Git server serves.
	RepoRoot string
	// Network names the pod network (a bridge), Prefix its addresses
	// (distinct per running suite).
	Network string
	Prefix  netip.Prefix
	// Edits change the served tree, in order, before its first commit.
	Edits []func(work string) error
}

// startSite brings up the network, the cluster and the Git server with
// the repository committed. On error what started is left for stop.
func (s *Site) startSite(ctx context.Context, opts SiteOptions) (err error) {
	s.Flux = map[string]*kube.Proc{}
	if s.Net, err = kube.NewNetwork(opts.Network, opts.Prefix); err != nil {
		return err
	}
	// Pods take addresses from the prefix's second /20 (the first holds
	// the host address the servers listen on).
	a := opts.Prefix.Masked().Addr().As4()
	a[2] += 16
	a[3] = 1
	podCIDR := netip.PrefixFrom(netip.AddrFrom4(a), 20)
	if s.Cluster, err = kube.StartCluster(ctx, opts.Dir, opts.Name, kube.ClusterOptions{Network: s.Net, PodCIDR: podCIDR.String()}); err != nil {
		return err
	}
	if s.Git, err = NewGitServer(filepath.Join(opts.Dir, "git"), s.Net.HostIP.String()); err != nil {
		return err
	}
	s.Repo, err = s.Git.InitRepo(RepoName, "main", func(work string) error {
		if err := copyDir(filepath.Join(opts.RepoRoot, "manifests"), filepath.Join(work, "manifests")); err != nil {
			return err
		}
		for _, edit := range opts.Edits {
			if edit == nil {
				continue
			}
			if err := edit(work); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// stopSite stops the Flux processes and the cluster, closes the Git
// server and removes the network; what never started is skipped.
func (s *Site) stopSite() {
	for _, p := range s.Flux {
		p.Stop(0)
	}
	if s.Cluster != nil {
		s.Cluster.Stop()
	}
	if s.Git != nil {
		s.Git.Close()
	}
	if s.Net != nil {
		s.Net.Close()
	}
}
