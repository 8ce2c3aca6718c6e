package spokeiam

import (
	"slices"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
)

func testSpoke() Spoke {
	return Spoke{
		Hub:         hubiam.Env{Partition: "aws", AccountID: "123456789012", Region: "eu-west-1", HubName: "mgmt"},
		Name:        "apps-staging",
		OIDCIssuer:  "oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
		FluxRoleARN: "arn:aws:iam::123456789012:role/mgmt-flux",
	}
}

func TestRolesRoundTripAndCarryTheBoundary(t *testing.T) {
	s := testSpoke()
	roles, err := Roles(s)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range roles {
		keys = append(keys, r.Key)
		if r.BoundaryARN != s.Hub.BoundaryARN() {
			t.Errorf("%s: boundary %q, want %q", r.Key, r.BoundaryARN, s.Hub.BoundaryARN())
		}
		if !strings.HasPrefix(r.Name, s.Hub.SpokeRolePrefix()+s.Name+"-") {
			t.Errorf("%s: name %q outside the spoke's role prefix", r.Key, r.Name)
		}
		docs := []policydoc.Document{r.Trust}
		if r.Inline != nil {
			docs = append(docs, *r.Inline)
			for _, e := range policydoc.CheckLeastPrivilege(*r.Inline) {
				t.Errorf("%s inline: %v", r.Key, e)
			}
		}
		for _, d := range docs {
			back, err := policydoc.Parse(d.MustJSON())
			if err != nil {
				t.Fatalf("%s: %v", r.Key, err)
			}
			if back.MustJSON() != d.MustJSON() {
				t.Errorf("%s: document does not round-trip", r.Key)
			}
		}
	}
	if !slices.Equal(keys, RoleKeys()) {
		t.Errorf("roles %v, want %v", keys, RoleKeys())
	}
}

func TestIRSARolesWaitForTheIssuerAndTrustExactAccounts(t *testing.T) {
	s := testSpoke()
	s.OIDCIssuer = ""
	roles, err := Roles(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		if r.IRSA {
			t.Errorf("%s: IRSA role composed before the cluster has an issuer", r.Key)
		}
	}

	s = testSpoke()
	roles, _ = Roles(s)
	want := map[string]serviceaccounts.ServiceAccount{
		RoleCrossplane: serviceaccounts.SpokeCrossplaneAWS,
		RoleLBC:        serviceaccounts.SpokeLoadBalancerControl,
	}
	for _, r := range roles {
		sa, ok := want[r.Key]
		if ok != r.IRSA {
			t.Errorf("%s: IRSA=%v, want %v", r.Key, r.IRSA, ok)
		}
		if !ok {
			continue
		}
		st := r.Trust.Statement[0]
		if st.Principal["Federated"] != s.OIDCProviderARN() {
			t.Errorf("%s: federated principal %v", r.Key, st.Principal["Federated"])
		}
		op := "StringEquals"
		if sa.Prefix {
			op = "StringLike"
		}
		if got := st.Condition[op][s.OIDCIssuer+":sub"]; got != sa.Subject() {
			t.Errorf("%s: %s sub = %v, want %q", r.Key, op, got, sa.Subject())
		}
		if got := st.Condition["StringEquals"][s.OIDCIssuer+":aud"]; got != "sts.amazonaws.com" {
			t.Errorf("%s: aud = %v", r.Key, got)
		}
	}
}

func TestAdminTrust(t *testing.T) {
	s := testSpoke()
	admin := func(s Spoke) Role {
		roles, err := Roles(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range roles {
			if r.Key == RoleAdmin {
				return r
			}
		}
		t.Fatal("no admin role")
		return Role{}
	}
	if got := admin(s).Trust.Statement[0].Principal["AWS"]; got != s.FluxRoleARN {
		t.Errorf("no admins: trust %v, want only the hub's Flux role", got)
	}
	s.AdminPrincipalARNs = []string{"arn:aws:iam::123456789012:role/platform-admins"}
	got, _ := admin(s).Trust.Statement[0].Principal["AWS"].([]string)
	if !slices.Equal(got, s.AdminPrincipalARNs) {
		t.Errorf("admins: trust %v, want %v", got, s.AdminPrincipalARNs)
	}
}

func TestRoleNamesFitIAMAtTheLongestAdmittedNames(t *testing.T) {
	s := testSpoke()
	s.Hub.HubName = strings.Repeat("h", workloadcluster.MaxHubNameLength)
	s.Name = strings.Repeat("s", workloadcluster.MaxNameLength)
	roles, err := Roles(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		if len(r.Name) > 64 {
			t.Errorf("%s: role name %q is %d characters, IAM allows 64", r.Key, r.Name, len(r.Name))
		}
	}
}

func TestValidateNamesEveryMissingField(t *testing.T) {
	_, err := Roles(Spoke{})
	if err == nil {
		t.Fatal("empty spoke accepted")
	}
	for _, f := range []string{"Name", "FluxRoleARN", "Partition"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not name %s", err, f)
		}
	}
}

