package compose

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
)

// An upgrade runs control plane, then nodes, then add-ons, one minor
// version at a time, never composing a step EKS refuses; a lost
// observation keeps what was composed.
func TestKubernetesSteps(t *testing.T) {
	type obs struct {
		reported, composed string // status.atProvider.version, spec.forProvider.version ("-": not observed)
	}
	tests := map[string]struct {
		reason       string
		spec         string
		cluster      obs
		nodes        obs
		want         kubernetesSteps
		wantAddonsAt string
		// upgrading: what the function reports under way (the composite
		// is run again after the pending TTL while it is)
		upgrading string
	}{
		"new spoke": {
			reason: "nothing observed: everything at the claim's version",
			spec:   "1.35", cluster: obs{"-", ""}, nodes: obs{"-", ""},
			want: kubernetesSteps{Cluster: "1.35", Nodes: "1.35", Addons: "1.35"},
		},
		"cluster being created": {
			reason: "the cluster is observed without a version yet",
			spec:   "1.35", cluster: obs{"", "1.35"}, nodes: obs{"-", ""},
			want: kubernetesSteps{Cluster: "1.35", Nodes: "1.35", Addons: "1.35"},
		},
		"steady": {
			reason: "nothing to do",
			spec:   "1.35", cluster: obs{"1.35", "1.35"}, nodes: obs{"1.35", "1.35"},
			want: kubernetesSteps{Cluster: "1.35", Nodes: "1.35", Addons: "1.35"},
		},
		"upgrade asked": {
			reason: "the control plane moves first; the nodes and add-ons stay",
			spec:   "1.36", cluster: obs{"1.35", "1.35"}, nodes: obs{"1.35", "1.35"},
			want:      kubernetesSteps{Cluster: "1.36", Nodes: "1.35", Addons: "1.35"},
			upgrading: "Kubernetes upgrade to 1.36: control plane at 1.35, nodes at 1.35",
		},
		"control plane upgrading": {
			reason: "AWS still reports 1.35: a node group newer than its cluster is refused",
			spec:   "1.36", cluster: obs{"1.35", "1.36"}, nodes: obs{"1.35", "1.35"},
			want:      kubernetesSteps{Cluster: "1.36", Nodes: "1.35", Addons: "1.35"},
			upgrading: "Kubernetes upgrade to 1.36: control plane at 1.35, nodes at 1.35",
		},
		"control plane upgraded": {
			reason: "the nodes follow; the add-ons wait for them",
			spec:   "1.36", cluster: obs{"1.36", "1.36"}, nodes: obs{"1.35", "1.35"},
			want:      kubernetesSteps{Cluster: "1.36", Nodes: "1.36", Addons: "1.35"},
			upgrading: "Kubernetes upgrade to 1.36: nodes at 1.35",
		},
		"nodes upgraded": {
			reason: "the add-ons follow the nodes' version",
			spec:   "1.36", cluster: obs{"1.36", "1.36"}, nodes: obs{"1.36", "1.36"},
			want: kubernetesSteps{Cluster: "1.36", Nodes: "1.36", Addons: "1.36"},
		},
		"two minors asked": {
			reason: "EKS moves a control plane one minor version at a time",
			spec:   "1.36", cluster: obs{"1.34", "1.34"}, nodes: obs{"1.34", "1.34"},
			want:      kubernetesSteps{Cluster: "1.35", Nodes: "1.34", Addons: "1.34"},
			upgrading: "Kubernetes upgrade to 1.36: control plane at 1.34, nodes at 1.34",
		},
		"nodes behind the control plane": {
			reason: "EKS refuses a control plane upgrade until the node groups match it",
			spec:   "1.36", cluster: obs{"1.35", "1.35"}, nodes: obs{"1.34", "1.35"},
			want:      kubernetesSteps{Cluster: "1.35", Nodes: "1.35", Addons: "1.34"},
			upgrading: "Kubernetes upgrade to 1.36: control plane at 1.35, nodes at 1.34",
		},
		"nodes lose their status mid-upgrade": {
			reason: "an unknown node version holds the control plane",
			spec:   "1.36", cluster: obs{"1.35", "1.35"}, nodes: obs{"", "1.35"},
			want:      kubernetesSteps{Cluster: "1.35", Nodes: "1.35", Addons: "1.35"},
			upgrading: "Kubernetes upgrade to 1.36: control plane at 1.35",
		},
		"cluster loses its status mid-upgrade": {
			reason: "what was composed is kept, nothing moves",
			spec:   "1.36", cluster: obs{"", "1.36"}, nodes: obs{"1.35", "1.35"},
			want:      kubernetesSteps{Cluster: "1.36", Nodes: "1.35", Addons: "1.35"},
			upgrading: "Kubernetes upgrade to 1.36: nodes at 1.35",
		},
		"no node group yet, cluster behind": {
			reason: "the nodes are created at the cluster's version",
			spec:   "1.36", cluster: obs{"1.35", "1.35"}, nodes: obs{"-", ""},
			want:      kubernetesSteps{Cluster: "1.36", Nodes: "1.35", Addons: "1.35"},
			upgrading: "Kubernetes upgrade to 1.36: control plane at 1.35",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := testParams(t)
			p.Spec.KubernetesVersion = tc.spec
			p.Observed = map[string]Object{}
			for key, o := range map[string]obs{"cluster": tc.cluster, "node-group": tc.nodes} {
				if o.reported == "-" {
					continue
				}
				obj := Object{"spec": Object{"forProvider": map[string]any{"version": o.composed}}, "status": Object{}}
				if o.reported != "" {
					obj["status"] = Object{"atProvider": map[string]any{"version": o.reported}}
				}
				p.Observed[key] = obj
			}
			if got := p.kubernetesSteps(); got != tc.want {
				t.Errorf("%s:\n got %+v\nwant %+v", tc.reason, got, tc.want)
			}
			if got := p.upgrading(); got != tc.upgrading {
				t.Errorf("%s: under way\n got %q\nwant %q", tc.reason, got, tc.upgrading)
			}
		})
	}
}

