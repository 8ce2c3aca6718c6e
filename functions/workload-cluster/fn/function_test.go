package fn

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reference"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/compose"
	"github.com/gitops-fleet/eks-fleet/functions/workload-cluster/fnjson"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

const testHub = "mgmt"

func xr(spoke, vpc string, azs int, nat string) string {
	return fmt.Sprintf(`{"apiVersion":"platform.eksfleet.io/v1alpha1","kind":"XWorkloadCluster",
"metadata":{"name":"%s-x7k2q","labels":{%q:%q}},
"spec":{"region":"eu-west-1","kubernetesVersion":"1.35","vpcCidr":%q,"availabilityZones":%d,"natMode":%q,
"nodes":{"instanceTypes":["m7i.large"],"min":2,"desired":2,"max":4},"tags":{"team":"payments"}}}`,
		spoke, fnjson.ClaimNameLabel, spoke, vpc, azs, nat)
}

func newRequest(t *testing.T, xrJSON string, hub string, observed map[string]string) *fnv1.RunFunctionRequest {
	t.Helper()
	req := &fnv1.RunFunctionRequest{
		Input:    resource.MustStructJSON(inputJSON(t, hub)),
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(xrJSON)}, Resources: map[string]*fnv1.Resource{}},
	}
	for name, j := range observed {
		req.Observed.Resources[name] = &fnv1.Resource{Resource: resource.MustStructJSON(j)}
	}
	return req
}

// inputJSON is the function input Flux writes from the example cluster-info.
func inputJSON(t *testing.T, hub string) string {
	t.Helper()
	info := clusterinfo.Example()
	info.HubName = hub
	info.SpokeBoundaryARN = hubiam.Env{Partition: info.Partition, AccountID: info.AccountID, HubName: hub}.BoundaryARN()
	in, err := compose.InputFrom(info)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{"apiVersion": "fn.eksfleet.io/v1alpha1", "kind": "Input"}
	b, _ := json.Marshal(in)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(m)
	return string(b)
}

func run(t *testing.T, req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	rsp, err := (&Function{}).RunFunction(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rsp
}

func fatal(rsp *fnv1.RunFunctionResponse) string {
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return r.GetMessage()
		}
	}
	return ""
}

func kinds(rsp *fnv1.RunFunctionResponse) map[string]int {
	n := map[string]int{}
	for _, r := range rsp.GetDesired().GetResources() {
		n[r.GetResource().GetFields()["kind"].GetStringValue()]++
	}
	return n
}

func field(r *fnv1.Resource, path ...string) string {
	v := structpb.NewStructValue(r.GetResource())
	for _, p := range path {
		v = v.GetStructValue().GetFields()[p]
	}
	return v.GetStringValue()
}

func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		azs           int
		nat           string
		subnets, nats int
	}{
		{2, "single", 4, 1}, {2, "per-az", 4, 2}, {3, "single", 6, 1}, {3, "per-az", 6, 3},
	} {
		t.Run(fmt.Sprintf("%daz-%s", tc.azs, tc.nat), func(t *testing.T) {
			rsp := run(t, newRequest(t, xr("pay", "10.20.0.0/16", tc.azs, tc.nat), testHub, nil))
			if m := fatal(rsp); m != "" {
				t.Fatal(m)
			}
			k := kinds(rsp)
			want := map[string]int{"VPC": 1, "InternetGateway": 1, "Subnet": tc.subnets, "NATGateway": tc.nats, "EIP": tc.nats,
				"RouteTable": 1 + tc.azs, "Route": 1 + tc.azs, "RouteTableAssociation": 2 * tc.azs}
			for kind, n := range want {
				if k[kind] != n {
					t.Errorf("%s: got %d, want %d", kind, k[kind], n)
				}
			}
			for name := range rsp.GetDesired().GetResources() {
				if tc.azs == 2 && (strings.HasSuffix(name, "-c") || strings.Contains(name, "-c-")) {
					t.Errorf("AZ c not in use but %s composed", name)
				}
				if strings.Contains(fmt.Sprint(rsp.GetDesired().GetResources()[name]), "managementPolicies") {
					t.Errorf("%s carries managementPolicies", name)
				}
			}
		})
	}
}

