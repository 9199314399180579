package egress

import (
	"errors"
	"fmt"
	"net/netip"
)

// Which addresses a receiver may have. The lists follow IANA's IPv4 and
// IPv6 Special-Purpose Address Registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry/ and
// https://www.iana.org/assignments/iana-ipv6-special-registry/): every
// entry that is not globally reachable is refused, and so are the cloud
// metadata services, multicast, and IPv6 outside global unicast. IPv6
// forms that carry an IPv4 address are judged by that address too.

// addrRange is a range receivers may not be in, and what to call it.
type addrRange struct {
	prefix   netip.Prefix
	category string
}

func refuse(cidr, category string) addrRange {
	return addrRange{netip.MustParsePrefix(cidr), category}
}

const (
	metadata      = "the cloud metadata address"
	unspecified   = "an unspecified address"
	loopback      = "a loopback address"
	private       = "a private address"
	linkLocal     = "a link-local address"
	reserved      = "a reserved address"
	documentation = "a documentation address"
	benchmarking  = "a benchmarking address"
	multicast     = "a multicast address"
)

// ipv4Refused is tried in order, so the metadata addresses come before the
// ranges that hold them.
var ipv4Refused = []addrRange{
	// Metadata services: AWS, GCP, Azure IMDS, OCI, DigitalOcean... (in
	// link-local).
	refuse("169.254.169.254/32", metadata),
	// Azure WireServer: a public address that only answers from inside
	// Azure, and answers VMs with their configuration.
	refuse("168.63.129.16/32", metadata),
	// Alibaba Cloud's metadata service (in the shared address space).
	refuse("100.100.100.200/32", metadata),

	// IANA IPv4 Special-Purpose Address Registry, not globally reachable:
	refuse("0.0.0.0/32", unspecified),                      // "This host on this network", RFC 1122
	refuse("0.0.0.0/8", reserved),                          // "This network", RFC 791
	refuse("10.0.0.0/8", private),                          // Private-Use, RFC 1918
	refuse("100.64.0.0/10", "a carrier-grade NAT address"), // Shared Address Space, RFC 6598
	refuse("127.0.0.0/8", loopback),                        // Loopback, RFC 1122
	refuse("169.254.0.0/16", linkLocal),                    // Link Local, RFC 3927
	refuse("172.16.0.0/12", private),                       // Private-Use, RFC 1918
	// IETF Protocol Assignments, RFC 6890: IPv4 Service Continuity
	// (192.0.0.0/29, RFC 7335), the dummy address (.8, RFC 7600), NAT64
	// discovery (.170 and .171, RFC 7050) and the PCP and TURN anycast
	// addresses (.9, RFC 7723; .10, RFC 8155). The registry calls the two
	// anycast ones globally reachable; they are refused with their block
	// all the same, as the nearest server answers an anycast address
	// (usually the operator's own network equipment) and none is a
	// webhook receiver.
	refuse("192.0.0.0/24", reserved),
	refuse("192.0.2.0/24", documentation),                 // TEST-NET-1, RFC 5737
	refuse("192.88.99.0/24", reserved),                    // Deprecated 6to4 Relay Anycast, RFC 7526
	refuse("192.168.0.0/16", private),                     // Private-Use, RFC 1918
	refuse("198.18.0.0/15", benchmarking),                 // Benchmarking, RFC 2544
	refuse("198.51.100.0/24", documentation),              // TEST-NET-2, RFC 5737
	refuse("203.0.113.0/24", documentation),               // TEST-NET-3, RFC 5737
	refuse("255.255.255.255/32", "the broadcast address"), // Limited Broadcast, RFC 8190
	refuse("240.0.0.0/4", reserved),                       // Reserved, RFC 1112

	// IANA IPv4 Multicast Address Space Registry, RFC 5771.
	refuse("224.0.0.0/4", multicast),
}

