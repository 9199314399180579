package phonezones

import "testing"

func TestCallee(t *testing.T) {
	for _, tc := range []struct{ to, want string }{
		{"+12125550100", "America/New_York"},
		{"+13105550100", "America/Los_Angeles"},
		{"+61255550100", "Australia/Sydney"},
		{"+442071838750", "Europe/London"},
		{"+999123", "UTC"}, // no such country
		{"not a number", "UTC"},
	} {
		if got := Callee(tc.to).String(); got != tc.want {
			t.Errorf("Callee(%q) = %s, want %s", tc.to, got, tc.want)
		}
	}
}
