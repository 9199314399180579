package retell

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboard-dev/switchboard/internal/conversation"
)

// link is one connection: run writes to it, its reader reads it.
type link struct {
	s    *session
	conn *websocket.Conn
	// stopRead cancels the reader's context, which closes the socket.
	stopRead context.CancelFunc

	// From the reader: each config, the first message, the end.
	configs chan serverConfig
	heard   chan struct{}
	ended   chan connEnd
	// dropBegin: a reconnected server's begin message is not said again.
	dropBegin bool
	// readerDone: its end was taken from ended.
	readerDone bool

	// Run's.
	ready       bool
	config      serverConfig
	detailsSent bool
	pings       *time.Ticker
	pongDue     *time.Timer
}

// connEnd is how a connection ended.
type connEnd struct {
	// err is the session's end (nil: normal) unless lost or retry.
	err error
	// lost: the connection dropped without a close frame; run decides.
	lost bool
	// retry: dial again (auto_reconnect).
	retry  bool
	detail string
}

// serve runs one connection until it ends.
func (s *session) serve(conn *websocket.Conn, reconnected bool) connEnd {
	readCtx, stopRead := context.WithCancel(context.Background())
	defer stopRead()
	l := &link{
		s: s, conn: conn, stopRead: stopRead,
		configs: make(chan serverConfig, 1), heard: make(chan struct{}), ended: make(chan connEnd, 1),
		dropBegin: reconnected && s.beginSeen,
	}
	if reconnected {
		s.resume()
	}
	go func() { l.ended <- s.read(readCtx, l) }()
	defer l.stopTimers()
	if reconnected && s.autoReconnect {
		// Pings go on at once: a reopened server that never speaks is
		// dropped too, config or not.
		if err := l.startPings(); err != nil {
			return l.writeFailed(err)
		}
	}
	return l.loop()
}

// loop writes and pings until the connection ends.
func (l *link) loop() connEnd {
	s := l.s
	hold := time.NewTimer(holdQueue)
	defer hold.Stop()
	heard := l.heard
	for {
		var err error
		select {
		case <-s.ctx.Done():
			l.close(websocket.StatusNormalClosure, "call ended")
			return connEnd{}
		case end := <-l.ended:
			return l.readerEnded(end)
		case c := <-l.configs:
			err = l.configure(c)
		case <-heard:
			heard = nil
			err = l.heardFirst()
		case <-hold.C:
			l.ready = true
			err = l.flush()
		case <-s.wake:
			err = l.flush()
		case <-l.tick():
			err = l.write(pingPong{InteractionType: interactionPingPong, Timestamp: time.Now().UnixMilli()})
		case <-l.due():
			if end, dead := l.checkPong(); dead {
				return end
			}
		}
		if err != nil {
			return l.writeFailed(err)
		}
	}
}

// readerEnded ends the connection after its reader.
func (l *link) readerEnded(end connEnd) connEnd {
	l.readerDone = true
	if l.s.ctx.Err() != nil { // the reader stopped for Close
		l.close(websocket.StatusNormalClosure, "call ended")
		return connEnd{}
	}
	_ = l.conn.CloseNow()
	return l.s.settle(end)
}

// settle turns a lost connection into a reconnect or the session's end.
func (s *session) settle(end connEnd) connEnd {
	switch {
	case !end.lost:
		return end
	case s.autoReconnect:
		return connEnd{retry: true, detail: end.detail}
	default:
		return connEnd{err: &conversation.Error{Reason: conversation.ReasonWebSocketLost, Detail: end.detail}}
	}
}

func (l *link) tick() <-chan time.Time {
	if l.pings == nil {
		return nil
	}
	return l.pings.C
}

func (l *link) due() <-chan time.Time {
	if l.pongDue == nil {
		return nil
	}
	return l.pongDue.C
}

func (l *link) stopTimers() {
	if l.pings != nil {
		l.pings.Stop()
		l.pongDue.Stop()
	}
}

// heardFirst readies the connection on the server's first message: its
// config when it sends one first (call_details then goes before any
// request), or anything else.
func (l *link) heardFirst() error {
	select {
	case c := <-l.configs:
		return l.configure(c)
	default:
		l.ready = true
		return l.flush()
	}
}