// ipv6Refused is tried in order, before the embedded IPv4 forms below
// (:: and ::1 are inside the IPv4-compatible ::/96).
var ipv6Refused = []addrRange{
	// AWS's metadata service over IPv6 (in unique local).
	refuse("fd00:ec2::254/128", metadata),

	// IANA IPv6 Special-Purpose Address Registry, not globally reachable:
	refuse("::/128", unspecified), // Unspecified Address, RFC 4291
	refuse("::1/128", loopback),   // Loopback Address, RFC 4291
	// IPv4-IPv6 Translation, local use, RFC 8215. Where the IPv4 address
	// sits in it is each network's choice (RFC 6052 allows /48 to /96), so
	// it cannot be read out: the whole prefix is refused.
	refuse("64:ff9b:1::/48", "a local-use NAT64 address"),
	refuse("100::/64", "a discard-only address"), // Discard-Only Address Block, RFC 6666
	refuse("100:0:0:1::/64", reserved),           // Dummy IPv6 Prefix, RFC 9780
	// TEREDO, RFC 4380 (globally reachable: N/A). Refused whatever it
	// embeds (a server IPv4 in bits 32-63, the client's inverted in the
	// last 32): a deprecated tunnel nobody hosts receivers behind, that
	// would let a host with a Teredo client reach an IPv4 address chosen
	// in the URL.
	refuse("2001::/32", "a Teredo address"),
	refuse("2001:2::/48", benchmarking),    // Benchmarking, RFC 5180
	refuse("2001:db8::/32", documentation), // Documentation, RFC 3849
	refuse("2001:10::/28", reserved),       // Deprecated (previously ORCHID), RFC 4843
	// IETF Protocol Assignments, RFC 2928. As with 192.0.0.0/24, the
	// globally reachable entries inside it are refused with it: anycast
	// addresses (PCP, TURN, DNS-SD SRP: 2001:1::1-3; AMT: 2001:3::/32;
	// AS112: 2001:4:112::/48) and identifiers that are not locators
	// (ORCHIDv2 2001:20::/28, DETs 2001:30::/28). None is a receiver.
	refuse("2001::/23", reserved),
	refuse("3fff::/20", documentation),               // Documentation, RFC 9637
	refuse("5f00::/16", "a segment routing address"), // Segment Routing (SRv6) SIDs, RFC 9602
	refuse("fc00::/7", "a unique local address"),     // Unique-Local, RFC 4193
	refuse("fe80::/10", linkLocal),                   // Link-Local Unicast, RFC 4291

	// IANA IPv6 Address Space Registry: deprecated site-local (RFC 3879)
	// and multicast (RFC 4291).
	refuse("fec0::/10", "a site-local address"),
	refuse("ff00::/8", multicast),
}

// globalUnicast is the only IPv6 space IANA allocates for global unicast
// (IPv6 Address Space Registry); the rest is reserved by the IETF, apart
// from the ranges above and the IPv4 forms below.
var globalUnicast = netip.MustParsePrefix("2000::/3")

// ipv4Form is an IPv6 range whose addresses carry an IPv4 address that a
// translator or a tunnel delivers to.
type ipv4Form struct {
	prefix netip.Prefix
	name   string
	// at is the byte offset of the IPv4 address in the IPv6 address.
	at int
	// deprecated forms are refused even with a public IPv4 address: no
	// network should route them, and an old stack may still do so.
	deprecated bool
}

// ipv4Forms lists every IPv6 form that carries an IPv4 address, but the
// IPv4-mapped ::ffff:0:0/96 (which is IPv4 on the wire: AllowedAddr reads
// it as IPv4) and the two refused whole above (Teredo, local-use NAT64).
var ipv4Forms = []ipv4Form{
	// IPv4-IPv6 Translation, RFC 6052: globally reachable in the IANA IPv6
	// Special-Purpose Address Registry; the network's NAT64 connects to
	// the IPv4 address in the last 32 bits.
	{prefix: netip.MustParsePrefix("64:ff9b::/96"), name: "a NAT64 address", at: 12},
	// 6to4, RFC 3056 (IANA IPv6 Special-Purpose Address Registry, globally
	// reachable N/A): the IPv4 address of the site is bits 16-47.
	{prefix: netip.MustParsePrefix("2002::/16"), name: "a 6to4 address", at: 2},
	// IPv4-translated addresses of SIIT, RFC 2765 (obsoleted by RFC 6145;
	// inside the IETF-reserved ::/8 of the IPv6 Address Space Registry).
	{prefix: netip.MustParsePrefix("::ffff:0:0:0/96"), name: "an IPv4-translated address", at: 12, deprecated: true},
	// IPv4-compatible addresses, deprecated by RFC 4291 section 2.5.5.1
	// (inside the IETF-reserved ::/8). :: and ::1 are matched before.
	{prefix: netip.MustParsePrefix("::/96"), name: "an IPv4-compatible address", at: 12, deprecated: true},
}

// refusal returns why ip (unzoned, IPv4 unmapped) is not a public
// address, or nil.
func refusal(ip netip.Addr) error {
	if ip.Is4() {
		return firstMatch(ipv4Refused, ip)
	}
	if err := firstMatch(ipv6Refused, ip); err != nil {
		return err
	}
	for _, form := range ipv4Forms {
		if form.prefix.Contains(ip) {
			return form.refusal(ip)
		}
	}
	if !globalUnicast.Contains(ip) {
		return errors.New(reserved)
	}
	return nil
}

func firstMatch(ranges []addrRange, ip netip.Addr) error {
	for _, r := range ranges {
		if r.prefix.Contains(ip) {
			return errors.New(r.category)
		}
	}
	return nil
}

// refusal judges ip by the IPv4 address it carries: "a 6to4 address for
// 127.0.0.1, a loopback address".
func (f ipv4Form) refusal(ip netip.Addr) error {
	b := ip.As16()
	v4 := netip.AddrFrom4([4]byte(b[f.at : f.at+4]))
	if err := refusal(v4); err != nil {
		return fmt.Errorf("%s for %s, %w", f.name, v4, err)
	}
	if f.deprecated {
		return fmt.Errorf("%s for %s, a deprecated form", f.name, v4)
	}
	return nil
}
