package engine

import "testing"

func TestTrunkTarget(t *testing.T) {
	for _, tc := range []struct {
		trunk          Trunk
		uri, transport string
	}{
		{Trunk{Address: "sip:trunk.example.com"}, "sip:+14155550123@trunk.example.com", "udp"},
		{Trunk{Address: "trunk.example.com:5080"}, "sip:+14155550123@trunk.example.com:5080", "udp"},
		{Trunk{Address: "sip:10.0.0.1:5060", Transport: "TCP"}, "sip:+14155550123@10.0.0.1:5060", "tcp"},
		{Trunk{Address: "sip:10.0.0.1:5060;transport=tcp"}, "sip:+14155550123@10.0.0.1:5060", "tcp"},
		{Trunk{Address: "sip:10.0.0.1:5060;transport=tcp", Transport: "udp"}, "sip:+14155550123@10.0.0.1:5060", "udp"},
	} {
		u, transport, err := tc.trunk.target("+14155550123")
		if err != nil {
			t.Errorf("%+v: %v", tc.trunk, err)
			continue
		}
		if u.String() != tc.uri || transport != tc.transport {
			t.Errorf("%+v: %s over %s, want %s over %s", tc.trunk, u.String(), transport, tc.uri, tc.transport)
		}
	}
}
