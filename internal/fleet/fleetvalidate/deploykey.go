package fleetvalidate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/deploykey"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"
)

// Keys the spoke's GitRepository reads from its SSH Secret (Flux
// source-controller: identity and known_hosts are required for ssh://).
var deployKeyFields = []string{"identity", "known_hosts"}

// deployKeyFindings: every spoke's deploy-key folder lists a SealedSecret
// that unseals into the Secret its GitRepository reads. Without one the
// hub's <spoke>-deploy-key Kustomization applies nothing, goes Ready on an
// empty inventory (fluxcd/pkg ssa WaitForSet returns at once for an empty
// set), and the spoke's GitRepository never gets its Secret: the spoke is
// built and paid for but never syncs.
func deployKeyFindings(tree *fleettree.Tree, name string) []Finding {
	dir := fleettree.WorkloadsRel(name) + "/" + fleettree.DeployKeyDir
	kpath := dir + "/" + fleettree.Kustomization
	fix := fmt.Sprintf("create it with `fleet cluster add %s` (or seal a deploy key Secret %s/%s with `fleet seal` and list it in %s)",
		name, deploykey.SecretNamespace, deploykey.SecretName, kpath)
	fail := func(file, msg string) []Finding {
		return []Finding{{Source: "policy", Check: "policy/deploy-key", File: file, Object: name, Message: msg + ": " + fix}}
	}
	kb, err := tree.ReadFile(kpath)
	if err != nil {
		return fail(kpath, fmt.Sprintf("cluster %s has no deploy key kustomization", name))
	}
	res, err := kustfile.Resources(kb)
	if err != nil {
		return fail(kpath, err.Error())
	}
	for _, r := range res {
		rel := path.Join(dir, r)
		b, err := tree.ReadFile(rel)
		if err != nil {
			continue // a listed file that is missing fails the proof's build
		}
		ok, err := hasDeployKey(b)
		if err != nil {
			return fail(rel, err.Error())
		}
		if ok {
			return nil
		}
	}
	return fail(kpath, fmt.Sprintf("cluster %s has no deploy key: no listed file holds a SealedSecret %s/%s with %v, so its GitRepository never gets a Secret and the spoke never syncs",
		name, deploykey.SecretNamespace, deploykey.SecretName, deployKeyFields))
}

// hasDeployKey reports whether a YAML stream holds a SealedSecret that
// unseals into the deploy key Secret, with every field Flux reads.
func hasDeployKey(b []byte) (bool, error) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				EncryptedData map[string]string `json:"encryptedData"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return false, err
		}
		if o.APIVersion != "bitnami.com/v1alpha1" || o.Kind != "SealedSecret" ||
			o.Metadata.Name != deploykey.SecretName || o.Metadata.Namespace != deploykey.SecretNamespace {
			continue
		}
		complete := true
		for _, f := range deployKeyFields {
			if o.Spec.EncryptedData[f] == "" {
				complete = false
			}
		}
		if complete {
			return true, nil
		}
	}
}
