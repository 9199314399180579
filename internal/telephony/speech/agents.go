package speech

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/egress"
)

// Agents gives each agent's calls their recognizer (ForAgent), built once
// per generation of the agent: a server's client checks its URL and holds
// its connections, which the calls share.
type Agents struct {
	// Secrets reads the API keys of spec.speech (a live reader).
	Secrets client.Reader
	// Policy guards the servers' URLs as webhook URLs are guarded.
	Policy egress.URLPolicy
	// Embedded configures the embedded recognizer, loaded at the first
	// call that needs it (each decoder holds its model in memory).
	Embedded EmbeddedOptions
	Log      logr.Logger

	loadEmbedded sync.Once
	embedded     Recognizer // nil in a binary without it

	mu      sync.Mutex
	byAgent map[types.UID]agentRecognizer
}

// embeddedRecognizer loads the embedded recognizer once; nil when this
// binary has none or its model is missing, which is logged once.
func (a *Agents) embeddedRecognizer() Recognizer {
	a.loadEmbedded.Do(func() {
		r, err := NewEmbedded(a.Embedded)
		if err != nil {
			a.Log.Info("no embedded speech recognizer: gathers of agents without a speech server take keys only, "+
				"and callees' speech is not transcribed", "reason", err.Error())
			return
		}
		a.embedded = r
	})
	return a.embedded
}

type agentRecognizer struct {
	generation int64
	recognizer Recognizer
}

// buildTimeout bounds building a server's client (a Secret read, a DNS
// lookup) before a call's script starts.
const buildTimeout = 5 * time.Second

// For is the recognizer of a call of agent; nil when it has none (a binary
// without the embedded recognizer, and an agent without a server): its
// gathers then take keys only. An agent whose server cannot be used (its
// Secret is missing, its URL refused) is heard by the embedded recognizer,
// which the transcript names with the reason.
func (a *Agents) For(ctx context.Context, agent *switchboardv1.Agent) Recognizer {
	embedded := a.embeddedRecognizer()
	if agent == nil || agent.Spec.Speech == nil {
		return embedded
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if got, ok := a.byAgent[agent.UID]; ok && got.generation == agent.Generation {
		return got.recognizer
	}
	bctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	r, err := ForAgent(bctx, a.Secrets, agent, a.Policy, embedded)
	if err != nil {
		a.Log.Info("the agent's speech server cannot be used; its calls are heard by the embedded recognizer",
			"namespace", agent.Namespace, "agent", agent.Name, "reason", err.Error())
		r = nil
		if embedded != nil {
			r = renamed{Recognizer: embedded, name: fmt.Sprintf("%s (server not used: %s)", embedded.Name(), err)}
		}
	}
	if a.byAgent == nil {
		a.byAgent = map[types.UID]agentRecognizer{}
	}
	a.byAgent[agent.UID] = agentRecognizer{generation: agent.Generation, recognizer: r}
	return r
}

// renamed is a recognizer that the transcript names otherwise.
type renamed struct {
	Recognizer
	name string
}

func (r renamed) Name() string { return r.name }
