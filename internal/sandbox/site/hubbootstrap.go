package site

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitops-fleet/eks-fleet/components/fluxbootstrap"
	"github.com/gitops-fleet/eks-fleet/internal/hub"
	"github.com/gitops-fleet/eks-fleet/internal/sandbox/mocks"
)

// HubBootstrap is what the Pulumi program creates on the hub: its
// Kubernetes objects, built by the program's own code (internal/hub and
// components/fluxbootstrap run under pulumi.WithMocks, their resource
// inputs captured, tls keys generated for real), and what it writes to AWS
// that the hub's controllers read (the sealing key document in Secrets
// Manager).
type HubBootstrap struct {
	// Objects are the Kubernetes objects in the order the program
	// registers them.
	Objects []*unstructured.Unstructured
	// Secrets are the Secrets Manager documents: ARN to value.
	Secrets map[string]string
	// AWS are the AWS resources the program creates: type token to names.
	AWS map[string][]string
	// Mocks are the recorded registrations.
	Mocks *mocks.Mocks
}

// CaptureHub runs the hub's Pulumi program (hub.Program, what main runs, with the mocks as its account reader) under
// the mocks with the stack config cfg (full keys).
func CaptureHub(cfg map[string]string) (*HubBootstrap, error) {
	return captureHub(cfg, nil)
}

// captureHub runs the program with prior as the stack's state (nil: a new
// stack).
func captureHub(cfg map[string]string, prior *mocks.Mocks) (*HubBootstrap, error) {
	m := mocks.New()
	m.RealKeys = true
	m.Prior = prior
	if err := m.Run(cfg, hub.Program(m)); err != nil {
		return nil, fmt.Errorf("hub program: %w", err)
	}
	b := &HubBootstrap{Secrets: map[string]string{}, AWS: map[string][]string{}, Mocks: m}
	for _, r := range m.Resources() {
		switch {
		case r.Type == fluxbootstrap.ReleaseType:
			// A Helm release, not an object: the provider installs its chart.
		case strings.HasPrefix(r.Type, "kubernetes:") && r.Custom && !strings.HasPrefix(r.Type, "pulumi:providers:"):
			obj, _ := plain(resource.NewObjectProperty(r.Inputs)).(map[string]any)
			if obj == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			if u.GetAPIVersion() == "" || u.GetKind() == "" {
				// The typed resources leave apiVersion and kind to the type token.
				group, version, kind := typeToken(r.Type)
				if group == "core" {
					u.SetAPIVersion(version)
				} else {
					u.SetAPIVersion(group + "/" + version)
				}
				u.SetKind(kind)
			}
			b.Objects = append(b.Objects, u)
		case r.Type == "aws:secretsmanager/secretVersion:SecretVersion":
			b.Secrets[str(r.Inputs, "secretId")] = str(r.Inputs, "secretString")
		}
		if strings.HasPrefix(r.Type, "aws:") && r.Custom {
			b.AWS[r.Type] = append(b.AWS[r.Type], r.Name)
		}
	}
	for k := range b.AWS {
		sort.Strings(b.AWS[k])
	}
	return b, nil
}

// CaptureAccount runs the program as `pulumi up` of the spoke-account
// stack file stack does with credentials of account id, under the mocks,
// config edited by edit (if set) first, and returns what it made.
func CaptureAccount(stack, id string, edit func(map[string]string)) (*mocks.Mocks, error) {
	return runAccount(stack, id, DeployerRole(id), edit, func(m *mocks.Mocks) pulumi.RunFunc { return hub.Program(m) })
}

// runAccount runs program (given the mocks it runs under) as the
// spoke-account stack file stack is run, as its stack, with credentials of
// role in account id, config edited by edit (if set) first.
func runAccount(stack, id, role string, edit func(map[string]string), program func(*mocks.Mocks) pulumi.RunFunc) (*mocks.Mocks, error) {
	cfg, err := StackConfig(stack)
	if err != nil {
		return nil, err
	}
	if edit != nil {
		edit(cfg)
	}
	m := mocks.New()
	m.Account, m.CallerARN = id, role
	m.Stack = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(stack), "Pulumi."), ".yaml")
	if err := m.Run(cfg, program(m)); err != nil {
		return nil, fmt.Errorf("spoke account %s (%s): %w", id, filepath.Base(stack), err)
	}
	return m, nil
}

// typeToken splits kubernetes:<group>/<version>:<Kind>.
func typeToken(t string) (group, version, kind string) {
	parts := strings.Split(t, ":")
	if len(parts) != 3 {
		return "", "", ""
	}
	gv := strings.Split(parts[1], "/")
	if len(gv) != 2 {
		return "", "", ""
	}
	return gv[0], gv[1], parts[2]
}

func str(m resource.PropertyMap, k string) string {
	v, ok := m[resource.PropertyKey(k)]
	if !ok {
		return ""
	}
	if s, ok := plain(v).(string); ok {
		return s
	}
	return ""
}

// plain turns a Pulumi property value into JSON-shaped Go values, secrets
// unwrapped and unknowns dropped.
func plain(v resource.PropertyValue) any {
	switch {
	case v.IsSecret():
		return plain(v.SecretValue().Element)
	case v.IsComputed() || v.IsOutput() && !v.OutputValue().Known:
		return nil
	case v.IsOutput():
		return plain(v.OutputValue().Element)
	case v.IsNull():
		return nil
	case v.IsBool():
		return v.BoolValue()
	case v.IsNumber():
		n := v.NumberValue()
		if n == float64(int64(n)) {
			return int64(n)
		}
		return n
	case v.IsString():
		return v.StringValue()
	case v.IsArray():
		out := []any{}
		for _, e := range v.ArrayValue() {
			out = append(out, plain(e))
		}
		return out
	case v.IsObject():
		out := map[string]any{}
		for k, e := range v.ObjectValue() {
			if p := plain(e); p != nil {
				out[string(k)] = p
			}
		}
		return out
	}
	return nil
}