// single -> per-az: private routes b and c move from NAT a to their own NAT.
func TestNATModeChangeReroutes(t *testing.T) {
	before := run(t, newRequest(t, xr("pay", "10.20.0.0/16", 3, "single"), testHub, nil)).GetDesired().GetResources()
	after := run(t, newRequest(t, xr("pay", "10.20.0.0/16", 3, "per-az"), testHub, nil)).GetDesired().GetResources()
	for _, z := range []string{"a", "b", "c"} {
		key := "route-private-" + z + "-default"
		if got := field(before[key], "spec", "forProvider", "natGatewayIdRef", "name"); got != "pay-nat-a" {
			t.Errorf("single: %s routes via %s, want pay-nat-a", key, got)
		}
		if got := field(after[key], "spec", "forProvider", "natGatewayIdRef", "name"); got != "pay-nat-"+z {
			t.Errorf("per-az: %s routes via %s, want pay-nat-%s", key, got, z)
		}
		if _, ok := after["nat-gateway-"+z]; !ok {
			t.Errorf("per-az: nat-gateway-%s missing", z)
		}
		// The route already carries the ID resolved under "single"; the
		// changed Ref reroutes only if crossplane-runtime's resolver does
		// not treat the request as a no-op (an ID once set is kept unless
		// the policy is Always).
		var r struct {
			Spec struct {
				ForProvider struct {
					NatGatewayIDRef *xpv2.Reference `json:"natGatewayIdRef"`
				} `json:"forProvider"`
			} `json:"spec"`
		}
		if err := json.Unmarshal([]byte(protojson.Format(after[key].GetResource())), &r); err != nil {
			t.Fatal(err)
		}
		req := reference.ResolutionRequest{CurrentValue: "nat-0aaaaaaaaaaaaaaaa", Reference: r.Spec.ForProvider.NatGatewayIDRef}
		if req.IsNoOp() {
			t.Errorf("per-az: %s keeps the NAT it resolved first: crossplane-runtime does not re-resolve %+v", key, r.Spec.ForProvider.NatGatewayIDRef)
		}
	}
}

// Names come from the Go packages the program uses.
func TestNamesEqualProgram(t *testing.T) {
	rsp := run(t, newRequest(t, xr("pay-eu", "10.30.0.0/17", 2, "single"), testHub, nil))
	res := rsp.GetDesired().GetResources()
	want := spokeiam.ClusterName(hubiam.Env{HubName: testHub}, "pay-eu")
	if got := field(res["vpc"], "spec", "forProvider", "tags", "Name"); got != want {
		t.Errorf("vpc Name tag %q, want %q", got, want)
	}
	for name, r := range res {
		if c := field(r, "spec", "forProvider", "tags", "eksfleet.io/cluster"); c != "" && c != want {
			t.Errorf("%s cluster tag %q, want %q", name, c, want)
		}
		// IAM names and regions are checked in compose (spokeiam's names,
		// IAM is global); the network objects are <spoke>-… in the region.
		if !strings.HasPrefix(field(r, "apiVersion"), "ec2.") {
			continue
		}
		if !strings.HasPrefix(field(r, "metadata", "name"), "pay-eu-") {
			t.Errorf("%s metadata.name %q not prefixed by the spoke", name, field(r, "metadata", "name"))
		}
		if field(r, "spec", "forProvider", "region") != "eu-west-1" {
			t.Errorf("%s has no region", name)
		}
	}
	if got := field(res["subnet-private-b"], "spec", "forProvider", "cidrBlock"); got != "10.30.32.0/19" {
		t.Errorf("subnet-private-b %s, want 10.30.32.0/19", got)
	}
	if got := field(res["subnet-public-a"], "spec", "forProvider", "tags", "team"); got != "payments" {
		t.Errorf("claim tag not propagated: %q", got)
	}
}

