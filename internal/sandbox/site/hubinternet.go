package site

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gitops-fleet/eks-fleet/internal/build/upstream"
	"github.com/gitops-fleet/eks-fleet/internal/contract/versions"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/internet"
)

// Helm's OCI media types (helm.sh/helm/v3 pkg/registry/constants.go).
const (
	helmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	helmChartMediaType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// ServeCharts serves, through in, the chart sources the tree names, each
// packaged from the pinned upstream module as its release publishes it:
//   - https://charts.crossplane.io/stable: crossplane, from the crossplane
//     module's cluster/charts/crossplane, version and appVersion the
//     release (the source's Chart.yaml says 0.0.1; upstream's release
//     stamps them);
//   - https://charts.external-secrets.io: external-secrets, from
//     deploy/charts/external-secrets, version the release (the source tree
//     is bumped after tagging), its bitwarden-sdk-server dependency (off in
//     the tree's values) stubbed;
//   - https://bitnami-labs.github.io/sealed-secrets: sealed-secrets, from
//     helm/sealed-secrets as it is;
//   - https://aws.github.io/eks-charts: aws-load-balancer-controller, which
//     the spokes install; the controller's module
//     (sigs.k8s.io/aws-load-balancer-controller) is refused by the module
//     proxy, so its chart stands in as a chart of that name and version
//     with the ServiceAccount (and its IRSA annotation) and the Deployment
//     the values ask for; the controller does not run (its pods are kwok's);
//   - oci://ghcr.io/controlplaneio-fluxcd/charts/flux-operator: the Flux
//     Operator's chart lives in another repository (controlplaneio-fluxcd/
//     charts) that the module proxy does not serve; it stands in as a chart
//     of that name and version whose template is what the operator module's
//     config/default builds (its CRDs, RBAC and Deployment), without the
//     Namespace it makes (a chart leaves that to its installer).
func ServeCharts(ctx context.Context, in *internet.Internet, dir string) error {
	moduleDir := func(module, version string) (string, error) {
		return upstream.Dir(ctx, module, "v"+version)
	}
	xp, err := moduleDir(upstream.CrossplaneModule, versions.Crossplane)
	if err != nil {
		return err
	}
	eso, err := moduleDir(upstream.ExternalSecretsModule, versions.ExternalSecrets)
	if err != nil {
		return err
	}
	ss, err := moduleDir(upstream.SealedSecretsModule, versions.SealedSecrets)
	if err != nil {
		return err
	}
	esoCRDs, err := esoChartCRDs(eso)
	if err != nil {
		return err
	}
	for _, r := range []struct {
		url   string
		chart internet.Chart
	}{
		{"https://charts.crossplane.io/stable", internet.Chart{Dir: filepath.Join(xp, "cluster", "charts", "crossplane"), Version: versions.Crossplane, AppVersion: versions.Crossplane}},
		{"https://charts.external-secrets.io", internet.Chart{Dir: filepath.Join(eso, "deploy", "charts", "external-secrets"), Version: versions.ExternalSecrets, AppVersion: "v" + versions.ExternalSecrets,
			StubDependencies: map[string]string{"bitwarden-sdk-server": "v0.5.1"}, Files: esoCRDs}},
		{"https://bitnami-labs.github.io/sealed-secrets", internet.Chart{Dir: filepath.Join(ss, "helm", "sealed-secrets"), Version: versions.SealedSecretsChart}},
	} {
		repo := internet.NewChartRepo(r.url)
		if err := repo.Add(r.chart); err != nil {
			return fmt.Errorf("chart for %s: %w", r.url, err)
		}
		in.Handle(hostOf(r.url), repo)
	}
	lbc, err := loadBalancerControllerChart(filepath.Join(dir, "aws-load-balancer-controller-chart"))
	if err != nil {
		return err
	}
	eksCharts := internet.NewChartRepo("https://aws.github.io/eks-charts")
	if err := eksCharts.Add(lbc); err != nil {
		return fmt.Errorf("chart for eks-charts: %w", err)
	}
	in.Handle("aws.github.io", eksCharts)
	reg, err := internet.NewRegistry(in, "ghcr.io")
	if err != nil {
		return err
	}
	chart, err := fluxOperatorChart(ctx, filepath.Join(dir, "flux-operator-chart"))
	if err != nil {
		return err
	}
	_, archive, err := chart.Package()
	if err != nil {
		return err
	}
	layer := static.NewLayer(archive, helmChartMediaType)
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer})
	if err != nil {
		return err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, helmConfigMediaType)
	return reg.Push("controlplaneio-fluxcd/charts/flux-operator", versions.FluxOperator, img)
}

