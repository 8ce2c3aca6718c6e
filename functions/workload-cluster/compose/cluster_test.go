package compose

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// The nodes' launch template tags the instances, their primary network
// interfaces and volumes with the spoke's fence tag, so the VPC CNI (under
// the node role's boundary) may assign pod IPs on the primary interface;
// the node group waits for the template's version and then follows it.
func TestNodeLaunchTemplate(t *testing.T) {
	p := testParams(t)
	cluster := spokeiam.ClusterName(p.Input.Hub(), p.Spoke)
	runs := converge(t, p)
	last := runs[len(runs)-1]
	lt := last.Objects["launch-template"]
	if lt == nil {
		t.Fatal("no launch template composed")
	}
	fp := lt["spec"].(Object)["forProvider"].(Object)
	if fp["name"] != workloadcluster.NodeLaunchTemplateName(cluster) {
		t.Errorf("launch template name %v", fp["name"])
	}
	tagged := map[string]bool{}
	for _, ts := range fp["tagSpecifications"].([]any) {
		ts := ts.(Object)
		tags := ts["tags"].(map[string]any)
		if tags[fence.TagCluster] != cluster {
			t.Errorf("%s tagged %s=%v, want %s", ts["resourceType"], fence.TagCluster, tags[fence.TagCluster], cluster)
		}
		tagged[ts["resourceType"].(string)] = true
	}
	if want := map[string]bool{"instance": true, "network-interface": true, "volume": true}; !reflect.DeepEqual(tagged, want) {
		t.Errorf("launch template tags %v, want %v", tagged, want)
	}

	for _, tc := range []struct {
		name    string
		observe func(map[string]Object)
		want    Object // the node group's launchTemplate, nil: no node group
		pending bool
		reason  string
	}{
		{"template reports version 3", func(o map[string]Object) {
			o["launch-template"]["status"] = Object{"atProvider": Object{"latestVersion": float64(3)}}
		}, Object{"name": workloadcluster.NodeLaunchTemplateName(cluster), "version": "3"}, false,
			"a new template version (changed tags) rolls the nodes"},
		{"cluster not active yet", func(o map[string]Object) {
			o["cluster"]["status"] = Object{"conditions": []any{Object{"type": "Ready", "status": "False", "reason": "Creating"}}}
			delete(o, "node-group")
		}, nil, true, "EKS refuses CreateNodegroup until the cluster is ACTIVE (the provider would back off)"},
		{"cluster updating, nodes exist", func(o map[string]Object) {
			o["cluster"]["status"].(Object)["conditions"] = []any{Object{"type": "Ready", "status": "False", "reason": "Creating"}}
			o["launch-template"]["status"] = Object{"atProvider": Object{"latestVersion": float64(3)}}
		}, Object{"name": workloadcluster.NodeLaunchTemplateName(cluster), "version": "3"}, false,
			"existing nodes stay composed whatever the cluster reports"},
		{"template not reported, no nodes yet", func(o map[string]Object) {
			o["launch-template"]["status"] = Object{}
			delete(o, "node-group")
		}, nil, true, "the node group needs a version to launch from"},
		{"template not reported, nodes exist", func(o map[string]Object) {
			o["launch-template"]["status"] = Object{}
			o["node-group"]["status"] = Object{"atProvider": Object{"launchTemplate": Object{"version": "2"}}}
		}, Object{"name": workloadcluster.NodeLaunchTemplateName(cluster), "version": "2"}, false,
			"existing nodes are never dropped (that would delete them) and keep their version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := p
			q.Observed = observeAll(runs[len(runs)-2])
			tc.observe(q.Observed)
			c, err := Compose(q)
			if err != nil {
				t.Fatal(err)
			}
			ng := c.Objects["node-group"]
			var got Object
			if ng != nil {
				got = ng["spec"].(Object)["forProvider"].(Object)["launchTemplate"].(Object)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: node group launchTemplate %v, want %v", tc.reason, got, tc.want)
			}
			if pending := len(c.Pending) > 0; pending != tc.pending {
				t.Errorf("%s: pending %v (%v), want %v", tc.reason, pending, c.Pending, tc.pending)
			}
		})
	}
}