// configure applies the server's config: call_details once, pings when
// it asks for auto_reconnect.
func (l *link) configure(c serverConfig) error {
	l.config = c
	l.s.autoReconnect = c.AutoReconnect
	if c.CallDetails && !l.detailsSent {
		l.detailsSent = true
		if err := l.write(newCallDetails(l.s.call)); err != nil {
			return err
		}
	}
	if c.AutoReconnect {
		if err := l.startPings(); err != nil {
			return err
		}
	}
	// Requests held for the config go now.
	l.ready = true
	return l.flush()
}

// startPings sends ping_pong now and every PingInterval, and watches for
// the server's.
func (l *link) startPings() error {
	if l.pings != nil {
		return nil
	}
	l.s.lastPong.Store(time.Now().UnixNano())
	l.pings = time.NewTicker(l.s.cfg.PingInterval)
	l.pongDue = time.NewTimer(l.s.cfg.PingTimeout)
	return l.write(pingPong{InteractionType: interactionPingPong, Timestamp: time.Now().UnixMilli()})
}

// checkPong ends the connection when the server's ping_pong is overdue,
// as Retell does, and otherwise waits for the next due time. A reader
// held by the loop's back-pressure is not the server's fault.
func (l *link) checkPong() (connEnd, bool) {
	timeout := l.s.cfg.PingTimeout
	since := time.Since(time.Unix(0, l.s.lastPong.Load()))
	switch {
	case l.s.blocked.Load():
		l.pongDue.Reset(timeout)
	case since < timeout:
		l.pongDue.Reset(timeout - since)
	default:
		detail := fmt.Sprintf("no ping_pong from the server for %s", timeout)
		l.close(websocket.StatusGoingAway, "no ping_pong")
		return connEnd{retry: true, detail: detail}, true
	}
	return connEnd{}, false
}

// flush sends what is queued once the connection is ready.
func (l *link) flush() error {
	if !l.ready {
		return nil
	}
	s := l.s
	s.mu.Lock()
	req, upd := s.request, s.update
	s.request, s.update = nil, nil
	s.mu.Unlock()
	if req != nil {
		s.sent = req
		s.newest.Store(int64(req.ResponseID))
		kind := interactionResponse
		if req.Kind == conversation.Remind {
			kind = interactionReminder
		}
		id := req.ResponseID
		if err := l.write(l.transcriptMessage(kind, &id, req.Transcript, "")); err != nil {
			return err
		}
	}
	if upd != nil {
		return l.write(l.transcriptMessage(interactionUpdateOnly, nil, upd.transcript, upd.turn))
	}
	return nil
}

func (l *link) transcriptMessage(kind string, id *int, msgs []conversation.Message, turn string) transcriptMessage {
	m := transcriptMessage{InteractionType: kind, ResponseID: id, Transcript: transcript(msgs), TurnTaking: turn}
	if l.config.TranscriptWithToolCalls {
		m.TranscriptWithToolCalls = msgs
		if m.TranscriptWithToolCalls == nil {
			m.TranscriptWithToolCalls = []conversation.Message{}
		}
	}
	return m
}

func (l *link) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return l.conn.Write(ctx, websocket.MessageText, b)
}

// writeFailed ends the connection after a failed write. A server closing
// the socket makes the write fail too, so the reader, which sees its
// close frame, gets a moment to say so first.
func (l *link) writeFailed(err error) connEnd {
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case end := <-l.ended:
		_ = l.conn.CloseNow()
		return l.s.settle(end)
	case <-t.C:
	}
	l.stopRead()
	<-l.ended
	return l.s.settle(connEnd{lost: true, detail: "sending to the server: " + err.Error()})
}

// close starts the closing handshake and waits for the reader; a server
// that does not answer within closeTimeout is cut off.
func (l *link) close(code websocket.StatusCode, reason string) {
	done := make(chan struct{})
	go func() {
		_ = l.conn.Close(code, reason)
		close(done)
	}()
	t := time.NewTimer(closeTimeout)
	select {
	case <-done:
	case <-t.C:
		l.stopRead()
	}
	t.Stop()
	l.stopRead()
	if !l.readerDone {
		<-l.ended
	}
	<-done
}

// read takes the server's messages until the connection ends.
func (s *session) read(ctx context.Context, l *link) connEnd {
	heard := false
	for {
		typ, data, err := l.conn.Read(ctx)
		if err != nil {
			return s.readEnd(err)
		}
		if typ != websocket.MessageText {
			return l.corrupt("the server sent a binary frame; the protocol is JSON text")
		}
		m, err := parse(data)
		if err != nil {
			return l.corrupt(err.Error())
		}
		if !s.handle(ctx, l, m) {
			return connEnd{}
		}
		if !heard { // after handling, so that a first config is queued
			heard = true
			close(l.heard)
		}
	}
}