// esoChartCRDs are the CRD templates External Secrets' release generates
// into its chart (hack/helm.generate.sh: each CRD of config/crds/bases
// under templates/crds, wrapped in `if .Values.installCRDs`). Not
// modelled: the per-kind crds.create* switches and the v1alpha1
// conversion switch, which the tree leaves at their defaults (on).
func esoChartCRDs(module string) (map[string][]byte, error) {
	dir := filepath.Join(module, "config", "crds", "bases")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.Name() == "kustomization.yaml" || filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out["templates/crds/"+e.Name()] = append(append([]byte("{{- if .Values.installCRDs }}\n"), b...), []byte("\n{{- end }}\n")...)
	}
	return out, nil
}

// fluxOperatorChart writes the stand-in flux-operator chart (see
// ServeCharts) into dir and returns it.
func fluxOperatorChart(ctx context.Context, dir string) (internet.Chart, error) {
	src, err := upstream.Dir(ctx, upstream.FluxOperatorModule, "v"+versions.FluxOperator)
	if err != nil {
		return internet.Chart{}, err
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(src, "config", "default"))
	if err != nil {
		return internet.Chart{}, fmt.Errorf("flux-operator config/default: %w", err)
	}
	// The published chart leaves the namespace to whoever installs it
	// (the hub program's Namespace, the spoke bootstrap's
	// install.createNamespace), as Helm charts do; config/default makes
	// one. Kept, Helm refuses to install the stand-in into a namespace it
	// did not create (found by the real engine's install).
	var kept []byte
	for _, r := range rm.Resources() {
		if r.GetKind() == "Namespace" {
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			return internet.Chart{}, err
		}
		kept = append(append(kept, "---\n"...), y...)
	}
	manifests := kept
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		return internet.Chart{}, err
	}
	meta := fmt.Sprintf("apiVersion: v2\nname: flux-operator\nversion: %s\nappVersion: v%s\ndescription: stand-in for the published chart (see site.ServeCharts)\n", versions.FluxOperator, versions.FluxOperator)
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(meta), 0o644); err != nil {
		return internet.Chart{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("{}\n"), 0o644); err != nil {
		return internet.Chart{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "templates", "operator.yaml"), manifests, 0o644); err != nil {
		return internet.Chart{}, err
	}
	return internet.Chart{Dir: dir}, nil
}

// loadBalancerControllerChart writes the stand-in
// aws-load-balancer-controller chart (see ServeCharts) into dir: the
// ServiceAccount and Deployment of the published chart's templates, with
// the values the tree sets (clusterName, region, vpcId, serviceAccount).
func loadBalancerControllerChart(dir string) (internet.Chart, error) {
	files := map[string]string{
		"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: aws-load-balancer-controller\nversion: %s\nappVersion: v%s\ndescription: stand-in for the published chart (see site.ServeCharts)\n",
			versions.AWSLoadBalancerControllerChart, versions.AWSLoadBalancerController),
		"values.yaml": "clusterName: \"\"\nregion: \"\"\nvpcId: \"\"\nserviceAccount:\n  create: true\n  name: aws-load-balancer-controller\n  annotations: {}\n",
		"templates/serviceaccount.yaml": `{{- if .Values.serviceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Values.serviceAccount.name }}
  namespace: {{ .Release.Namespace }}
  annotations: {{- toYaml .Values.serviceAccount.annotations | nindent 4 }}
{{- end }}
`,
		"templates/deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/name: aws-load-balancer-controller}
  template:
    metadata:
      labels: {app.kubernetes.io/name: aws-load-balancer-controller}
    spec:
      serviceAccountName: {{ .Values.serviceAccount.name }}
      containers:
        - name: aws-load-balancer-controller
          image: public.ecr.aws/eks/aws-load-balancer-controller:v%s
          args:
            - --cluster-name={{ required "clusterName" .Values.clusterName }}
            - --aws-region={{ .Values.region }}
            - --aws-vpc-id={{ .Values.vpcId }}
`, versions.AWSLoadBalancerController),
	}
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return internet.Chart{}, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return internet.Chart{}, err
		}
	}
	return internet.Chart{Dir: dir}, nil
}

// hostOf is the host of an https:// URL.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Hostname()
}
