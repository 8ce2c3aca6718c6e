package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LoadBalancerKind is the ledger kind of a load balancer the load balancer
// controller made (no managed resource stands behind it).
const LoadBalancerKind = "elasticloadbalancing/LoadBalancer"

// The controller's names, aws-load-balancer-controller v2.14.0. Written
// here as upstream has them, not taken from the fleet's own constants
// (fence.TagLBCCluster, the composition's subnet tags): the stand-in
// checks those against the controller rather than echoing them.
const (
	// serviceFinalizer: pkg/shared_constants/finalizers.go:11.
	serviceFinalizer = "service.k8s.aws/resources"
	// loadBalancerClass: the controller's default --load-balancer-class
	// (pkg/config/service_config.go:7), which its Service webhook sets.
	loadBalancerClass = "service.k8s.aws/nlb"
	// Annotations: service.beta.kubernetes.io/ and the suffixes of
	// pkg/annotations/constants.go:82-85.
	annotationType   = "service.beta.kubernetes.io/aws-load-balancer-type"
	annotationTarget = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
	annotationScheme = "service.beta.kubernetes.io/aws-load-balancer-scheme"
	// Tag keys: pkg/shared_constants/tag_keys.go:5 and
	// pkg/deploy/tracking/provider.go:23-24.
	tagLBCCluster = "elbv2.k8s.aws/cluster"
	tagLBCStack   = "service.k8s.aws/stack"
	// Subnet discovery tags: pkg/networking/subnet_resolver.go:22-23.
	tagSubnetInternal = "kubernetes.io/role/internal-elb"
	tagSubnetPublic   = "kubernetes.io/role/elb"
)

// LoadBalancerController stands in for aws-load-balancer-controller's
// Service controller on one spoke: the module proxy serves no build of the
// controller, so the chart's Deployment runs no program (kwok reports its
// pods Running) and this plays what it does with a Service, against the
// shared Ledger. It acts only while that Deployment has an available
// replica (a controller whose pods are gone deletes nothing), with the
// --cluster-name and --aws-vpc-id the chart passes it.
//
// Reproduced from v2.14.0:
//   - which Services it serves (pkg/service/service_utils.go:47-77): not
//     being deleted, and loadBalancerClass service.k8s.aws/nlb, or no class
//     and the annotation type nlb-ip, or external with target type ip or
//     instance;
//   - the finalizer service.k8s.aws/resources added before the load
//     balancer is made, and on deletion the load balancer deleted before
//     the finalizer is removed (controllers/service/service_controller.go:
//     170-237); the Service's status carries the load balancer's DNS name
//     (239-254);
//   - the scheme: internal unless annotated internet-facing
//     (pkg/service/model_build_load_balancer.go:242-278), and its name
//     k8s-<namespace:8>-<name:8>-<sha256(cluster, uid, scheme):10>
//     (593-611);
//   - subnets discovered in the controller's VPC by the role tag of the
//     scheme (kubernetes.io/role/internal-elb or kubernetes.io/role/elb,
//     value "" or "1"), leaving out subnets tagged only for other clusters,
//     one per zone, sorted by ID (pkg/networking/subnet_resolver.go:
//     164-195, 480-530); none found is the controller's error, and no load
//     balancer;
//   - its tags elbv2.k8s.aws/cluster and service.k8s.aws/stack.
//
// The load balancer names its subnets and VPC, so AWS refuses to delete
// them while it exists (Ledger.usersOf), as EC2 does for the network
// interfaces an NLB holds in them.
//
// Not modelled: listeners, target groups and their bindings, security
// groups, Ingresses (the ALB), the Service webhook, subnets named by
// annotation, IAM (the controller's policy is checked in internal/iam).
type LoadBalancerController struct {
	// Client is the spoke's API.
	Client kubernetes.Interface
	Ledger *Ledger
	// Partition, Account and Region place the load balancers' ARNs.
	Partition, Account, Region string

	mu   sync.Mutex
	errs []string
}

