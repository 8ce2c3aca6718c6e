package fence

import (
	"strings"
	"testing"
)

func TestCheckUserTagKey(t *testing.T) {
	tests := []struct {
		name, key string
		wantOwner string // "" when the key is allowed
	}{
		{"a team's cost tag", "cost-center", ""},
		{"a prefix's look-alike is not the prefix", "eks-team", ""},
		{"a key that only contains a prefix", "team/aws:x", ""},
		{"AWS", "aws:cloudformation:stack-name", "AWS"},
		{"AWS in upper case", "AWS:x", "AWS"},
		{"the fleet's cluster key", TagCluster, "the fleet"},
		{"EKS's node key", TagEKSNodeCluster, "EKS"},
		{"EKS's node key in another case: IAM matches it all the same", "EKS:Cluster-Name", "EKS"},
		{"the VPC CNI's ENI key", TagCNICluster, "the VPC CNI"},
		{"the VPC CNI's node key", "node.k8s.amazonaws.com/instance_id", "the VPC CNI"},
		{"the VPC CNI's subnet discovery key", "cni.networking.k8s.aws/cluster/mgmt-a", "the VPC CNI"},
		{"the load balancer controller's cluster key", TagLBCCluster, "the AWS Load Balancer Controller"},
		{"the load balancer controller's stack key", "service.k8s.aws/stack", "the AWS Load Balancer Controller"},
		{"the load balancer controller's ingress key", "ingress.k8s.aws/stack", "the AWS Load Balancer Controller"},
		{"Kubernetes' cluster ownership", "kubernetes.io/cluster/mgmt-a", "Kubernetes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckUserTagKey(tt.key)
			if tt.wantOwner == "" {
				if err != nil {
					t.Fatalf("CheckUserTagKey(%q) = %v, want nil", tt.key, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantOwner) || !strings.Contains(err.Error(), `"`+tt.key+`"`) {
				t.Fatalf("CheckUserTagKey(%q) = %v, want an error naming the key and %s", tt.key, err, tt.wantOwner)
			}
		})
	}
}

// Every key the fence trusts is reserved: a user tag can never carry one.
func TestTrustedTagsAreReserved(t *testing.T) {
	for _, k := range append(TrustedTags(), ProtectedTags()...) {
		if CheckUserTagKey(k) == nil {
			t.Errorf("%s is trusted by the fence but no reserved prefix covers it", k)
		}
	}
}

func TestReservedTagPrefixesAreLowerCase(t *testing.T) {
	for _, r := range ReservedTagPrefixes() {
		if r.Prefix != strings.ToLower(r.Prefix) || r.Owner == "" || strings.Contains(r.Prefix, "'") {
			t.Errorf("prefix %+v: want lower case, no quote, an owner", r)
		}
	}
}

func TestReservedTagsCEL(t *testing.T) {
	want := "self.all(k, size(k) >= 1 && size(k) <= 128 && !['aws:', 'eksfleet.io/', 'kubernetes.io/', 'eks:', " +
		"'cluster.k8s.amazonaws.com/', 'node.k8s.amazonaws.com/', 'cni.networking.k8s.aws/', 'elbv2.k8s.aws/', 'ingress.k8s.aws/', 'service.k8s.aws/']" +
		".exists(p, k.lowerAscii().startsWith(p)))"
	if got := ReservedTagsCEL(); got != want {
		t.Errorf("ReservedTagsCEL() =\n%s\nwant\n%s", got, want)
	}
}