func TestReadiness(t *testing.T) {
	ready := `{"apiVersion":"ec2.aws.upbound.io/v1beta1","kind":"VPC","metadata":{"name":"pay-vpc"},"status":{"conditions":[{"type":"Ready","status":"True","reason":"Available"}]}}`
	notReady := `{"apiVersion":"ec2.aws.upbound.io/v1beta1","kind":"Subnet","metadata":{"name":"pay-private-a"},"status":{"conditions":[{"type":"Ready","status":"False","reason":"Creating"}]}}`
	rsp := run(t, newRequest(t, xr("pay", "10.20.0.0/16", 2, "single"), testHub, map[string]string{"vpc": ready, "subnet-private-a": notReady}))
	res := rsp.GetDesired().GetResources()
	var readyNames []string
	for name, r := range res {
		if r.GetReady() == fnv1.Ready_READY_TRUE {
			readyNames = append(readyNames, name)
		}
	}
	sort.Strings(readyNames)
	if strings.Join(readyNames, ",") != "vpc" {
		t.Errorf("ready: %v, want only vpc (observed Ready=True)", readyNames)
	}
	if res["subnet-private-a"].GetReady() != fnv1.Ready_READY_FALSE || res["nat-gateway-a"].GetReady() != fnv1.Ready_READY_FALSE {
		t.Error("not-ready and unobserved resources must be READY_FALSE")
	}
}

// Planted errors: a bad XR or input stops with a fatal result naming the field.
func TestFatal(t *testing.T) {
	noLabel := strings.Replace(xr("pay", "10.20.0.0/16", 2, "single"), fnjson.ClaimNameLabel, "other", 1)
	for _, tc := range []struct {
		name, xr, hub, want string
	}{
		{"host bits", xr("pay", "10.20.1.0/16", 2, "single"), testHub, "spec.vpcCidr"},
		{"too small", xr("pay", "10.20.0.0/19", 2, "single"), testHub, "spec.vpcCidr"},
		{"azs", xr("pay", "10.20.0.0/16", 4, "single"), testHub, "spec.availabilityZones"},
		{"nat", xr("pay", "10.20.0.0/16", 2, "both"), testHub, "spec.natMode"},
		{"no claim", noLabel, testHub, fnjson.ClaimNameLabel},
		{"no hub", xr("pay", "10.20.0.0/16", 2, "single"), "", "hubName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rsp := run(t, newRequest(t, tc.xr, tc.hub, nil))
			if m := fatal(rsp); !strings.Contains(m, tc.want) {
				t.Errorf("fatal %q, want it to name %q", m, tc.want)
			}
			if len(rsp.GetDesired().GetResources()) != 0 {
				t.Errorf("composed %d resources despite the error", len(rsp.GetDesired().GetResources()))
			}
		})
	}
}

// While the cluster waits for its log group (or the IRSA roles for the
// issuer, the node group for its launch template, the add-ons for the node
// group), the XR is not ready even though everything composed so far may
// be; once the cluster reports, its facts reach the XR status.
func TestXRReadyOnlyWhenNothingPending(t *testing.T) {
	rsp := run(t, newRequest(t, xr("pay", "10.20.0.0/16", 2, "single"), testHub, nil))
	if got := rsp.GetDesired().GetComposite().GetReady(); got != fnv1.Ready_READY_FALSE {
		t.Errorf("first run: XR ready %v, want READY_FALSE (cluster not composed yet)", got)
	}
	if _, ok := rsp.GetDesired().GetResources()["cluster"]; ok {
		t.Error("cluster composed before its log group")
	}
	if got := rsp.GetMeta().GetTtl().AsDuration(); got != 30*time.Second {
		t.Errorf("first run: TTL %s, want 30s (fnjson.PendingTTL: the spoke is being made)", got)
	}
	logs := `{"apiVersion":"cloudwatchlogs.aws.upbound.io/v1beta1","kind":"Group","metadata":{"name":"pay-logs"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`
	cluster := `{"apiVersion":"eks.aws.upbound.io/v1beta1","kind":"Cluster","metadata":{"name":"pay-eks"},"status":{"atProvider":{"arn":"arn:aws:eks:eu-west-1:111122223333:cluster/mgmt-pay","identity":[{"oidc":[{"issuer":"https://oidc.eks.eu-west-1.amazonaws.com/id/ABC"}]}]},"conditions":[{"type":"Ready","status":"True"}]}}`
	vpc := `{"apiVersion":"ec2.aws.upbound.io/v1beta1","kind":"VPC","metadata":{"name":"pay-vpc"},"status":{"atProvider":{"id":"vpc-1"}}}`
	lt := `{"apiVersion":"ec2.aws.upbound.io/v1beta2","kind":"LaunchTemplate","metadata":{"name":"pay-nodes"},"status":{"atProvider":{"id":"lt-1","latestVersion":1}}}`
	rsp = run(t, newRequest(t, xr("pay", "10.20.0.0/16", 2, "single"), testHub, map[string]string{"log-group": logs, "cluster": cluster, "vpc": vpc, "launch-template": lt}))
	if got := rsp.GetDesired().GetComposite().GetReady(); got != fnv1.Ready_READY_FALSE {
		t.Errorf("node group composed: XR ready %v, want READY_FALSE (the EKS add-ons wait for the node group)", got)
	}
	nodes := `{"apiVersion":"eks.aws.upbound.io/v1beta2","kind":"NodeGroup","metadata":{"name":"pay-nodes"},"status":{"atProvider":{"version":"1.35"},"conditions":[{"type":"Ready","status":"True"}]}}`
	rsp = run(t, newRequest(t, xr("pay", "10.20.0.0/16", 2, "single"), testHub, map[string]string{"log-group": logs, "cluster": cluster, "vpc": vpc, "launch-template": lt, "node-group": nodes}))
	res := rsp.GetDesired().GetResources()
	for _, k := range []string{"cluster", "node-group", "role-lbc", "role-lbc-policy", "oidc-provider", "usage-role-lbc-policy-by-nodes", "addon-vpc-cni", "addon-kube-proxy", "addon-coredns"} {
		if _, ok := res[k]; !ok {
			t.Errorf("%s not composed once the log group is Ready and the issuer known", k)
		}
	}
	if got := rsp.GetDesired().GetComposite().GetReady(); got == fnv1.Ready_READY_FALSE {
		t.Error("XR forced not ready although nothing is pending")
	}
	if got := field(rsp.GetDesired().GetComposite(), "status", "oidcIssuer"); got != "oidc.eks.eu-west-1.amazonaws.com/id/ABC" {
		t.Errorf("XR status.oidcIssuer %q", got)
	}
}

