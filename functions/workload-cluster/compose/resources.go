package compose

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gitops-fleet/eks-fleet/internal/contract/awsgroups"
	"github.com/gitops-fleet/eks-fleet/internal/contract/clusterinfo"
	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/contract/lbsubnets"
	"github.com/gitops-fleet/eks-fleet/internal/contract/spokeaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// Params is what the function reads: the hub from the function input, the
// spoke from the claim label, its spec from the XR and, per
// composition-resource-name, the composed resources Crossplane observed.
type Params struct {
	Input Input
	Spoke string
	Spec  workloadcluster.Spec
	// Observed holds the observed composed resources by
	// composition-resource-name (nil on the first run).
	Observed map[string]Object
}

// Object is one composed resource as a plain JSON-able map.
type Object = map[string]any

// Composed is what the function composes for one XR.
type Composed struct {
	// Objects are the desired composed resources by
	// composition-resource-name.
	Objects map[string]Object
	// Pending says what is not composed yet and why. The XR is not ready
	// while anything is pending.
	Pending []string
	// Status is written to the XR's status (what Crossplane observed of the
	// composed resources: cluster ARN, OIDC issuer, VPC id).
	Status map[string]any
	// Notices are XR conditions (and, when they need the operator,
	// warnings) the bootstrap reports.
	Notices []Notice
	// Progressing says what is under way that no composed resource's
	// readiness shows: a Kubernetes upgrade between its stages (the
	// cluster and its node groups stay Ready while AWS updates them).
	Progressing []string
}

// add composes obj under key; a key composed twice is a programming error
// that would silently drop an object, so it fails.
func (c *Composed) add(key string, obj Object) error {
	if _, dup := c.Objects[key]; dup {
		return fmt.Errorf("composition-resource-name %q composed twice", key)
	}
	c.Objects[key] = obj
	return nil
}

// Part composes one part of a spoke into c. Parts run in order; a later
// part sees what earlier ones composed.
type Part func(p Params, c *Composed) error

// Parts lists the parts of a spoke in the order they are composed. Usages
// come last: they hold only what the other parts composed.
func Parts() []Part {
	return []Part{
		networkPart,
		IAM,
		ClusterPart,
		bootstrapPart,
		syncedPart,
		accountPart,
		Usages,
	}
}

// Compose composes everything the hub manages for one spoke. A bad input
// field or spec field fails it, naming the field, before anything is
// composed.
func Compose(p Params) (Composed, error) {
	if err := p.Input.Validate(); err != nil {
		return Composed{}, err
	}
	if err := p.ValidateSpec(); err != nil {
		return Composed{}, &SpecError{Err: err}
	}
	c := Composed{Objects: map[string]Object{}, Status: map[string]any{}}
	for _, part := range Parts() {
		if err := part(p, &c); err != nil {
			return Composed{}, err
		}
	}
	return c, nil
}

// SpecAcceptedCondition is the condition, on the XR and its claim, that
// says whether the function accepts the spec: False with why when it
// refuses it (a SpecError; the fatal result shows only on the XR), True
// again once a spec it refused is accepted. A spec never refused has no
// such condition.
const SpecAcceptedCondition = "SpecAccepted"

