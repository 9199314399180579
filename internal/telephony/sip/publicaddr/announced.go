package publicaddr

import (
	"context"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sources are the places the announced address may come from, at most
// one set (--sip-external-host, --sip-external-service, --sip-external-node).
type Sources struct {
	Host    string // the address itself
	Service string // "namespace/name" of the pod's own Service
	Node    string // the pod's node, whose ExternalIP is announced if it has one
}

// Announced is the address announced in SIP headers and SDP: the node's
// external address, the pod's own Service's once its load balancer has
// one (waiting for it), or the host given; "" announces the bound one.
func Announced(ctx context.Context, c client.Reader, src Sources, log logr.Logger) (string, error) {
	if src.Node != "" {
		addr, err := FromNode(ctx, c, src.Node)
		if err == nil && addr != "" {
			log.Info("announcing this node's external address", "node", src.Node, "address", addr)
		}
		return addr, err
	}
	if src.Service == "" {
		return src.Host, nil
	}
	key, err := ParseService(src.Service)
	if err != nil {
		return "", err
	}
	log.Info("waiting for the address of this pod's SIP Service", "service", key)
	addr, err := FromService(ctx, c, key, Wait)
	if err != nil {
		return "", err
	}
	log.Info("announcing this pod's SIP Service address", "service", key, "address", addr)
	return addr, nil
}
