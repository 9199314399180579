package phone

import "testing"

func TestCalleeZone(t *testing.T) {
	for _, tc := range []struct{ to, want string }{
		{"+12125550100", "America/New_York"},
		{"+13105550100", "America/Los_Angeles"},
		{"+61255550100", "Australia/Sydney"},
		{"+442071838750", "Europe/London"},
		{"+999123", "UTC"}, // no such country
		{"not a number", "UTC"},
	} {
		if got := CalleeZone(tc.to).String(); got != tc.want {
			t.Errorf("CalleeZone(%q) = %s, want %s", tc.to, got, tc.want)
		}
	}
}