// Run reconciles every interval until ctx ends.
func (c *LoadBalancerController) Run(ctx context.Context, interval time.Duration) {
	for {
		if err := c.RunOnce(ctx); err != nil && ctx.Err() == nil {
			c.note("%v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// Errors are the controller's errors, as its events would report them.
func (c *LoadBalancerController) Errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

func (c *LoadBalancerController) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if len(c.errs) == 0 || c.errs[len(c.errs)-1] != msg {
		c.errs = append(c.errs, msg)
	}
}

// lbcFlags are the flags of the running controller.
type lbcFlags struct{ cluster, vpc string }

// running finds the controller's Deployment (its image) with an available
// replica and reads its flags; false when none runs.
func (c *LoadBalancerController) running(ctx context.Context) (lbcFlags, bool, error) {
	deps, err := c.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return lbcFlags{}, false, err
	}
	for _, d := range deps.Items {
		if f, ok := controllerFlags(d); ok && d.Status.AvailableReplicas > 0 && d.DeletionTimestamp == nil {
			return f, true, nil
		}
	}
	return lbcFlags{}, false, nil
}

func controllerFlags(d appsv1.Deployment) (lbcFlags, bool) {
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if !strings.Contains(ctr.Image, "/aws-load-balancer-controller:") {
			continue
		}
		var f lbcFlags
		for _, a := range slices.Concat(ctr.Command, ctr.Args) {
			if v, ok := strings.CutPrefix(a, "--cluster-name="); ok {
				f.cluster = v
			}
			if v, ok := strings.CutPrefix(a, "--aws-vpc-id="); ok {
				f.vpc = v
			}
		}
		return f, true
	}
	return lbcFlags{}, false
}

// RunOnce reconciles every Service once.
func (c *LoadBalancerController) RunOnce(ctx context.Context) error {
	f, ok, err := c.running(ctx)
	if err != nil || !ok {
		return err
	}
	if f.cluster == "" || f.vpc == "" {
		return fmt.Errorf("aws-load-balancer-controller runs without --cluster-name or --aws-vpc-id: %+v", f)
	}
	svcs, err := c.Client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []string
	for i := range svcs.Items {
		if err := c.reconcile(ctx, f, &svcs.Items[i]); err != nil {
			errs = append(errs, fmt.Sprintf("service %s/%s: %v", svcs.Items[i].Namespace, svcs.Items[i].Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func served(svc *corev1.Service) bool {
	if svc.DeletionTimestamp != nil {
		return false
	}
	if svc.Spec.LoadBalancerClass != nil {
		return *svc.Spec.LoadBalancerClass == loadBalancerClass
	}
	t, target := svc.Annotations[annotationType], svc.Annotations[annotationTarget]
	return t == "nlb-ip" || t == "external" && (target == "ip" || target == "instance")
}

func (c *LoadBalancerController) reconcile(ctx context.Context, f lbcFlags, svc *corev1.Service) error {
	has := slices.Contains(svc.Finalizers, serviceFinalizer)
	if !served(svc) {
		if !has {
			return nil
		}
		// deleted (or no longer ours): the load balancer first, then the
		// finalizer
		for _, r := range c.Ledger.Find(LoadBalancerKind, func(r Resource) bool {
			return r.Tags[tagLBCCluster] == f.cluster && r.Tags[tagLBCStack] == svc.Namespace+"/"+svc.Name
		}) {
			c.Ledger.remove(LoadBalancerKind, r.ID)
		}
		svc.Finalizers = slices.DeleteFunc(svc.Finalizers, func(s string) bool { return s == serviceFinalizer })
		_, err := c.Client.CoreV1().Services(svc.Namespace).Update(ctx, svc, metav1.UpdateOptions{})
		return ignoreGone(err)
	}
	if !has {
		svc.Finalizers = append(svc.Finalizers, serviceFinalizer)
		updated, err := c.Client.CoreV1().Services(svc.Namespace).Update(ctx, svc, metav1.UpdateOptions{})
		if err != nil {
			return ignoreGone(err)
		}
		svc = updated
	}
	scheme := "internal"
	switch s := svc.Annotations[annotationScheme]; s {
	case "", "internal":
	case "internet-facing":
		scheme = s
	default:
		return fmt.Errorf("unknown scheme: %v", s)
	}
	name := loadBalancerName(f.cluster, svc, scheme)
	arn := fmt.Sprintf("arn:%s:elasticloadbalancing:%s:%s:loadbalancer/net/%s/%s", c.Partition, c.Region, c.Account, name, hash(name)[:16])
	if c.Ledger.get(LoadBalancerKind, arn) == nil {
		subnets, err := c.discoverSubnets(f, scheme)
		if err != nil {
			return err
		}
		tags := map[string]any{tagLBCCluster: f.cluster, tagLBCStack: svc.Namespace + "/" + svc.Name}
		r := &Resource{Kind: LoadBalancerKind, Type: "aws_lb", Name: name, ID: arn, ARN: arn,
			Owner: "service " + svc.Namespace + "/" + svc.Name, Account: c.Account, Created: time.Now(), ReadyAt: time.Now(),
			Attrs: map[string]any{"name": name, "loadBalancerType": "network", "internal": scheme == "internal",
				"subnets": subnets, "vpcId": f.vpc, "tags": tags}}
		r.Tags = tagsOf(r.Attrs)
		c.Ledger.put(r)
	}
	dns := fmt.Sprintf("%s-%s.elb.%s.amazonaws.com", name, hash(arn)[:16], c.Region)
	if len(svc.Status.LoadBalancer.Ingress) != 1 || svc.Status.LoadBalancer.Ingress[0].Hostname != dns {
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: dns}}
		_, err := c.Client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{})
		return ignoreGone(err)
	}
	return nil
}

var invalidName = regexp.MustCompile(`[^a-zA-Z0-9]`)

func loadBalancerName(cluster string, svc *corev1.Service, scheme string) string {
	uuid := hash(cluster + string(svc.UID) + scheme)
	return fmt.Sprintf("k8s-%.8s-%.8s-%.10s", invalidName.ReplaceAllString(svc.Namespace, ""), invalidName.ReplaceAllString(svc.Name, ""), uuid)
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// discoverSubnets picks the scheme's subnets of the controller's VPC, one
// per zone.
func (c *LoadBalancerController) discoverSubnets(f lbcFlags, scheme string) ([]any, error) {
	role := tagSubnetInternal
	if scheme == "internet-facing" {
		role = tagSubnetPublic
	}
	perZone := map[string]string{}
	for _, s := range c.Ledger.All() {
		if s.Type != "aws_subnet" || s.Attrs["vpcId"] != f.vpc {
			continue
		}
		if v, ok := s.Tags[role]; !ok || v != "" && v != "1" {
			continue
		}
		if !eligible(s.Tags, f.cluster) {
			continue
		}
		zone, _ := s.Attrs["availabilityZone"].(string)
		if zone == "" {
			zone, _ = s.Attrs["availabilityZoneId"].(string)
		}
		if id, ok := perZone[zone]; !ok || s.ID < id {
			perZone[zone] = s.ID
		}
	}
	if len(perZone) == 0 {
		return nil, fmt.Errorf("couldn't auto-discover subnets: unable to resolve at least one subnet (%s in %s)", role, f.vpc)
	}
	var ids []string
	for _, id := range perZone {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out, nil
}

// eligible: no kubernetes.io/cluster/ tag, or one for this cluster.
func eligible(tags map[string]string, cluster string) bool {
	other := false
	for k := range tags {
		if k == "kubernetes.io/cluster/"+cluster {
			return true
		}
		if strings.HasPrefix(k, "kubernetes.io/cluster") {
			other = true
		}
	}
	return !other
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // looked at again on the next pass
	}
	return err
}