// The boundary reads the spoke from the role's tags: every role carries
// them, IRSA roles also the issuer, and names keep the '_' separator for
// what the spoke's Crossplane mints only.
func TestRolesCarryTheFenceTags(t *testing.T) {
	s := testSpoke()
	roles, err := Roles(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		if r.Tags[fence.TagSpoke] != s.Name || r.Tags[fence.TagCluster] != ClusterName(s.Hub, s.Name) {
			t.Errorf("%s: tags %v", r.Key, r.Tags)
		}
		if _, ok := r.Tags[fence.TagOIDC]; ok != r.IRSA || (r.IRSA && r.Tags[fence.TagOIDC] != s.OIDCIssuer) {
			t.Errorf("%s: IRSA=%v, oidc tag %q", r.Key, r.IRSA, r.Tags[fence.TagOIDC])
		}
		if strings.Contains(r.Name, fence.MintedRoleSeparator) {
			t.Errorf("%s: composed role %q uses the minted-role separator", r.Key, r.Name)
		}
	}
	if got, want := AppRolePrefix(s.Hub, "pay"), "mgmt-spoke-pay_"; got != want {
		t.Errorf("AppRolePrefix = %q, want %q", got, want)
	}
	if got, want := AppDataPrefix(s.Hub, "pay"), "mgmt-pay_"; got != want {
		t.Errorf("AppDataPrefix = %q, want %q", got, want)
	}
	if strings.HasPrefix(AppRolePrefix(s.Hub, "pay-eu"), AppRolePrefix(s.Hub, "pay")) ||
		strings.HasPrefix(AppRolePrefix(s.Hub, "x-app-y"), AppRolePrefix(s.Hub, "x")) {
		t.Error("one spoke's minted-role prefix covers another's")
	}
}

// Only an EC2 subnet ID may enter the subnet fence.
func TestIsSubnetID(t *testing.T) {
	cases := map[string]struct {
		reason string
		id     string
		want   bool
	}{
		"Long":       {reason: "EC2's IDs since 2018: 17 hex digits", id: "subnet-0123456789abcdef0", want: true},
		"Short":      {reason: "EC2's older IDs: 8 hex digits", id: "subnet-0123abcd", want: true},
		"Empty":      {reason: "not reported yet", id: ""},
		"Name":       {reason: "a managed resource's name Crossplane defaulted as its external name", id: "apps-staging-private-a"},
		"Upper":      {reason: "EC2 writes hex in lower case", id: "subnet-0123456789ABCDEF0"},
		"WrongWidth": {reason: "neither 8 nor 17 digits", id: "subnet-0123456789"},
		"Other":      {reason: "another EC2 resource", id: "vpc-0123456789abcdef0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsSubnetID(tc.id); got != tc.want {
				t.Errorf("%s: IsSubnetID(%q) = %v, want %v", tc.reason, tc.id, got, tc.want)
			}
		})
	}
}

// The placeholders fleet iam sizes documents with are real-shaped subnet
// IDs, two per zone, all distinct.
func TestPendingSubnetIDs(t *testing.T) {
	ids := PendingSubnetIDs(workloadcluster.MaxAvailabilityZones)
	if len(ids) != 2*workloadcluster.MaxAvailabilityZones {
		t.Fatalf("%d IDs for %d zones, want %d", len(ids), workloadcluster.MaxAvailabilityZones, 2*workloadcluster.MaxAvailabilityZones)
	}
	for _, id := range ids {
		if !IsSubnetID(id) || len(id) != len("subnet-")+17 {
			t.Errorf("%q is not a 17-digit subnet ID", id)
		}
	}
	if sorted := slices.Compact(slices.Sorted(slices.Values(ids))); len(sorted) != len(ids) {
		t.Errorf("IDs repeat: %v", ids)
	}
}