// SpecError is a spec Compose refuses (ValidateSpec): nothing is composed.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// ValidateSpec refuses what the fence rests on and the XRD refuses too,
// for a claim the served XRD let through (an XRD older than the function's
// release, an edited one, or a value CRD validation ratcheting kept on an
// update): a tag key the spokes' boundary trusts (fence.CheckUserTagKey)
// would hand this spoke's resources to another spoke's roles. And an
// account the hub cannot reach: one its Crossplane may not assume into
// (not in the function input's spokeAccounts) would leave every managed
// resource failing on its ProviderConfig.
func (p Params) ValidateSpec() error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(p.Spec.Tags)) {
		if err := fence.CheckUserTagKey(k); err != nil {
			errs = append(errs, fmt.Errorf("spec.tags: %w", err))
		}
	}
	if err := p.checkAccount(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkAccount refuses a spec.account the hub cannot make a spoke in.
func (p Params) checkAccount() error {
	a := p.Spec.Account
	switch {
	case a == "":
		return nil
	case !hubiam.AccountIDRE.MatchString(a):
		return fmt.Errorf("spec.account %q: not an AWS account ID (12 digits)", a)
	case a == p.Input.AccountID:
		return fmt.Errorf("spec.account %q is the hub's own account: leave spec.account empty for a spoke there", a)
	case !slices.Contains(p.Input.SpokeAccounts, a):
		known := "none"
		if len(p.Input.SpokeAccounts) > 0 {
			known = strings.Join(p.Input.SpokeAccounts, ", ")
		}
		return fmt.Errorf("spec.account %q is not one of the hub's spoke accounts (%s; cluster-info %s): prepare it with a spoke-account stack, "+
			"then list it in the hub stack's eks-fleet:spokeAccounts and the fleet policy's spec.accounts", a, known, clusterinfo.SpokeAccounts)
	}
	return nil
}

// accountPart points every AWS managed resource of a spoke in another
// account at that account's ProviderConfig (spokeaccounts): the provider
// then assumes the account's role to manage it. A spoke in the hub's
// account keeps the default ProviderConfig, and so its composed objects
// unchanged.
func accountPart(p Params, c *Composed) error {
	if p.Spec.Account == "" {
		return nil
	}
	for _, o := range c.Objects {
		group, _, _ := strings.Cut(fmt.Sprint(o["apiVersion"]), "/")
		if !awsgroups.ClusterScoped(group) {
			continue
		}
		spec, ok := o["spec"].(Object)
		if !ok {
			return fmt.Errorf("composed %s %s has no spec", o["kind"], str(o, "metadata", "name"))
		}
		spec["providerConfigRef"] = Object{"name": spokeaccounts.ProviderConfigName(p.Spec.Account)}
	}
	return nil
}

// bootstrapPart composes the hub-side spoke bootstrap (Bootstrap) and
// records its notices. Its holds follow Usages' rule: a hold Holds lists is
// left to Usages, and any other is composed only when both its ends are
// (a Usage whose user does not exist yet would hold nothing).
func bootstrapPart(p Params, c *Composed) error {
	objs, notices, err := Bootstrap(p, BootstrapIn{SystemPath: p.Input.GitOpsSystemPath, Observed: p.Observed})
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, h := range Holds() {
		listed["usage-"+h.Name] = true
	}
	composed := func(ref any) bool {
		kind, _ := field(ref, "kind").(string)
		name := str(ref, "resourceRef", "name")
		for _, set := range []map[string]Object{objs, c.Objects} {
			for _, o := range set {
				if o["kind"] == kind && str(o, "metadata", "name") == name {
					return true
				}
			}
		}
		return false
	}
	for _, k := range slices.Sorted(maps.Keys(objs)) {
		o := objs[k]
		if o["apiVersion"] == UsageAPI && (listed[k] || !composed(field(o, "spec", "of")) || !composed(field(o, "spec", "by"))) {
			continue
		}
		if err := c.add(k, o); err != nil {
			return err
		}
	}
	c.Notices = append(c.Notices, notices...)
	if _, ok := objs[KubeconfigKey]; !ok {
		// Bootstrap withholds everything until AWS reports the VPC ID, the
		// cluster ARN and the OIDC issuer; the XR is not ready meanwhile.
		c.Pending = append(c.Pending, "spoke bootstrap waits for AWS to report the VPC ID, the cluster ARN and the OIDC issuer (and, for a spoke in another account, the API endpoint and CA)")
	}
	return nil
}

func networkPart(p Params, c *Composed) error {
	objs, err := Network(p)
	if err != nil {
		return err
	}
	for k, o := range objs {
		if err := c.add(k, o); err != nil {
			return err
		}
	}
	if id, ok := atProvider(p.Observed["vpc"], "id").(string); ok && id != "" {
		c.Status["vpcId"] = id
	}
	return nil
}

const (
	ec2V1 = "ec2.aws.upbound.io/v1beta1"
	// tagsOnly tags an object with the cluster and claim tags but no Name.
	tagsOnly = "*"
)

// zoneIDs are the IDs of the zones the spoke's subnets go into, in slot
// order (a, b, c): the first spec.availabilityZones of what the hub looked
// up for the spoke's region. Zone IDs name the same physical zone in every
// account and skip the ones EKS refuses (the hub filtered them); zone
// names (<region>a) map to a different zone in each account.
func (p Params) zoneIDs() ([]string, error) {
	ids, ok := p.Input.SpokeZoneIDs[p.Spec.Region]
	if !ok {
		regions := slices.Sorted(maps.Keys(p.Input.SpokeZoneIDs))
		return nil, fmt.Errorf("spec.region %q: the hub looked up no availability zones there (cluster-info %s has %s); add the region to the hub stack's eks-fleet:spokeRegions",
			p.Spec.Region, clusterinfo.SpokeZoneIDs, strings.Join(regions, ", "))
	}
	if len(ids) < p.Spec.AvailabilityZones {
		return nil, fmt.Errorf("spec.availabilityZones %d: region %s has %d zones EKS accepts (%s)",
			p.Spec.AvailabilityZones, p.Spec.Region, len(ids), strings.Join(ids, ", "))
	}
	return ids[:p.Spec.AvailabilityZones], nil
}

// subnetZone places a subnet by zone ID, except a subnet that already
// exists by zone name (composed before zones were chosen by ID): the
// placement is immutable (AWS CreateSubnet; Terraform ForceNew), so it
// keeps the name it was created with rather than being replaced.
func (p Params) subnetZone(key, id string) Object {
	if az := str(p.Observed[key], "spec", "forProvider", "availabilityZone"); az != "" && str(p.Observed[key], "spec", "forProvider", "availabilityZoneId") == "" {
		return Object{"availabilityZone": az}
	}
	return Object{"availabilityZoneId": id}
}

// with returns o with every field of extra.
func with(extra, o Object) Object {
	maps.Copy(o, extra)
	return o
}

// Network composes the spoke's VPC: VPC, internet gateway, one public and one
// private subnet per AZ in use, NAT gateways and EIPs per natMode, route
// tables, routes and associations. Keys are the composition-resource-names
// the P&T Composition used, so existing XRs keep their objects. Nothing is
// composed for an AZ or NAT not in use. References name their target
// (…Ref.name) instead of selecting it; a private route's reference to its
// NAT gateway has resolve policy Always (alwaysRef below: crossplane-runtime
// resolves other references only while the field is empty), so the route
// follows its NAT when natMode changes.
func Network(p Params) (map[string]Object, error) {
	sub, err := PlanSubnets(p.Spec.VPCCIDR, p.Spec.AvailabilityZones)
	if err != nil {
		return nil, err
	}
	nats, via, err := NATZones(p.Spec.NATMode, p.Spec.AvailabilityZones)
	if err != nil {
		return nil, err
	}
	if p.Spoke == "" || p.Input.HubName == "" {
		return nil, fmt.Errorf("spoke name (claim label) and hub name (function input hubName) are required")
	}
	zoneIDs, err := p.zoneIDs()
	if err != nil {
		return nil, err
	}
	eks := spokeiam.ClusterName(p.env(), p.Spoke)
	name := func(part string) string { return p.Spoke + "-" + part }
	out := map[string]Object{}
	add := func(key, apiVersion, kind, metaName, tagName string, fp Object) {
		if tagName != "" {
			tags := map[string]any{}
			for k, v := range p.Spec.Tags {
				tags[k] = v
			}
			if t, ok := fp["tags"].(map[string]any); ok {
				maps.Copy(tags, t)
			}
			tags[fence.TagCluster] = eks
			if tagName != tagsOnly {
				tags["Name"] = tagName
			}
			fp["tags"] = tags
		}
		fp["region"] = p.Spec.Region
		out[key] = Object{
			"apiVersion": apiVersion, "kind": kind,
			"metadata": Object{"name": metaName},
			"spec":     Object{"forProvider": fp},
		}
	}
	ref := func(n string) Object { return Object{"name": n} }
	// alwaysRef is re-resolved on every reconcile: crossplane-runtime keeps
	// an ID once resolved unless the policy is Always
	// (crossplane-runtime v2 pkg/reference/reference.go:212-232, IsNoOp),
	// and the provider, not Crossplane, owns the resolved ID field, so
	// changing only the Ref's name (natMode) would never reroute.
	alwaysRef := func(n string) Object { return Object{"name": n, "policy": Object{"resolve": "Always"}} }
	vpcRef := ref(name("vpc"))

	add("vpc", ec2V1, "VPC", name("vpc"), eks, Object{
		"cidrBlock": p.Spec.VPCCIDR, "enableDnsSupport": true, "enableDnsHostnames": true})
	add("internet-gateway", ec2V1, "InternetGateway", name("igw"), tagsOnly, Object{"vpcIdRef": vpcRef})
	add("route-table-public", ec2V1, "RouteTable", name("public"), eks+"-public", Object{"vpcIdRef": vpcRef})
	add("route-public-default", "ec2.aws.upbound.io/v1beta2", "Route", name("public-default"), "", Object{
		"destinationCidrBlock": "0.0.0.0/0", "routeTableIdRef": ref(name("public")), "gatewayIdRef": ref(name("igw"))})
	for i, z := range AZSuffixes[:p.Spec.AvailabilityZones] {
		public, private := p.subnetZone("subnet-public-"+z, zoneIDs[i]), p.subnetZone("subnet-private-"+z, zoneIDs[i])
		add("subnet-public-"+z, ec2V1, "Subnet", name("public-"+z), eks+"-public-"+z, with(public, Object{
			"vpcIdRef": vpcRef, "cidrBlock": sub.Public[i].String(),
			"mapPublicIpOnLaunch": true, "tags": map[string]any{lbsubnets.Public: "1"}}))
		add("subnet-private-"+z, ec2V1, "Subnet", name("private-"+z), eks+"-private-"+z, with(private, Object{
			"vpcIdRef": vpcRef, "cidrBlock": sub.Private[i].String(),
			"mapPublicIpOnLaunch": false, "tags": map[string]any{lbsubnets.Internal: "1"}}))
		add("route-table-private-"+z, ec2V1, "RouteTable", name("private-"+z), eks+"-private-"+z, Object{"vpcIdRef": vpcRef})
		add("route-private-"+z+"-default", "ec2.aws.upbound.io/v1beta2", "Route", name("private-"+z+"-default"), "", Object{
			"destinationCidrBlock": "0.0.0.0/0", "routeTableIdRef": ref(name("private-" + z)),
			"natGatewayIdRef": alwaysRef(name("nat-" + via[z]))})
		add("route-table-association-public-"+z, ec2V1, "RouteTableAssociation", name("public-"+z), "", Object{
			"subnetIdRef": ref(name("public-" + z)), "routeTableIdRef": ref(name("public"))})
		add("route-table-association-private-"+z, ec2V1, "RouteTableAssociation", name("private-"+z), "", Object{
			"subnetIdRef": ref(name("private-" + z)), "routeTableIdRef": ref(name("private-" + z))})
	}
	for _, z := range nats {
		add("eip-"+z, ec2V1, "EIP", name("nat-"+z), eks+"-nat-"+z, Object{"domain": "vpc"})
		add("nat-gateway-"+z, ec2V1, "NATGateway", name("nat-"+z), eks+"-nat-"+z, Object{
			"connectivityType": "public", "allocationIdRef": ref(name("nat-" + z)), "subnetIdRef": ref(name("public-" + z))})
	}
	return out, nil
}
