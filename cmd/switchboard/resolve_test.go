package main

import (
	"strings"
	"testing"
)

// noEnv is an empty environment.
func noEnv(string) string { return "" }

// envOf is an environment holding vars.
func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// The environment stands in for flags not given: SIP binds to the pod's
// address (env POD_IP, as config/manager, the Helm chart and the
// READMEs promise), the worker is named after the pod (POD_NAME), and
// the REST API address and history store come from theirs. A flag given
// wins; --dev stays on loopback.
func TestResolveEnvironment(t *testing.T) {
	pod := map[string]string{"POD_IP": "10.1.2.3", "POD_NAME": "switchboard-7d9f-abcde",
		"SWITCHBOARD_ADDR": ":9090", "SWITCHBOARD_HISTORY_DSN": "postgres://sb@db/history"}
	for _, tc := range []struct {
		name                        string
		dev                         bool
		env                         map[string]string
		given                       map[string]bool
		set                         func(*options)
		bindHost, worker, addr, dsn string
	}{
		{name: "in a pod", env: pod, bindHost: "10.1.2.3", worker: "switchboard-7d9f-abcde", addr: ":9090",
			dsn: "postgres://sb@db/history"},
		{name: "flags given win", env: pod,
			given: map[string]bool{"sip-bind-host": true, "worker-id": true, "api-addr": true, "history-dsn": true},
			set: func(o *options) {
				o.sip.BindHost, o.worker.ID, o.api.Addr, o.history.DSN = "10.9.9.9", "w-1", ":7070", "sqlite:x.db"
			},
			bindHost: "10.9.9.9", worker: "w-1", addr: ":7070", dsn: "sqlite:x.db"},
		{name: "--dev stays on loopback", dev: true, env: pod, bindHost: "127.0.0.1", worker: "switchboard-7d9f-abcde",
			addr: ":9090", dsn: "postgres://sb@db/history"},
		{name: "no environment", env: nil, bindHost: firstIPv4(), worker: defaultOptions().worker.ID, addr: ":8080",
			dsn: "sqlite:/var/lib/switchboard/history/history.db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOptions()
			o.dev.enabled = tc.dev
			if tc.set != nil {
				tc.set(&o)
			}
			set, err := resolve(o, envOf(tc.env), tc.given)
			if err != nil {
				t.Fatal(err)
			}
			if set.app.SIP.BindHost != tc.bindHost || set.app.Worker.ID != tc.worker || set.apiAddr != tc.addr || set.historyDSN != tc.dsn {
				t.Errorf("bind host %q, worker %q, API address %q, history %q; want %q, %q, %q, %q", set.app.SIP.BindHost,
					set.app.Worker.ID, set.apiAddr, set.historyDSN, tc.bindHost, tc.worker, tc.addr, tc.dsn)
			}
		})
	}
}

// The "auto" switches follow --dev, and a value that is none of true,
// false and auto is refused by name.
func TestResolveAuto(t *testing.T) {
	for _, dev := range []bool{false, true} {
		o := defaultOptions()
		o.dev.enabled = dev
		set, err := resolve(o, noEnv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if set.app.CallNormalEvents != dev || set.app.Webhooks.AllowInsecure != dev || set.app.MetricsSecure == dev ||
			set.app.DashboardInsecureCookies != dev {
			t.Errorf("--dev=%v: normal events %v, insecure webhooks %v, secure metrics %v, insecure cookies %v", dev,
				set.app.CallNormalEvents, set.app.Webhooks.AllowInsecure, set.app.MetricsSecure, set.app.DashboardInsecureCookies)
		}
	}
	for name, set := range map[string]func(*options){
		"call-normal-events":     func(o *options) { o.calls.NormalEvents = "yes" },
		"metrics-secure":         func(o *options) { o.metrics.Secure = "on" },
		"webhook-allow-insecure": func(o *options) { o.webhooks.AllowInsecureMode = "maybe" },
	} {
		o := defaultOptions()
		set(&o)
		if _, err := resolve(o, noEnv, nil); err == nil || !strings.Contains(err.Error(), "--"+name) {
			t.Errorf("--%s: %v, want it refused by name", name, err)
		}
	}
}
