package proof

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/internal/contract/serviceaccounts"
	"github.com/gitops-fleet/eks-fleet/internal/iam/hubiam"
	"github.com/gitops-fleet/eks-fleet/internal/proof/kbuild"
)

// createdSA is a service account the manifests make; Prefix when its name
// is only known up to a suffix (Crossplane provider revisions).
type createdSA struct {
	sa  serviceaccounts.ServiceAccount
	by  string
	obj kbuild.Built
}

// ServiceAccountsCreated lists the service accounts the given objects make
// on one cluster: ServiceAccount objects, Helm releases' service accounts
// (values.serviceAccount.name, else the chart's full name), and
// Crossplane providers' (their DeploymentRuntimeConfig's
// serviceAccountTemplate name, else <provider>-<revision hash>).
func ServiceAccountsCreated(objs []*unstructured.Unstructured) []serviceaccounts.ServiceAccount {
	bs := make([]kbuild.Built, 0, len(objs))
	for _, o := range objs {
		bs = append(bs, kbuild.Built{Object: o})
	}
	var out []serviceaccounts.ServiceAccount
	for _, c := range createdSAs(bs) {
		out = append(out, c.sa)
	}
	return out
}

func createdSAs(objs []kbuild.Built) []createdSA {
	var out []createdSA
	runtimeConfigs := map[string]*unstructured.Unstructured{}
	ociURLs := map[string]string{}
	crossplaneNS := ""
	for _, b := range objs {
		o := b.Object
		switch o.GetKind() {
		case "DeploymentRuntimeConfig":
			runtimeConfigs[o.GetName()] = o
		case "OCIRepository":
			u, _, _ := unstructured.NestedString(o.Object, "spec", "url")
			ociURLs[o.GetNamespace()+"/"+o.GetName()] = u
		}
	}
	for _, b := range objs {
		o := b.Object
		if o.GetKind() == "HelmRelease" && helmChart(o, ociURLs) == "crossplane" {
			crossplaneNS = releaseNamespace(o)
		}
	}
	if crossplaneNS == "" {
		crossplaneNS = "crossplane-system"
	}
	for _, b := range objs {
		o := b.Object
		switch {
		case o.GetKind() == "ServiceAccount" && o.GroupVersionKind().Group == "":
			out = append(out, createdSA{sa: serviceaccounts.ServiceAccount{Namespace: o.GetNamespace(), Name: o.GetName()}, by: "ServiceAccount", obj: b})
		case o.GetKind() == "HelmRelease":
			vals, _, _ := unstructured.NestedMap(o.Object, "spec", "values")
			if create, ok, _ := unstructured.NestedBool(vals, "serviceAccount", "create"); ok && !create {
				continue
			}
			name, _, _ := unstructured.NestedString(vals, "serviceAccount", "name")
			if name == "" {
				name = chartFullName(o, vals, helmChart(o, ociURLs))
			}
			out = append(out, createdSA{sa: serviceaccounts.ServiceAccount{Namespace: releaseNamespace(o), Name: name}, by: "HelmRelease " + o.GetNamespace() + "/" + o.GetName(), obj: b})
		case o.GetKind() == "Provider" && o.GroupVersionKind().Group == "pkg.crossplane.io":
			sa := serviceaccounts.ServiceAccount{Namespace: crossplaneNS, Name: o.GetName() + "-", Prefix: true}
			rc, _, _ := unstructured.NestedString(o.Object, "spec", "runtimeConfigRef", "name")
			if rc == "" {
				rc = "default"
			}
			if drc, ok := runtimeConfigs[rc]; ok {
				if n, _, _ := unstructured.NestedString(drc.Object, "spec", "serviceAccountTemplate", "metadata", "name"); n != "" {
					sa = serviceaccounts.ServiceAccount{Namespace: crossplaneNS, Name: n}
				}
			}
			out = append(out, createdSA{sa: sa, by: "Provider " + o.GetName(), obj: b})
		}
	}
	return out
}

