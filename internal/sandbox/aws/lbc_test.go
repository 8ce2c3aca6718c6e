package aws

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const (
	lbcCluster = "mgmt-apps-staging"
	lbcVPC     = "vpc-0123"
)

func lbcDeployment(available int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "aws-load-balancer-controller", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "aws-load-balancer-controller", Image: "public.ecr.aws/eks/aws-load-balancer-controller:v2.14.0",
			Args: []string{"--cluster-name=" + lbcCluster, "--aws-region=eu-west-1", "--aws-vpc-id=" + lbcVPC},
		}}}}},
		Status: appsv1.DeploymentStatus{AvailableReplicas: available},
	}
}

// lbcLedger holds the spoke's subnets as the composition makes them (one
// private and one public per zone), a private subnet of another VPC, and
// one of this VPC tagged for another cluster only.
func lbcLedger() *Ledger {
	l := NewLedger()
	subnet := func(id, vpc, zone string, tags map[string]any) {
		attrs := map[string]any{"vpcId": vpc, "availabilityZone": zone, "tags": tags}
		l.put(&Resource{Kind: "ec2.aws.upbound.io/Subnet", Type: "aws_subnet", ID: id, Name: id, Attrs: attrs, Tags: tagsOf(attrs)})
	}
	private := map[string]any{tagSubnetInternal: "1", "eksfleet.io/cluster": lbcCluster}
	public := map[string]any{tagSubnetPublic: "1", "eksfleet.io/cluster": lbcCluster}
	subnet("subnet-priv-b", lbcVPC, "eu-west-1b", private)
	subnet("subnet-priv-a", lbcVPC, "eu-west-1a", private)
	subnet("subnet-pub-a", lbcVPC, "eu-west-1a", public)
	subnet("subnet-other-vpc", "vpc-9999", "eu-west-1c", private)
	subnet("subnet-other-cluster", lbcVPC, "eu-west-1c", map[string]any{tagSubnetInternal: "1", "kubernetes.io/cluster/mgmt-other": "shared"})
	return l
}

func lbcService(annotations map[string]string, class *string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "payment-app-nlb", Namespace: "payments", UID: "uid-1", Annotations: annotations},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class},
	}
}

// TestLoadBalancerController follows a Service through the stand-in
// controller: which Services it serves, where their load balancer goes,
// and that deleting the Service deletes the load balancer before the
// finalizer goes.
func TestLoadBalancerController(t *testing.T) {
	nlb := "service.k8s.aws/nlb"
	other := "example.com/lb"
	external := map[string]string{annotationType: "external", annotationTarget: "ip"}
	cases := map[string]struct {
		reason    string
		svc       *corev1.Service
		available int32
		// want are the load balancer's subnets; nil: none made
		want      []any
		wantErr   string
		finalizer bool
	}{
		"ExternalIP": {
			reason: "type external with target type ip is served: internal, one private subnet per zone of the controller's VPC",
			svc:    lbcService(external, nil), available: 1,
			want: []any{"subnet-priv-a", "subnet-priv-b"}, finalizer: true,
		},
		"Class": {
			reason: "the controller's loadBalancerClass is served",
			svc:    lbcService(nil, &nlb), available: 1,
			want: []any{"subnet-priv-a", "subnet-priv-b"}, finalizer: true,
		},
		"InternetFacing": {
			reason: "internet-facing takes the public subnets",
			svc:    lbcService(map[string]string{annotationType: "nlb-ip", annotationScheme: "internet-facing"}, nil), available: 1,
			want: []any{"subnet-pub-a"}, finalizer: true,
		},
		"OtherClass": {
			reason: "another class is another controller's, whatever the annotations",
			svc:    lbcService(external, &other), available: 1,
		},
		"NoAnnotation": {
			reason: "a LoadBalancer Service without class or annotation is the cloud provider's",
			svc:    lbcService(nil, nil), available: 1,
		},
		"NotRunning": {
			reason: "a controller with no available replica does nothing",
			svc:    lbcService(external, nil), available: 0,
		},
		"BadScheme": {
			reason: "an unknown scheme is the controller's error, and no load balancer",
			svc:    lbcService(map[string]string{annotationType: "nlb-ip", annotationScheme: "public"}, nil), available: 1,
			wantErr: "unknown scheme: public", finalizer: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			kube := fake.NewClientset(lbcDeployment(tc.available), tc.svc)
			c := &LoadBalancerController{Client: kube, Ledger: lbcLedger(), Partition: "aws", Account: "111122223333", Region: "eu-west-1"}
			err := c.RunOnce(ctx)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("%s: RunOnce: %v, want error %q", tc.reason, err, tc.wantErr)
			}
			lbs := c.Ledger.Find(LoadBalancerKind, nil)
			var got []any
			if len(lbs) > 0 {
				got = lbs[0].Attrs["subnets"].([]any)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || len(lbs) > 1 {
				t.Fatalf("%s: subnets (-want +got):\n%s (%d load balancers)", tc.reason, diff, len(lbs))
			}
			svc, err := kube.CoreV1().Services("payments").Get(ctx, "payment-app-nlb", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if has := len(svc.Finalizers) == 1 && svc.Finalizers[0] == serviceFinalizer; has != tc.finalizer {
				t.Errorf("%s: finalizers %v", tc.reason, svc.Finalizers)
			}
			if tc.want == nil {
				return
			}
			lb := lbs[0]
			if !strings.HasPrefix(lb.Name, "k8s-payments-paymenta-") || lb.Tags[tagLBCCluster] != lbcCluster || lb.Tags[tagLBCStack] != "payments/payment-app-nlb" {
				t.Errorf("%s: load balancer %s tagged %v", tc.reason, lb.Name, lb.Tags)
			}
			if len(svc.Status.LoadBalancer.Ingress) != 1 || !strings.HasPrefix(svc.Status.LoadBalancer.Ingress[0].Hostname, lb.Name+"-") {
				t.Errorf("%s: status %+v, want the load balancer's DNS name", tc.reason, svc.Status.LoadBalancer)
			}
			// AWS keeps the subnets and VPC while the load balancer
			// exists.
			subnet := c.Ledger.get("ec2.aws.upbound.io/Subnet", tc.want[0].(string))
			if users := c.Ledger.usersOf(subnet); !cmp.Equal(users, []string{LoadBalancerKind + "/" + lb.ID}) {
				t.Errorf("%s: users of %s: %v, want the load balancer", tc.reason, subnet.ID, users)
			}
			// deleted: the load balancer goes, then the finalizer
			now := metav1.NewTime(time.Now())
			svc.DeletionTimestamp = &now
			if _, err := kube.CoreV1().Services("payments").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := c.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if lbs := c.Ledger.Find(LoadBalancerKind, nil); len(lbs) != 0 {
				t.Errorf("%s: the Service deleted, the load balancer stays: %v", tc.reason, lbs)
			}
			if d := c.Ledger.Deletions(); len(d) != 1 || d[0].ID != lb.ID {
				t.Errorf("%s: deletions %v, want the load balancer", tc.reason, d)
			}
			svc, err = kube.CoreV1().Services("payments").Get(ctx, "payment-app-nlb", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(svc.Finalizers) != 0 {
				t.Errorf("%s: finalizers after the load balancer went: %v", tc.reason, svc.Finalizers)
			}
		})
	}
}
