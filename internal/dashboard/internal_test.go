package dashboard

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// Outside development the session cookie is Secure too.
func TestSessionCookieIsSecureOutsideDev(t *testing.T) {
	keys := apikeys.NewIndex()
	keys.Upsert(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "acme", Name: "key"},
		Type: switchboardv1.APIKeySecretType, Data: map[string][]byte{switchboardv1.APIKeySecretKey: []byte("sk_live_1")}})
	h, err := New(Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	page := httptest.NewRecorder()
	h.ServeHTTP(page, httptest.NewRequest(http.MethodGet, "/sign-in", nil))
	token := regexp.MustCompile(`name="csrf_token" value="([0-9a-f]+)"`).FindStringSubmatch(page.Body.String())[1]
	form := url.Values{"csrf_token": {token}, "api_key": {"sk_live_1"}}
	req := httptest.NewRequest(http.MethodPost, "/sign-in", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range page.Result().Cookies() {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var session string
	for _, c := range rec.Result().Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, sessionCookie+"=") {
			session = c
		}
	}
	if rec.Code != http.StatusSeeOther || !strings.Contains(session, "; Secure") || !strings.Contains(session, "HttpOnly") {
		t.Fatalf("sign-in = %d, session cookie %q", rec.Code, session)
	}
}

// A test event's result reads as what to do about it.
func TestTestInterpretation(t *testing.T) {
	tests := []struct {
		res  webhook.Result
		want string
	}{
		{webhook.Result{StatusCode: 200}, "Delivered"},
		{webhook.Result{StatusCode: 401}, "did not accept the signature"},
		{webhook.Result{StatusCode: 403}, "did not accept the signature"},
		{webhook.Result{StatusCode: 404}, "path is wrong"},
		{webhook.Result{StatusCode: 503}, "an error on its side"},
		{webhook.Result{Err: "timed out after 10s"}, "did not answer in time"},
		{webhook.Result{Err: "connection refused"}, "could not be reached: connection refused"},
	}
	for _, tt := range tests {
		if got := testInterpretation(tt.res); !strings.Contains(got, tt.want) {
			t.Errorf("%+v reads %q, want it to say %q", tt.res, got, tt.want)
		}
	}
}