func releaseNamespace(hr *unstructured.Unstructured) string {
	if ns, _, _ := unstructured.NestedString(hr.Object, "spec", "targetNamespace"); ns != "" {
		return ns
	}
	return hr.GetNamespace()
}

func helmChart(hr *unstructured.Unstructured, ociURLs map[string]string) string {
	if c, _, _ := unstructured.NestedString(hr.Object, "spec", "chart", "spec", "chart"); c != "" {
		return path.Base(c)
	}
	kind, _, _ := unstructured.NestedString(hr.Object, "spec", "chartRef", "kind")
	name, _, _ := unstructured.NestedString(hr.Object, "spec", "chartRef", "name")
	ns, _, _ := unstructured.NestedString(hr.Object, "spec", "chartRef", "namespace")
	if ns == "" {
		ns = hr.GetNamespace()
	}
	if kind == "OCIRepository" {
		if u := ociURLs[ns+"/"+name]; u != "" {
			return path.Base(u)
		}
	}
	return name
}

// chartFullName is Helm's conventional "fullname" template.
func chartFullName(hr *unstructured.Unstructured, vals map[string]any, chart string) string {
	if f, _, _ := unstructured.NestedString(vals, "fullnameOverride"); f != "" {
		return f
	}
	release, _, _ := unstructured.NestedString(hr.Object, "spec", "releaseName")
	if release == "" {
		release = hr.GetName()
		if tn, _, _ := unstructured.NestedString(hr.Object, "spec", "targetNamespace"); tn != "" {
			release = tn + "-" + hr.GetName()
		}
	}
	name := chart
	if n, _, _ := unstructured.NestedString(vals, "nameOverride"); n != "" {
		name = n
	}
	if strings.Contains(release, name) {
		return release
	}
	return release + "-" + name
}

// TrustSubjects returns the IRSA subjects (…:sub conditions of
// sts:AssumeRoleWithWebIdentity statements) of an IAM role's trust policy,
// or nil when it is not an IRSA role.
func TrustSubjects(role *unstructured.Unstructured) ([]string, error) {
	pol, _, _ := unstructured.NestedString(role.Object, "spec", "forProvider", "assumeRolePolicy")
	if pol == "" {
		return nil, nil
	}
	var doc struct {
		Statement []struct {
			Action    any
			Condition map[string]map[string]any
		}
	}
	if err := json.Unmarshal([]byte(pol), &doc); err != nil {
		return nil, fmt.Errorf("assumeRolePolicy is not JSON: %w", err)
	}
	var subs []string
	for _, st := range doc.Statement {
		if !actionIncludes(st.Action, "sts:AssumeRoleWithWebIdentity") {
			continue
		}
		for _, cond := range st.Condition {
			for k, v := range cond {
				if !strings.HasSuffix(k, ":sub") {
					continue
				}
				switch x := v.(type) {
				case string:
					subs = append(subs, x)
				case []any:
					for _, e := range x {
						if s, ok := e.(string); ok {
							subs = append(subs, s)
						}
					}
				}
			}
		}
	}
	sort.Strings(subs)
	return subs, nil
}

// trustAudiences returns the …:aud condition values of the
// sts:AssumeRoleWithWebIdentity statements.
func trustAudiences(role *unstructured.Unstructured) []string {
	pol, _, _ := unstructured.NestedString(role.Object, "spec", "forProvider", "assumeRolePolicy")
	var doc struct {
		Statement []struct {
			Action    any
			Condition map[string]map[string]any
		}
	}
	if json.Unmarshal([]byte(pol), &doc) != nil {
		return nil
	}
	var out []string
	for _, st := range doc.Statement {
		if !actionIncludes(st.Action, "sts:AssumeRoleWithWebIdentity") {
			continue
		}
		for _, cond := range st.Condition {
			for k, v := range cond {
				if !strings.HasSuffix(k, ":aud") {
					continue
				}
				switch x := v.(type) {
				case string:
					out = append(out, x)
				case []any:
					for _, e := range x {
						if s, ok := e.(string); ok {
							out = append(out, s)
						}
					}
				}
			}
		}
	}
	return out
}

