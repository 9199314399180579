package engine

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/emiago/diago"
	diagomedia "github.com/emiago/diago/media"
	"github.com/emiago/diago/media/sdp"
	"github.com/emiago/sipgo/sip"
)

// Media modes of Trunk.Media.
const (
	// MediaRTP sends clear RTP (the zero value too).
	MediaRTP = "rtp"
	// MediaSRTPPreferred offers SRTP and accepts a clear answer, or
	// offers clear RTP again to a callee that refused SRTP with 488.
	MediaSRTPPreferred = "srtp-preferred"
	// MediaSRTPRequired offers SRTP and hangs up a clear answer
	// (HangupBySRTPRequired).
	MediaSRTPRequired = "srtp-required"
)

// HangupBySRTPRequired: the trunk requires SRTP and the answer had no
// usable SDES key: the call was ACKed and hung up before any audio.
const HangupBySRTPRequired = "srtp_required"

// SRTPSuite is the SDES crypto suite offered: diago v0.31.0 offers one
// suite a call and reads 30-byte inline keys only, which of the suites it
// names is AES_CM_128_HMAC_SHA1_80 (RFC 4568's mandatory one).
const SRTPSuite = "AES_CM_128_HMAC_SHA1_80"

// secureDialog prepares a dialog on a tls trunk: the returned context
// carries the trunk's TLS settings (a connection sipgo dials again for the
// INVITE presents its client certificate too), and with srtp the dialog
// gets a media session offering SRTP.
func (e *Engine) secureDialog(ctx context.Context, d *diago.DialogClientSession, t Trunk, transport string,
	recipient sip.Uri, srtp bool) (context.Context, error) {
	if transport == "tls" {
		ctx = withTrunkTLS(ctx, t.withTLS(trimHost(recipient.Host)))
	}
	if srtp {
		if err := e.offerSRTP(d); err != nil {
			return ctx, fmt.Errorf("srtp media: %w", err)
		}
	}
	return ctx, nil
}

// srtpOffered reports a trunk that offers SRTP.
func (t Trunk) srtpOffered() bool {
	return t.Media == MediaSRTPPreferred || t.Media == MediaSRTPRequired
}

// offerSRTP gives the dialog a media session that offers SDES-keyed SRTP
// (AES_CM_128_HMAC_SHA1_80), built as diago builds its own from the
// engine's transports: diago sets SRTP per transport (Transport.MediaSRTP),
// and the engine's transports serve trunks with and without it. diago
// keeps a session made before Invite.
func (e *Engine) offerSRTP(d *diago.DialogClientSession) error {
	bind := net.ParseIP(e.cfg.BindHost)
	if bind == nil || bind.IsUnspecified() {
		ip, _, err := sip.ResolveInterfacesIP("ip4", nil)
		if err != nil {
			return err
		}
		bind = ip
	}
	external := bind
	if e.cfg.ExternalHost != "" {
		external = net.ParseIP(e.cfg.ExternalHost)
	}
	sess := &diagomedia.MediaSession{
		Codecs:     slices.Clone(offeredCodecs),
		Laddr:      net.UDPAddr{IP: bind},
		ExternalIP: external,
		Mode:       sdp.ModeSendrecv,
		SecureRTP:  1,
		SRTPAlg:    diagomedia.SRTPProfileAes128CmHmacSha1_80,
	}
	if err := sess.Init(); err != nil {
		return err
	}
	d.InitMediaSession(sess, nil, nil)
	return nil
}

// offeredCodecs are diago's default codecs, which the engine offers.
var offeredCodecs = []diagomedia.Codec{diagomedia.CodecAudioUlaw, diagomedia.CodecAudioAlaw,
	diagomedia.CodecTelephoneEvent8000}

// answeredSRTP reports an answer whose audio line carries an SDES key of
// the suite offered (diago ignores the others, and would then send clear
// RTP).
func answeredSRTP(answer []byte) bool {
	for line := range bytes.Lines(answer) {
		line = bytes.TrimSpace(line)
		if !bytes.HasPrefix(line, []byte("a=crypto:")) {
			continue
		}
		if f := bytes.Fields(line); len(f) >= 3 && string(f[1]) == SRTPSuite {
			return true
		}
	}
	return false
}

// badSRTPPacket reports a read error about one packet of an SRTP call (it
// failed authentication, was replayed, or came in clear): diago returns
// it from the read like a closed socket, and the caller must skip the
// packet, not stop listening, or one stray packet deafens the call.
func badSRTPPacket(err error) bool {
	return strings.Contains(err.Error(), "SRTP Decrypt error")
}
