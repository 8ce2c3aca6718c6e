package fleetcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

func TestIAM(t *testing.T) {
	f := newFixture(t)
	f.mustAdd("r1")
	stack := func(t *testing.T, body string) string {
		p := filepath.Join(t.TempDir(), "Pulumi.test.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prod, err := filepath.Abs(filepath.Join("..", "..", "..", "Pulumi.prod.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("hub and spoke, json", func(t *testing.T) {
		r := f.run(testDeps(), "iam", "r1", "-o", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var rep iamReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		got := map[string]bool{}
		for _, u := range rep.Documents {
			got[u.Role+" "+u.Kind] = true
			if u.Document != "" {
				d, err := policydoc.Parse(u.Document)
				if err != nil || policydoc.Size(d) != u.Size {
					t.Errorf("%s %s: size %d does not match its document (%v)", u.Role, u.Kind, u.Size, err)
				}
			}
		}
		env := hubiam.Env{HubName: rep.Hub}
		for _, want := range []string{
			hubiam.BoundaryPolicyName(rep.Hub) + " boundary",
			hubiam.CrossplaneRoleName(rep.Hub) + " managed",
			hubiam.FluxRoleName(rep.Hub) + " trust",
			spokeiam.RoleName(env, "r1", spokeiam.RoleLBC) + " inline",
			spokeiam.RoleName(env, "r1", spokeiam.RoleCrossplane) + " trust",
			spokeiam.RoleName(env, "r1", spokeiam.RoleAdmin) + " role-name",
		} {
			if !got[want] {
				t.Errorf("no %s in %v", want, got)
			}
		}
	})
	t.Run("stack file names the hub", func(t *testing.T) {
		r := f.run(testDeps(), "iam", "--stack", prod)
		if r.code != 0 || !strings.Contains(r.stdout, hubiam.BoundaryPolicyName("prod")+" ") || !strings.Contains(r.stdout, `"aws:FederatedProvider"`) {
			t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("a hub's spoke accounts", func(t *testing.T) {
		b, err := os.ReadFile(prod)
		if err != nil {
			t.Fatal(err)
		}
		p := stack(t, string(b)+"  eks-fleet:spokeAccounts:\n    - \"222233334444\"\n")
		r := f.run(testDeps(), "iam", "--stack", p, "-o", "json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var rep iamReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, u := range rep.Documents {
			got[u.Kind+" "+u.ARN] = u.Document
		}
		in := hubiam.Env{Partition: "aws", AccountID: rep.Account, Region: "us-east-1", HubName: "prod"}.InAccount("222233334444")
		for key, want := range map[string]string{
			"inline " + in.CrossplaneRoleARN() + "#spoke-accounts":             hubiam.CrossplaneAccounts(in, []string{"222233334444"}).MustJSON(),
			"managed arn:aws:iam::222233334444:policy/prod-crossplane-account": hubiam.Crossplane(in).MustJSON(),
			"boundary arn:aws:iam::222233334444:policy/prod-spoke-boundary":    hubiam.SpokeBoundary(in).MustJSON(),
			"trust arn:aws:iam::222233334444:role/prod-crossplane-account":     hubiam.AccountRoleTrust(in, pendingExternalID).MustJSON(),
			"role-name arn:aws:iam::222233334444:role/prod-crossplane-account": "",
			"scp scp/prod-fleet-account": hubiam.FleetAccountSCP(hubiam.Env{Partition: "aws", AccountID: rep.Account, Region: "us-east-1", HubName: "prod"},
				[]string{pendingDeployer(hubiam.Env{Partition: "aws", AccountID: rep.Account})}).MustJSON(),
		} {
			if doc, ok := got[key]; !ok || doc != want {
				t.Errorf("%s: %q, want %q", key, doc, want)
			}
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown cluster", []string{"iam", "zz"}, 1, "zz"},
		{"a document over its quota", []string{"iam", "--cluster-info", stack(t, "SEALING_SECRET_ARN: arn:aws:secretsmanager:eu-west-1:111122223333:secret:"+
			strings.Repeat("s", 6000)+"-AbCdEf\n")}, 1, "OVER QUOTA"},
		{"bad output", []string{"iam", "-o", "yaml"}, 2, "allowed text, json"},
		{"stack the validator refuses", []string{"iam", "--stack", stack(t, "config:\n  aws:region: eu-west-1\n  eks-fleet:sealingSecretName: "+strings.Repeat("s", 504)+"\n")}, 1, "sealingSecretName"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := f.run(testDeps(), tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
		})
	}
}
