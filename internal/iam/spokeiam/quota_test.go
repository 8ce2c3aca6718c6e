package spokeiam_test

import (
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/components/sealingkeys"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// longest is a fleet at the longest names the validators admit: hub and
// spoke names at their maximum, the longest region and partition, the
// longest sealing secret name, the admin trust at its limit, and the most
// subnets a spoke has (a public and a private one in each of the most
// zones).
func longest(p, r string) (hubiam.Env, spokeiam.Spoke, string, string) {
	env := hubiam.Env{Partition: p, AccountID: "123456789012", Region: r, HubName: strings.Repeat("h", workloadcluster.MaxHubNameLength)}
	secretARN := "arn:" + p + ":secretsmanager:" + r + ":123456789012:secret:" + secretName(hubiam.MaxSealingSecretNameLength) + "-AbCdEf"
	keyARN := "arn:" + p + ":kms:" + r + ":123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	s := spokeiam.Spoke{
		Hub: env, Name: strings.Repeat("s", workloadcluster.MaxNameLength),
		OIDCIssuer:  "oidc.eks." + r + ".amazonaws.com/id/" + strings.Repeat("A", 32),
		FluxRoleARN: "arn:" + p + ":iam::123456789012:role/" + hubiam.FluxRoleName(env.HubName),
	}
	s.SubnetIDs = spokeiam.PendingSubnetIDs(workloadcluster.MaxAvailabilityZones)
	return env, s, secretARN, keyARN
}

// secretName is the secret's name as the program makes it from a
// sealingSecretName of n characters: the setting, "-" and the random hex
// suffix (Secrets Manager then appends "-" and six characters to the ARN).
func secretName(n int) string {
	return strings.Repeat("s", n) + "-" + strings.Repeat("0", 2*sealingkeys.SuffixBytes)
}

func TestEveryDocumentFitsAtTheLongestAdmittedNames(t *testing.T) {
	if len(hubiam.LongestRegions) != len(hubiam.SupportedPartitions) {
		t.Fatalf("LongestRegions %v does not cover the supported partitions %v", hubiam.LongestRegions, hubiam.SupportedPartitions)
	}
	for p, r := range hubiam.LongestRegions {
		t.Run(p, func(t *testing.T) { fitsAtTheLongest(t, p, r) })
	}
}

func fitsAtTheLongest(t *testing.T, p, r string) {
	env, s, secretARN, keyARN := longest(p, r)
	hubUsages := hubiam.Usages(env, secretARN, keyARN)
	spokeUsages, err := spokeiam.Usages(s)
	if err != nil {
		t.Fatal(err)
	}
	all := append(hubUsages, spokeUsages...)
	kinds := map[string]bool{}
	inline := map[string]int{}
	for _, u := range all {
		kinds[u.Kind] = true
		if !u.Fits() {
			t.Errorf("%s %s (%s): %d characters, quota %d", u.Role, u.Kind, u.ARN, u.Size, u.Quota)
		}
		if u.Kind == hubiam.KindInline {
			inline[u.Role] += u.Size
		}
		t.Logf("%-60s %-9s %5d / %5d", u.Role, u.Kind, u.Size, u.Quota)
	}
	for role, n := range inline {
		if n > hubiam.QuotaInlinePerRole {
			t.Errorf("%s: inline policies total %d, IAM allows %d per role", role, n, hubiam.QuotaInlinePerRole)
		}
	}
	for _, k := range []string{hubiam.KindBoundary, hubiam.KindManaged, hubiam.KindInline, hubiam.KindTrust, hubiam.KindRoleName} {
		if !kinds[k] {
			t.Errorf("no %s measured", k)
		}
	}
	if err := hubiam.CheckQuotas(env, secretARN, keyARN); err != nil {
		t.Error(err)
	}
	if err := spokeiam.CheckQuotas(s); err != nil {
		t.Error(err)
	}
}

// Longer admin lists than the limit do not fit, so the validators must
// refuse them (and do, through these checks). The sealing secret's name
// has only Secrets Manager's limit: its ARN is in no spoke document, and
// the hub's documents fit at that limit (above).
func TestQuotaChecksCatchWhatWouldNotFit(t *testing.T) {
	arn := "arn:aws:iam::123456789012:role/" + strings.Repeat("p/", 100) + strings.Repeat("r", 64)
	if err := spokeiam.CheckAdminTrust([]string{arn, arn + "2", arn + "3", arn + "4", arn + "5", arn + "6", arn + "7", arn + "8", arn + "9", arn + "0"}); err == nil {
		t.Error("ten long admin ARNs accepted")
	}
	if err := spokeiam.CheckAdminTrust([]string{"arn:aws:iam::123456789012:role/platform-admin"}); err != nil {
		t.Error(err)
	}
	// and the longest role name a spoke's Crossplane may mint still fits
	_, s, _, _ := longest("aws", hubiam.LongestRegions["aws"])
	if got := len(spokeiam.AppRolePrefix(s.Hub, s.Name)) + spokeiam.MintedRoleNameBudget; got > hubiam.QuotaRoleName {
		t.Errorf("minted role names reach %d characters", got)
	}
}
