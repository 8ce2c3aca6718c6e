package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply server-side applies objs in order as manager, retrying an object
// whose kind is not served yet (a CRD applied just before) for a minute.
func (c *Cluster) Apply(ctx context.Context, manager string, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetManagedFields(nil)
		o.SetResourceVersion("")
		deadline := time.Now().Add(time.Minute)
		for {
			err := c.Client.Patch(ctx, o, client.Apply, client.FieldOwner(manager), client.ForceOwnership)
			if err == nil {
				break
			}
			if (meta.IsNoMatchError(err) || strings.Contains(err.Error(), "the server could not find the requested resource")) && time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
				continue
			}
			return fmt.Errorf("apply %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// DecodeYAML reads every object of a YAML stream.
func DecodeYAML(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
}