// checkRoleGuardrails: every IAM role a claim composes is one the hub's
// Crossplane policy (or, for a spoke in a spoke account, that account's
// role's policy) lets it create: named ${SPOKE_ROLE_PREFIX}…, at most 64
// characters, with the permissions boundary ${SPOKE_PERMISSIONS_BOUNDARY_ARN}
// (the spoke account's own boundary, hubiam.Env.InAccount, for a claim with
// spec.account); an IRSA role's trust also pins the audience to
// sts.amazonaws.com.
func (r *run) checkRoleGuardrails(file string, claim, o *unstructured.Unstructured) {
	name := o.GetAnnotations()["crossplane.io/external-name"]
	if name == "" {
		name = o.GetName()
	}
	obj := objectName(o, kbuild.Hub)
	if !strings.HasPrefix(name, r.info.SpokeRolePrefix) {
		r.add(CheckIRSA, file, obj, "IAM role name %q does not start with ${%s} (%q): the hub's Crossplane may only create roles under that prefix", name, "SPOKE_ROLE_PREFIX", r.info.SpokeRolePrefix)
	}
	if len(name) > 64 {
		r.add(CheckIRSA, file, obj, "IAM role name %q is %d characters; IAM allows 64", name, len(name))
	}
	if account := claimAccount(claim); account != "" && account != r.info.AccountID {
		want := hubiam.Env{HubName: r.info.HubName, AccountID: r.info.AccountID, Partition: r.info.Partition}.InAccount(account).BoundaryARN()
		if b, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "permissionsBoundary"); b != want {
			r.add(CheckIRSA, file, obj, "permissionsBoundary = %q, want spoke account %s's boundary %q: its account role may only create roles with it", b, account, want)
		}
	} else if b, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "permissionsBoundary"); b != r.info.SpokeBoundaryARN {
		r.add(CheckIRSA, file, obj, "permissionsBoundary = %q, want ${SPOKE_PERMISSIONS_BOUNDARY_ARN} (%q): the hub's Crossplane may only create roles with it", b, r.info.SpokeBoundaryARN)
	}
	if subs, _ := TrustSubjects(o); len(subs) > 0 {
		auds := trustAudiences(o)
		if len(auds) != 1 || auds[0] != "sts.amazonaws.com" {
			r.add(CheckIRSA, file, obj, "IRSA trust policy audience = %q, want exactly sts.amazonaws.com", auds)
		}
	}
}

// claimAccount is the claim's spec.account ("" for the hub's account).
func claimAccount(claim *unstructured.Unstructured) string {
	a, _, _ := unstructured.NestedString(claim.Object, "spec", "account")
	return a
}

func actionIncludes(a any, want string) bool {
	switch x := a.(type) {
	case string:
		return x == want
	case []any:
		for _, e := range x {
			if s, _ := e.(string); s == want {
				return true
			}
		}
	}
	return false
}

var (
	hubExpected   = []serviceaccounts.ServiceAccount{serviceaccounts.HubCrossplaneAWS, serviceaccounts.HubExternalSecrets}
	spokeExpected = []serviceaccounts.ServiceAccount{serviceaccounts.SpokeCrossplaneAWS, serviceaccounts.SpokeLoadBalancerControl}
)

