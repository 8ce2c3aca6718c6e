package compose

import (
	"fmt"
	"maps"

	"github.com/gitops-fleet/eks-fleet/internal/iam/spokeiam"
)

const iamV1 = "iam.aws.upbound.io/v1beta1"

// RoleLabel labels each composed Role with its spokeiam role key.
const RoleLabel = "eksfleet.io/role"

// IAM composes the spoke's roles exactly as internal/iam/spokeiam builds them:
// name, trust, description, the hub's permissions boundary and the fence
// tags (eksfleet.io/spoke, eksfleet.io/cluster and, on IRSA roles,
// eksfleet.io/oidc) that the boundary and the hub Crossplane's policy
// read; one RolePolicy per inline document and one RolePolicyAttachment per
// managed policy. IRSA roles wait for the cluster's OIDC issuer.
func IAM(p Params, c *Composed) error {
	s := p.spoke()
	roles, err := spokeiam.Roles(s)
	if err != nil {
		return fmt.Errorf("spoke IAM: %w", err)
	}
	if s.OIDCIssuer == "" {
		c.Pending = append(c.Pending, "IRSA roles (crossplane, lbc) and the OIDC provider wait for the cluster's OIDC issuer")
	}
	for _, r := range roles {
		trust, err := r.Trust.JSON()
		if err != nil {
			return fmt.Errorf("role %s trust: %w", r.Key, err)
		}
		// The claim's tags first: the fence tags must win.
		tags := map[string]any{}
		for k, v := range p.Spec.Tags {
			tags[k] = v
		}
		for k, v := range r.Tags {
			tags[k] = v
		}
		key := "role-" + r.Key
		if err := c.add(key, Object{
			"apiVersion": iamV1, "kind": "Role",
			"metadata": Object{"name": r.Name, "labels": Object{RoleLabel: r.Key}},
			"spec": Object{"forProvider": Object{
				"assumeRolePolicy":    trust,
				"description":         r.Description,
				"permissionsBoundary": r.BoundaryARN,
				"tags":                tags,
			}},
		}); err != nil {
			return err
		}
		roleRef := Object{"name": r.Name}
		if r.Inline != nil {
			doc, err := r.Inline.JSON()
			if err != nil {
				return fmt.Errorf("role %s policy: %w", r.Key, err)
			}
			if err := c.add(key+"-policy", Object{
				"apiVersion": iamV1, "kind": "RolePolicy",
				"metadata": Object{"name": p.Spoke + "-" + r.Key},
				"spec":     Object{"forProvider": Object{"policy": doc, "roleRef": maps.Clone(roleRef)}},
			}); err != nil {
				return err
			}
		}
		for _, m := range r.ManagedPolicyARNs {
			if err := c.add(key+"-"+m.Suffix, Object{
				"apiVersion": iamV1, "kind": "RolePolicyAttachment",
				"metadata": Object{"name": p.Spoke + "-" + r.Key + "-" + m.Suffix},
				"spec":     Object{"forProvider": Object{"policyArn": m.ARN, "roleRef": maps.Clone(roleRef)}},
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
