// Package benchtree writes N-cluster trees for the benchmarks (test/ and
// scripts/bench): a copy of the repository's manifests/ plus generated
// clusters, written with the code `fleet cluster add` uses (policy
// defaults, free CIDR blocks from internal/fleet/cidralloc, the same claim
// encoding, listing and workloads folder).
package benchtree

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/cidralloc"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/treeedit"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/plant"
)

// ExampleSpoke is the committed spoke whose deploy key generated clusters
// reuse.
const ExampleSpoke = "apps-staging"

// Name is the name of the i-th generated cluster.
func Name(i int) string { return fmt.Sprintf("bench-%04d", i) }

// Generate copies the tree src (a manifests/ directory) to dst and adds
// clusters until it has n claims. The policy's block size is narrowed to
// /18 so 1000 spokes fit in 10.0.0.0/8.
func Generate(src, dst string, n int) error {
	if err := treeedit.CopyTree(src, dst); err != nil {
		return err
	}
	t := &fleettree.Tree{Root: dst}
	polPath := t.Path(policy.RelPath)
	b, err := os.ReadFile(polPath)
	if err != nil {
		return err
	}
	b = bytes.Replace(b, []byte("prefixLength: 16"), []byte("prefixLength: 18"), 1)
	if b, err = plant.RaiseQuotas(b); err != nil {
		return err
	}
	if err := os.WriteFile(polPath, b, 0o644); err != nil {
		return err
	}
	pol, err := policy.Load(polPath)
	if err != nil {
		return err
	}
	claims, err := t.Claims()
	if err != nil {
		return err
	}
	info := clusterinfo.Example()
	var used []netip.Prefix
	for _, c := range claims {
		if p, err := cidralloc.Parse(c.Claim.Spec.VPCCIDR); err == nil {
			used = append(used, p)
		}
	}
	for _, r := range pol.Reserved(info.HubVPCCIDR) {
		used = append(used, r.Prefix)
	}
	kpath := t.Path(fleettree.ClaimsDir + "/" + fleettree.Kustomization)
	kb, err := os.ReadFile(kpath)
	if err != nil {
		return err
	}
	for i := len(claims); i < n; i++ {
		name := Name(i)
		p, err := cidralloc.FindFree(pol.Pools(), pol.CIDR.PrefixLength, used)
		if err != nil {
			return fmt.Errorf("cluster %d: %w", i, err)
		}
		used = append(used, p)
		c := &workloadcluster.Claim{
			APIVersion: workloadcluster.APIVersion, Kind: workloadcluster.ClaimKind,
			Metadata: workloadcluster.Metadata{Name: name, Namespace: workloadcluster.ClaimNamespace},
			Spec: workloadcluster.Spec{Region: pol.Regions[i%len(pol.Regions)], KubernetesVersion: pol.DefaultVersion(), VPCCIDR: p.String(),
				AvailabilityZones: 3, NATMode: workloadcluster.NATSingle,
				Nodes: workloadcluster.Nodes{InstanceTypes: []string{pol.InstanceTypes[0]}, Min: 2, Desired: 2, Max: 4}},
		}
		if vs := pol.CheckClaim(c); len(vs) > 0 {
			return fmt.Errorf("generated claim breaks policy: %v", vs)
		}
		body, err := fleettree.MarshalClaim(c)
		if err != nil {
			return err
		}
		if err := os.WriteFile(t.Path(fleettree.ClaimRel(name)), body, 0o644); err != nil {
			return err
		}
		if kb, err = kustfile.Add(kb, name+".yaml"); err != nil {
			return err
		}
		wl := t.Path(fleettree.WorkloadsRel(name) + "/" + fleettree.DeployKeyDir)
		if err := os.MkdirAll(wl, 0o755); err != nil {
			return err
		}
		empty := kustfile.New("bench")
		if err := os.WriteFile(filepath.Join(filepath.Dir(wl), fleettree.Kustomization), empty, 0o644); err != nil {
			return err
		}
		// The example spoke's sealed deploy key: the Secret it unseals into
		// (flux-system/flux-system) is the same on every spoke.
		if err := treeedit.CopyTree(t.Path(fleettree.WorkloadsRel(ExampleSpoke)+"/"+fleettree.DeployKeyDir), wl); err != nil {
			return fmt.Errorf("copying the example spoke's deploy key: %w", err)
		}
	}
	return os.WriteFile(kpath, kb, 0o644)
}
