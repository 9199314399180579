package main

import (
	"testing"

	"github.com/switchboard-dev/switchboard/internal/quota"
)

func TestQuotaDefaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dev   bool
		given map[string]bool
		set   quota.Limits // the flags' values
		want  quota.Limits
	}{
		{name: "production: the flags' defaults", set: quota.Defaults, want: quota.Defaults},
		{name: "--dev lifts the call limits, keeps the endpoint limit", dev: true, set: quota.Defaults,
			want: quota.Limits{WebhookEndpoints: 20}},
		{name: "--dev with a rate given keeps it", dev: true,
			given: map[string]bool{"quota-create-rate": true, "quota-active-calls": true},
			set:   quota.Limits{CreateRate: 5, CreateBurst: 40, ActiveCalls: 10, WebhookEndpoints: 20},
			want:  quota.Limits{CreateRate: 5, ActiveCalls: 10, WebhookEndpoints: 20}},
		{name: "0 is unlimited in production", set: quota.Limits{}, want: quota.Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOptions()
			o.dev.enabled, o.quota = tc.dev, tc.set
			set, err := resolve(o, noEnv, tc.given)
			if err != nil {
				t.Fatal(err)
			}
			if set.app.Quota != tc.want {
				t.Errorf("limits = %+v, want %+v", set.app.Quota, tc.want)
			}
		})
	}
	for _, bad := range []quota.Limits{{CreateRate: -1}, {ActiveCalls: -5}, {WebhookEndpoints: -1}, {CreateBurst: -2}} {
		o := defaultOptions()
		o.quota = bad
		if _, err := resolve(o, noEnv, nil); err == nil {
			t.Errorf("%+v accepted, want an error", bad)
		}
	}
}
