package fleetvalidate

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gitops-fleet/eks-fleet/internal/contract/workloadcluster"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/policy"
)

// withClaimControls takes another look at the claim files that failed the
// strict parse: Crossplane's own claim fields (compositeDeletePolicy,
// compositionRef, ...: policy.ClaimControlFields) are valid in the API but
// not part of workloadcluster.Spec. A file whose only unknown fields are
// those is parsed without them, and the fields are checked by
// policy.CheckClaimControls, so the finding says what is wrong (e.g. a
// Background delete) rather than "unknown field".
func withClaimControls(tree *fleettree.Tree, claims []fleettree.ClaimFile, bad []*fleettree.FileError) ([]fleettree.ClaimFile, []*fleettree.FileError, []policy.Violation) {
	var stillBad []*fleettree.FileError
	var vs []policy.Violation
	for _, b := range bad {
		raw, err := tree.ReadFile(b.Rel)
		if err != nil {
			stillBad = append(stillBad, b)
			continue
		}
		stripped, cvs, ok := splitControls(raw)
		if !ok {
			stillBad = append(stillBad, b)
			continue
		}
		cs, err := fleettree.ParseClaims(stripped)
		if err != nil {
			stillBad = append(stillBad, b)
			continue
		}
		for _, c := range cs {
			claims = append(claims, fleettree.ClaimFile{Rel: b.Rel, Claim: c})
		}
		for _, v := range cvs {
			v.File = b.Rel
			vs = append(vs, v)
		}
	}
	return claims, stillBad, vs
}

// splitControls returns the YAML stream raw without the claim control
// fields of its WorkloadCluster documents, and their violations; ok is
// false when no document had such fields or they could not be read.
func splitControls(raw []byte) (stripped []byte, vs []policy.Violation, ok bool) {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out bytes.Buffer
	found := false
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, false
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, nil, false
		}
		apiVersion, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		spec, _ := m["spec"].(map[string]any)
		if kind == workloadcluster.ClaimKind && strings.HasPrefix(apiVersion, workloadcluster.Group+"/") && spec != nil {
			c, set, err := policy.SplitClaimControls(spec)
			if err != nil {
				return nil, nil, false
			}
			if set {
				found = true
				meta, _ := m["metadata"].(map[string]any)
				name, _ := meta["name"].(string)
				vs = append(vs, policy.CheckClaimControls(name, c)...)
				if doc, err = yaml.Marshal(m); err != nil {
					return nil, nil, false
				}
			}
		}
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
	}
	if !found {
		return nil, nil, false
	}
	return out.Bytes(), vs, true
}
