package calls_test

// In a cluster the metrics are served over HTTPS to callers the apiserver
// authenticates (a ServiceAccount token) and authorizes (the
// metrics-reader ClusterRole of config/rbac): no one else reads them.

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestSecureMetricsNeedAnAuthorizedToken(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	addr := fmt.Sprintf("127.0.0.1:%d", testsupport.FreePort(t, "tcp"))
	WithOperator(t, func(o *app.Options) { o.MetricsAddr, o.MetricsSecure = addr, true })
	o := NewOrg(t)
	rc := NewReceiver(t, nil)
	ApplyEndpoint(t, o.Ns, rc.URL(), nil)
	id := o.CreateCall(t, "+14155550180", nil)
	o.WaitAnalyzed(t, id)
	g.Eventually(func() int { return len(rc.ForCall(id)) }, 20*time.Second, 50*time.Millisecond).Should(Equal(3))

	GrantMetricsAuth(t)
	reader := ServiceAccountToken(t, o.Ns, "prometheus")
	stranger := ServiceAccountToken(t, o.Ns, "stranger")
	BindMetricsReader(t, o.Ns, "prometheus")

	// The manager's certificate is self-signed, as the ServiceMonitor of
	// config/prometheus expects.
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed test server
	scrape := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	g.Eventually(func() int { code, _ := scrape(""); return code }, 20*time.Second, 100*time.Millisecond).
		Should(Equal(http.StatusUnauthorized), "no token")
	code, _ := scrape(stranger)
	g.Expect(code).To(Equal(http.StatusForbidden), "a token without the metrics-reader role")
	g.Eventually(func() string {
		code, body := scrape(reader)
		if code != http.StatusOK {
			return fmt.Sprint(code)
		}
		return body
	}, 20*time.Second, 200*time.Millisecond).Should(And(ContainSubstring(`switchboard_calls_created_total{source="api"}`),
		ContainSubstring(`switchboard_webhook_delivery_attempts_total{result="succeeded"}`),
		ContainSubstring("switchboard_webhook_delivery_lag_seconds_count"),
		ContainSubstring("switchboard_webhook_deliveries_pending "),
		ContainSubstring("switchboard_calls_live ")))
}