// The spoke runs EKS's vpc-cni, kube-proxy and coredns once its node group
// is Ready, at the versions the hub looked up for the nodes' Kubernetes
// version; a version the hub has not looked up keeps what runs and says so.
func TestAddons(t *testing.T) {
	p := testParams(t)
	runs := converge(t, p)
	steady := runs[len(runs)-1]
	versionsOf := func(c Composed) map[string]string {
		out := map[string]string{}
		for k, o := range c.Objects {
			if strings.HasPrefix(k, "addon-") {
				fp := o["spec"].(Object)["forProvider"].(Object)
				out[k] = fp["addonName"].(string) + "@" + fp["addonVersion"].(string)
			}
		}
		return out
	}
	at := func(k8s string) map[string]string {
		return map[string]string{
			"addon-vpc-cni":    "vpc-cni@" + clusterinfo.ExampleAddonVersion("vpc-cni", k8s),
			"addon-kube-proxy": "kube-proxy@" + clusterinfo.ExampleAddonVersion("kube-proxy", k8s),
			"addon-coredns":    "coredns@" + clusterinfo.ExampleAddonVersion("coredns", k8s),
		}
	}
	if got, want := versionsOf(steady), at("1.35"); !reflect.DeepEqual(got, want) {
		t.Fatalf("a converged spoke runs add-ons %v, want %v", got, want)
	}
	for _, k := range []string{"addon-vpc-cni", "addon-kube-proxy", "addon-coredns"} {
		fp := steady.Objects[k]["spec"].(Object)["forProvider"].(Object)
		if fp["clusterNameRef"].(Object)["name"] != "pay-eks" || fp["resolveConflictsOnCreate"] != "OVERWRITE" || fp["tags"] == nil {
			t.Errorf("%s: %v", k, fp)
		}
	}

	tests := map[string]struct {
		reason      string
		nodes       string // the node group's reported version ("-": no node group)
		nodesReady  bool
		addonsExist bool
		dropVersion string // a Kubernetes version missing from SPOKE_ADDON_VERSIONS
		waves       clusterinfo.AddonWaves
		want        map[string]string
		wantPending string
	}{
		"nodes not ready": {
			reason: "coredns becomes active only on nodes", nodes: "1.35",
			want: map[string]string{}, wantPending: "EKS add-ons wait for the node group",
		},
		"no node group": {
			reason: "nothing to run them on", nodes: "-",
			want: map[string]string{}, wantPending: "EKS add-ons wait for the node group",
		},
		"nodes not ready, add-ons running": {
			reason: "add-ons once created are never dropped (that would delete them)", nodes: "1.35", addonsExist: true,
			want: at("1.35"),
		},
		"nodes on 1.36": {
			reason: "the add-ons follow the nodes", nodes: "1.36", nodesReady: true, addonsExist: true,
			want: at("1.36"),
		},
		"version not looked up": {
			reason: "what runs stays; the XR says which version the hub must look up", nodes: "1.36", nodesReady: true, addonsExist: true,
			dropVersion: "1.36", want: at("1.35"), wantPending: "SPOKE_ADDON_VERSIONS has no version for Kubernetes 1.36 in eu-west-1",
		},
		// T4-M3: a new add-on version reaches the spokes of a wave first.
		"in a wave": {
			reason: "the wave's vpc-cni, the fleet's pins for what the wave does not move", nodes: "1.36", nodesReady: true, addonsExist: true,
			waves: clusterinfo.AddonWaves{
				{Name: "canary", Clusters: []string{"other", "pay"}, Versions: clusterinfo.AddonVersions{"eu-west-1": {"1.36": {"vpc-cni": "v1.21.0-eksbuild.2"}}}},
			},
			want: map[string]string{"addon-vpc-cni": "vpc-cni@v1.21.0-eksbuild.2", "addon-kube-proxy": at("1.36")["addon-kube-proxy"], "addon-coredns": at("1.36")["addon-coredns"]},
		},
		"not in the wave": {
			reason: "a wave moves only the spokes it lists", nodes: "1.36", nodesReady: true, addonsExist: true,
			waves: clusterinfo.AddonWaves{
				{Name: "canary", Clusters: []string{"other"}, Versions: clusterinfo.AddonVersions{"eu-west-1": {"1.36": {"vpc-cni": "v1.21.0-eksbuild.2"}}}},
			},
			want: at("1.36"),
		},
		"wave pins another Kubernetes version": {
			reason: "a wave's pin for 1.35 does not move nodes on 1.36", nodes: "1.36", nodesReady: true, addonsExist: true,
			waves: clusterinfo.AddonWaves{
				{Name: "canary", Clusters: []string{"pay"}, Versions: clusterinfo.AddonVersions{"eu-west-1": {"1.35": {"vpc-cni": "v1.21.0-eksbuild.2"}}}},
			},
			want: at("1.36"),
		},
		"wave pins a version the fleet has not": {
			reason: "a wave may move a spoke to a Kubernetes version's add-on the fleet's pins lack", nodes: "1.36", nodesReady: true, addonsExist: true,
			dropVersion: "1.36",
			waves: clusterinfo.AddonWaves{
				{Name: "canary", Clusters: []string{"pay"}, Versions: clusterinfo.AddonVersions{"eu-west-1": {"1.36": {"vpc-cni": "v1.21.0-eksbuild.2"}}}},
			},
			want:        map[string]string{"addon-vpc-cni": "vpc-cni@v1.21.0-eksbuild.2", "addon-kube-proxy": at("1.35")["addon-kube-proxy"], "addon-coredns": at("1.35")["addon-coredns"]},
			wantPending: "EKS add-on kube-proxy: cluster-info SPOKE_ADDON_VERSIONS has no version for Kubernetes 1.36",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := p
			q.Input.SpokeAddonWaves = tc.waves
			q.Spec.KubernetesVersion = "1.36"
			q.Observed = observeAll(steady)
			for k, o := range q.Observed {
				o["spec"] = steady.Objects[k]["spec"]
			}
			q.Observed["cluster"]["status"].(Object)["atProvider"].(Object)["version"] = "1.36"
			if !tc.addonsExist {
				for k := range q.Observed {
					if strings.HasPrefix(k, "addon-") {
						delete(q.Observed, k)
					}
				}
			}
			if tc.nodes == "-" {
				delete(q.Observed, "node-group")
			} else {
				st := Object{"atProvider": Object{"version": tc.nodes}}
				if tc.nodesReady {
					st["conditions"] = []any{Object{"type": "Ready", "status": "True"}}
				}
				q.Observed["node-group"]["status"] = st
			}
			if tc.dropVersion != "" {
				in := clusterinfo.AddonVersions{}
				for region, byK8s := range q.Input.SpokeAddonVersions {
					in[region] = map[string]map[string]string{}
					for k8s, v := range byK8s {
						if k8s != tc.dropVersion {
							in[region][k8s] = v
						}
					}
				}
				q.Input.SpokeAddonVersions = in
			}
			c, err := Compose(q)
			if err != nil {
				t.Fatal(err)
			}
			if got := versionsOf(c); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s:\n got %v\nwant %v", tc.reason, got, tc.want)
			}
			pending := strings.Join(c.Pending, "; ")
			if tc.wantPending == "" && strings.Contains(pending, "add-on") {
				t.Errorf("%s: pending %q", tc.reason, pending)
			}
			if !strings.Contains(pending, tc.wantPending) {
				t.Errorf("%s: pending %q, want it to say %q", tc.reason, pending, tc.wantPending)
			}
		})
	}
}