// checkIRSA: on the hub, the accounts the Pulumi roles trust exist; per
// spoke, the subjects of the composed IRSA roles are exactly the spoke's
// expected accounts, and the spoke's manifests create each of them.
func (r *run) checkIRSA() {
	byCluster := map[string][]kbuild.Built{}
	for _, b := range r.w.Results {
		c := releasedOn(b)
		byCluster[c] = append(byCluster[c], b)
	}
	r.expectCreated(kbuild.Hub, "hub", hubExpected, byCluster[kbuild.Hub])

	for _, rc := range r.rendered {
		file := r.fileOf(kbuild.Built{Object: rc.claim})
		claim := rc.claim.GetName()
		got := map[string][]string{}
		for _, o := range rc.res.Composed {
			if o.GroupVersionKind().Group != "iam.aws.upbound.io" || o.GetKind() != "Role" {
				continue
			}
			r.checkRoleGuardrails(file, rc.claim, o)
			subs, err := TrustSubjects(o)
			if err != nil {
				r.add(CheckIRSA, file, objectName(o, kbuild.Hub), "%v", err)
				continue
			}
			for _, s := range subs {
				got[s] = append(got[s], o.GetName())
			}
		}
		want := map[string]bool{}
		for _, sa := range spokeExpected {
			want[sa.Subject()] = true
			if _, ok := got[sa.Subject()]; !ok {
				r.add(CheckIRSA, file, objectName(rc.claim, kbuild.Hub),
					"no composed IAM role trusts %s (internal/contract/serviceaccounts)", sa.Subject())
			}
		}
		for s, roles := range got {
			if !want[s] {
				r.add(CheckIRSA, file, "Role "+strings.Join(roles, ", "),
					"trusts %s, which is not a spoke service account in internal/contract/serviceaccounts", s)
			}
		}
		// The spoke's cluster in the walk: reached through a kubeConfig
		// ConfigMap this claim composed.
		spokes := map[string]bool{}
		for _, o := range rc.res.Composed {
			if o.GetKind() == "Kustomization" {
				if cm, _, _ := unstructured.NestedString(o.Object, "spec", "kubeConfig", "configMapRef", "name"); cm != "" {
					spokes[o.GetNamespace()+"/"+cm] = true
				}
			}
		}
		if len(spokes) == 0 {
			r.add(CheckIRSA, file, objectName(rc.claim, kbuild.Hub),
				"composes no Kustomization with kubeConfig.configMapRef, so nothing creates the spoke's service accounts")
			continue
		}
		var spokeObjs []kbuild.Built
		failed := 0
		for c := range spokes {
			spokeObjs = append(spokeObjs, byCluster[c]...)
			for _, f := range r.w.Failures {
				if strings.HasPrefix(f.Kustomization, c+": ") {
					failed++
				}
			}
		}
		label := "spoke " + claim
		if failed > 0 {
			label += fmt.Sprintf(" (%d of its Kustomizations did not build, see [build])", failed)
		}
		r.expectCreated("spoke "+claim, label, spokeExpected, spokeObjs)
	}
}

func (r *run) expectCreated(cluster, label string, want []serviceaccounts.ServiceAccount, objs []kbuild.Built) {
	created := createdSAs(objs)
	for _, sa := range want {
		found := false
		for _, c := range created {
			if c.sa.Namespace != sa.Namespace {
				continue
			}
			if (sa.Prefix && sa.Matches(c.sa.Namespace, c.sa.Name)) || (!sa.Prefix && !c.sa.Prefix && c.sa.Name == sa.Name) {
				found = true
				break
			}
		}
		if !found {
			var have []string
			for _, c := range created {
				have = append(have, c.sa.Subject()+" ("+c.by+")")
			}
			sort.Strings(have)
			r.add(CheckIRSA, "", label, "no manifest creates service account %s, which an IRSA role trusts; created on %s: %s",
				sa.Subject(), cluster, strings.Join(have, ", "))
		}
	}
}

// releasedOn is the cluster whose workloads an object makes: a HelmRelease
// with spec.kubeConfig lives on one cluster and installs onto another.
func releasedOn(b kbuild.Built) string {
	o := b.Object
	if o.GetKind() == "HelmRelease" {
		if cm, _, _ := unstructured.NestedString(o.Object, "spec", "kubeConfig", "configMapRef", "name"); cm != "" {
			return o.GetNamespace() + "/" + cm
		}
		if sec, _, _ := unstructured.NestedString(o.Object, "spec", "kubeConfig", "secretRef", "name"); sec != "" {
			return o.GetNamespace() + "/" + sec
		}
	}
	return b.Cluster
}