// An observed cluster that momentarily lacks its issuer (a status written
// without atProvider) must not drop the OIDC provider and the IRSA roles,
// which would delete them: the issuer they were composed with is kept.
func TestIssuerLossKeepsIRSA(t *testing.T) {
	p := testParams(t)
	runs := converge(t, p)
	steady := runs[len(runs)-1]
	irsa := []string{"oidc-provider", "role-crossplane", "role-lbc", "role-crossplane-policy", "role-lbc-policy"}
	for _, tc := range []struct {
		name   string
		drop   []string // observed objects gone besides the cluster's issuer
		keep   bool
		reason string
	}{
		{"issuer lost for one reconcile", nil, true, "the OIDC provider and roles carry the issuer"},
		{"issuer lost, provider not observed", []string{"oidc-provider"}, true, "the IRSA roles' eksfleet.io/oidc tag carries it"},
		{"nothing composed with an issuer yet", []string{"oidc-provider", "role-crossplane", "role-lbc"}, false,
			"a new spoke waits for the issuer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := p
			q.Observed = observeAll(steady)
			// observeAll has no spec: give the observed objects the
			// spec they were composed with, as Crossplane observes them
			for k, o := range q.Observed {
				o["spec"] = steady.Objects[k]["spec"]
			}
			q.Observed["cluster"]["status"] = Object{"conditions": []any{Object{"type": "Ready", "status": "True"}}}
			for _, k := range tc.drop {
				delete(q.Observed, k)
			}
			c, err := Compose(q)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range irsa {
				got := c.Objects[k] != nil
				if got != tc.keep {
					t.Errorf("%s: %s composed %v, want %v", tc.reason, k, got, tc.keep)
				}
				if got && !reflect.DeepEqual(c.Objects[k]["spec"], steady.Objects[k]["spec"]) {
					t.Errorf("%s: %s changed: %v, was %v", tc.reason, k, c.Objects[k]["spec"], steady.Objects[k]["spec"])
				}
			}
		})
	}
}

// The VPC CNI add-on tags the interfaces it creates with the fleet's
// cluster tag, the one the spokes' boundary lets the node role attach,
// assign IPs on and delete by; the other add-ons take EKS's defaults.
func TestVPCCNITagsItsInterfaces(t *testing.T) {
	p := testParams(t)
	cluster := spokeiam.ClusterName(p.Input.Hub(), p.Spoke)
	runs := converge(t, p)
	last := runs[len(runs)-1]
	want := map[string]string{"addon-vpc-cni": `{"env":{"ADDITIONAL_ENI_TAGS":"{\"eksfleet.io/cluster\":\"` + cluster + `\"}"}}`,
		"addon-kube-proxy": "", "addon-coredns": ""}
	got := map[string]string{}
	for key := range want {
		o, ok := last.Objects[key]
		if !ok {
			t.Fatalf("%s not composed", key)
		}
		cfg, _ := o["spec"].(Object)["forProvider"].(Object)["configurationValues"].(string)
		got[key] = cfg
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("configurationValues\n%q\nwant\n%q", got, want)
	}
	var cfg struct {
		Env map[string]string `json:"env"`
	}
	if err := json.Unmarshal([]byte(got["addon-vpc-cni"]), &cfg); err != nil {
		t.Fatal(err)
	}
	var tags map[string]string
	if err := json.Unmarshal([]byte(cfg.Env["ADDITIONAL_ENI_TAGS"]), &tags); err != nil {
		t.Fatalf("ADDITIONAL_ENI_TAGS %q is not the JSON object the CNI parses: %v", cfg.Env["ADDITIONAL_ENI_TAGS"], err)
	}
	if !reflect.DeepEqual(tags, map[string]string{fence.TagCluster: cluster}) {
		t.Errorf("ADDITIONAL_ENI_TAGS %v", tags)
	}
}
