package apptest

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
)

// UdpService counts the datagrams an internal service on loopback gets.
type UdpService struct {
	Conn    net.PacketConn
	Packets atomic.Int32
}

func ListenUDP(t *testing.T) *UdpService {
	t.Helper()
	conn, err := (&net.ListenConfig{}).ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &UdpService{Conn: conn}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return
			}
			s.Packets.Add(1)
		}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return s
}

func (s *UdpService) Addr() string { return s.Conn.LocalAddr().String() }

func (s *UdpService) Received() int32 { return s.Packets.Load() }
