// Package publicaddr finds the address a call worker announces in its SIP
// headers and SDP when carriers reach it through a Service of its own (one
// LoadBalancer Service per pod, config/README.md "SIP and RTP on each
// replica"): the address is the load balancer's, known only once the
// cloud has provisioned it, so the pod reads it from the Service.
package publicaddr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Wait is how long FromService waits for the load balancer's address by
// default: cloud balancers take a minute or two; the charts' startup probe
// allows as long.
const Wait = 5 * time.Minute

// ParseService reads "namespace/name".
func ParseService(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--sip-external-service %q: want namespace/name", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// FromService returns the IPv4 address carriers reach the Service at: its
// first spec.externalIPs (routed addresses on bare metal), else its load
// balancer's IP, else its load balancer's host name resolved (AWS names
// its balancers). It polls every second until one shows, up to timeout; a
// Service that does not exist or cannot be read fails at once.
func FromService(ctx context.Context, c client.Reader, key types.NamespacedName, timeout time.Duration) (string, error) {
	var addr string
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var svc corev1.Service
		if err := c.Get(ctx, key, &svc); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
				return false, err
			}
			lastErr = err // the apiserver may be briefly away
			return false, nil
		}
		addr, lastErr = address(ctx, &svc)
		return addr != "", nil
	})
	if err != nil {
		if lastErr == nil {
			lastErr = errors.New("no external IP and no load-balancer address yet (does the cluster provision LoadBalancer Services, with UDP?)")
		}
		if !wait.Interrupted(err) {
			lastErr = err
		}
		return "", fmt.Errorf("the address of Service %s: %w", key, lastErr)
	}
	return addr, nil
}

// address is the Service's external IPv4 address, "" while it has none.
func address(ctx context.Context, svc *corev1.Service) (string, error) {
	for _, ip := range svc.Spec.ExternalIPs {
		if v4 := net.ParseIP(ip).To4(); v4 != nil {
			return v4.String(), nil
		}
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if v4 := net.ParseIP(in.IP).To4(); v4 != nil {
			return v4.String(), nil
		}
		if in.Hostname == "" {
			continue
		}
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", in.Hostname)
		if err != nil || len(ips) == 0 {
			return "", fmt.Errorf("load balancer %s does not resolve to an IPv4 address yet: %v", in.Hostname, err)
		}
		return ips[0].String(), nil
	}
	return "", nil
}

// FromNode returns the node's ExternalIP address (IPv4), which clouds
// report for nodes whose public address is translated 1:1 to the
// interface's (a pod on the host network binds the interface's), and ""
// when the node reports none: the address it binds is then the one to
// announce.
func FromNode(ctx context.Context, c client.Reader, name string) (string, error) {
	var node corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: name}, &node); err != nil {
		return "", fmt.Errorf("the addresses of node %s: %w", name, err)
	}
	for _, a := range node.Status.Addresses {
		if v4 := net.ParseIP(a.Address).To4(); a.Type == corev1.NodeExternalIP && v4 != nil {
			return v4.String(), nil
		}
	}
	return "", nil
}