// corrupt closes the connection (1007) over a message outside the
// protocol.
func (l *link) corrupt(detail string) connEnd {
	_ = l.conn.Close(websocket.StatusInvalidFramePayloadData, "corrupt payload")
	return connEnd{err: &conversation.Error{Reason: conversation.ReasonWebSocketCorrupt, Detail: detail}}
}

// readEnd maps the reader's error to the connection's end.
func (s *session) readEnd(err error) connEnd {
	var ce websocket.CloseError
	switch {
	case s.ctx.Err() != nil:
		return connEnd{} // we closed it
	case errors.As(err, &ce) && ce.Code == websocket.StatusNormalClosure:
		s.log.Info("the Retell server closed the WebSocket (1000)", "reason", ce.Reason)
		return connEnd{}
	case errors.Is(err, websocket.ErrMessageTooBig):
		return connEnd{err: &conversation.Error{Reason: conversation.ReasonWebSocketCorrupt,
			Detail: fmt.Sprintf("the server sent a message over the %d-byte limit", s.cfg.ReadLimit)}}
	case errors.As(err, &ce):
		return connEnd{err: &conversation.Error{Reason: conversation.ReasonWebSocketRuntime,
			Detail: fmt.Sprintf("the server closed the WebSocket with status %d (%q)", int(ce.Code), ce.Reason)}}
	default:
		return connEnd{lost: true, detail: "the connection to the server dropped: " + err.Error()}
	}
}

// handle applies one message; false when the session or the connection
// ended while it waited for the loop.
func (s *session) handle(ctx context.Context, l *link, m *serverMessage) bool {
	switch m.ResponseType {
	case responseConfig:
		select {
		case l.configs <- *m.Config:
		case <-ctx.Done():
			return false
		}
	case responsePingPong:
		s.lastPong.Store(time.Now().UnixNano())
	case responseResponse:
		c := m.chunk()
		if c.ResponseID == 0 && l.dropBegin {
			s.log.V(1).Info("dropped a reconnected server's begin message")
			return true
		}
		s.track(c)
		return s.push(ctx, c)
	case responseAgentInterrupt:
		return s.push(ctx, m.chunk())
	case responseUpdateAgent:
		s.offer(m.AgentConfig.settings())
	case responseToolCallInvocation, responseToolCallResult:
		return s.push(ctx, conversation.Chunk{ResponseID: int(s.newest.Load()), Tool: m.tool()})
	case responseMetadata:
		s.log.V(1).Info("ignored the server's metadata event (it is for web calls)")
	}
	return true
}

// track notes the newest response ids started and completed.
func (s *session) track(c conversation.Chunk) {
	if c.ResponseID == 0 {
		s.beginSeen = true
	}
	s.started = max(s.started, c.ResponseID)
	if c.Complete {
		s.completed = max(s.completed, c.ResponseID)
	}
}

// offer hands the loop new settings without waiting: settings the loop
// has not taken yet are merged into them (a loop that never reads
// Settings costs nothing). The reader is the only sender.
func (s *session) offer(st conversation.Settings) {
	for {
		select {
		case s.settings <- st:
			return
		default:
		}
		select {
		case old := <-s.settings:
			st.ReminderAfterMs = cmp.Or(st.ReminderAfterMs, old.ReminderAfterMs)
			st.ReminderMaxCount = cmp.Or(st.ReminderMaxCount, old.ReminderMaxCount)
			st.InterruptionSensitivity = cmp.Or(st.InterruptionSensitivity, old.InterruptionSensitivity)
		default:
		}
	}
}

// push hands c to the loop, waiting while the loop is slow (the reader
// then stops reading: back-pressure on the server, never an unbounded
// queue). A wait does not count against the server's ping_pong.
func (s *session) push(ctx context.Context, c conversation.Chunk) bool {
	select {
	case s.chunks <- c:
		return true
	default:
	}
	s.blocked.Store(true)
	defer func() {
		s.lastPong.Store(time.Now().UnixNano())
		s.blocked.Store(false)
	}()
	select {
	case s.chunks <- c:
		return true
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
	return false
}