// A missing deploy key on a running hub: the deploy-key step observed not Ready with
// no SealedSecret applied gives a warning and a False XR condition naming
// fleet cluster add; the bootstrap objects are still composed (Flux's
// dependsOn keeps sync waiting).
func TestDeployKeyMissingWarns(t *testing.T) {
	const spoke = "apps-staging"
	vpc := `{"apiVersion":"ec2.aws.upbound.io/v1beta1","kind":"VPC","metadata":{"name":"apps-staging-vpc"},"status":{"atProvider":{"id":"vpc-1"}}}`
	cluster := `{"apiVersion":"eks.aws.upbound.io/v1beta1","kind":"Cluster","metadata":{"name":"apps-staging"},"status":{"atProvider":{"arn":"arn:aws:eks:eu-west-1:111122223333:cluster/mgmt-apps-staging","identity":[{"oidc":[{"issuer":"https://oidc.example/id/1"}]}]}}}`
	dk := `{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":"apps-staging-deploy-key","namespace":"flux-system"},"status":{"conditions":[{"type":"Ready","status":"False","reason":"HealthCheckFailed"}],"inventory":{"entries":[]}}}`
	for _, tc := range []struct {
		name   string
		obs    map[string]string
		notice bool
	}{
		{"key missing", map[string]string{"vpc": vpc, "cluster": cluster, "bootstrap-deploy-key": dk}, true},
		{"not yet there", map[string]string{"vpc": vpc, "cluster": cluster}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rsp := run(t, newRequest(t, xr(spoke, "10.20.0.0/16", 2, "single"), testHub, tc.obs))
			if m := fatal(rsp); m != "" {
				t.Fatal(m)
			}
			var warned, cond bool
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING && strings.Contains(r.GetMessage(), "fleet cluster add "+spoke) {
					warned = true
				}
			}
			for _, c := range rsp.GetConditions() {
				if c.GetType() == "DeployKeyReady" && c.GetStatus() == fnv1.Status_STATUS_CONDITION_FALSE && strings.Contains(c.GetMessage(), "fleet cluster add "+spoke) {
					cond = true
				}
			}
			if warned != tc.notice || cond != tc.notice {
				t.Errorf("warning %v, condition %v, want %v", warned, cond, tc.notice)
			}
			res := rsp.GetDesired().GetResources()
			if res["bootstrap-sync"] == nil || res["kubeconfig"] == nil {
				t.Error("bootstrap not composed")
			}
			if res["kubeconfig"].GetReady() != fnv1.Ready_READY_FALSE {
				t.Error("unobserved kubeconfig must not be ready")
			}
		})
	}
}
