package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/publicaddr"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// sipStack is the SIP side of the process: the engine, the dialer, and the
// channels through which they wake the reconcilers.
type sipStack struct {
	engine    *engine.Engine
	dialer    *sip.Dialer
	callWake  chan event.GenericEvent
	trunkWake chan event.GenericEvent
}

// newSIPStack starts the SIP user agent; its calls end when ctx does.
func newSIPStack(ctx context.Context, mgr manager.Manager, dir *directory.Directory, worker string, opts SIPOptions,
	log logr.Logger) (*sipStack, error) {
	// The engine outlives ctx: on shutdown the calls hang up (BYE) through
	// it, and sip.EngineCloser (the sip-engine runnable) closes it once they have.
	external, err := publicaddr.Announced(ctx, mgr.GetAPIReader(),
		publicaddr.Sources{Host: opts.ExternalHost, Service: opts.ExternalService, Node: opts.ExternalNode}, log)
	if err != nil {
		return nil, err
	}
	eng, err := engine.NewEngine(context.WithoutCancel(ctx), engine.EngineConfig{BindHost: opts.BindHost, ExternalHost: external,
		BindPort: opts.BindPort, TLSBindPort: opts.TLSPort, RTPPorts: opts.RTPPorts, Logger: slog.New(logr.ToSlogHandler(log.WithName("sip").V(1))),
		Guard: engine.AddressGuard{Allow: opts.AddressPolicy.AllowedAddr}})
	if err != nil {
		return nil, err
	}
	spool := opts.SpoolDir
	if spool == "" {
		spool = filepath.Join(os.TempDir(), "switchboard-spool")
	}
	s := &sipStack{engine: eng, callWake: make(chan event.GenericEvent, 1024),
		trunkWake: make(chan event.GenericEvent, 64)}
	embedded := &tts.Flite{Binary: opts.Flite, Timeout: opts.TTSTimeout}
	voiceLog := log.WithName("voice")
	agentVoices := &tts.Voices{Secrets: mgr.GetAPIReader(), Policy: opts.ModelPolicy, Embedded: embedded,
		OnFallback: func(ns, agent, _ string, why *tts.FallbackError) {
			voiceLog.Info("a line was said in the embedded voice", "namespace", ns, "agent", agent,
				"reason", why.Reason, "error", why.Err.Error())
		}}
	voices := func(ctx context.Context, req telephony.Request) (tts.Speaker, error) {
		return agentVoices.For(ctx, req.Namespace, req.Agent)
	}
	registerCollector("voice-server-fallbacks", tts.FallbacksTotal)
	s.dialer, err = sip.New(ctx, sip.Config{
		Engine: eng,
		Trunks: sip.ClusterTrunks{Cache: mgr.GetClient(), Live: mgr.GetAPIReader()},
		Script: &sip.ScriptRenderer{Speaker: embedded, Voices: voices, ConfigMaps: mgr.GetAPIReader(),
			Streams: opts.Streams, Conversations: opts.Conversations, Prompts: sip.NewPromptCache(0)},
		Backlog:           sip.WorkerBacklog(dir.QueuedOnTrunk, worker),
		SpoolDir:          spool,
		RecordingMaxBytes: opts.RecordingMaxBytes,
		Recognizer: (&speech.Agents{Secrets: mgr.GetAPIReader(), Policy: opts.ModelPolicy, Embedded: opts.Speech,
			Log: log.WithName("speech")}).PerCall(ctx),
		Transfers:    opts.Transfers,
		WakeCall:     func(c types.NamespacedName) { wake(s.callWake, &switchboardv1.Call{ObjectMeta: meta(c)}) },
		TrunkChanged: func(t types.NamespacedName) { wake(s.trunkWake, &switchboardv1.SIPTrunk{ObjectMeta: meta(t)}) },
		Log:          log.WithName("sip-dialer"),
	})
	if err != nil {
		_ = eng.Close()
		return nil, fmt.Errorf("SIP dialer: %w", err)
	}
	return s, nil
}

func meta(n types.NamespacedName) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name}
}

// wake queues a reconcile of o without ever blocking the caller (a SIP
// call's goroutine, say): a full channel is waited on in the background,
// for a while (the controller may have stopped; the reconciler's own
// periodic check is the fallback).
func wake(ch chan event.GenericEvent, o client.Object) {
	ev := event.GenericEvent{Object: o}
	select {
	case ch <- ev:
	default:
		go func() {
			select {
			case ch <- ev:
			case <-time.After(time.Minute):
			}
		}()
	}
}
