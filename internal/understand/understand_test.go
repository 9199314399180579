package understand

import (
	"reflect"
	"testing"
	"time"
)

func TestWords(t *testing.T) {
	tests := map[string][]string{
		"Um, four people.":          {"four", "people"},
		"That's RIGHT!":             {"thats", "right"},
		"twenty-three":              {"twenty", "three"},
		"3pm, or 3:30 p.m.":         {"3", "pm", "or", "3:30", "pm"},
		"the 3rd of December":       {"the", "3", "rd", "of", "december"},
		"1,000 people at 2.5 each.": {"1000", "people", "at", "2.5", "each"},
		"":                          nil,
		"uh... hmm":                 nil,
	}
	for in, want := range tests {
		if got := Words(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		text string
		want float64
		ok   bool
	}{
		{"four", 4, true},
		{"4", 4, true},
		{"twenty three", 23, true},
		{"twenty-three", 23, true},
		{"there will be four of us", 4, true},
		{"um, four people", 4, true},
		{"Four.", 4, true},
		{"one hundred and five", 105, true},
		{"a hundred", 100, true},
		{"two thousand three hundred and forty one", 2341, true},
		{"three point five", 3.5, true},
		{"2.5", 2.5, true},
		{"1,000", 1000, true},
		{"minus two", -2, true},
		{"zero", 0, true},
		{"nineteen", 19, true},
		{"four, I said four", 4, true},
		{"5 thousand", 5000, true},
		{"two or three", 0, false},
		{"two three", 0, false},
		{"nobody", 0, false},
		{"", 0, false},
		{"minus", 0, false},
		{"at 7:45", 0, false},
		{"a lot", 0, false},
	}
	for _, tt := range tests {
		got, ok := Number(tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Number(%q) = %v, %v; want %v, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

func TestYesNo(t *testing.T) {
	tests := []struct {
		text    string
		yes, ok bool
	}{
		{"yes", true, true},
		{"yeah sure", true, true},
		{"Yep!", true, true},
		{"that's right", true, true},
		{"um, of course", true, true},
		{"sure, why not", true, true},
		{"no", false, true},
		{"no thanks", false, true},
		{"nope", false, true},
		{"No, no.", false, true},
		{"that's not right", false, true},
		{"I don't", false, true},
		{"not really", false, true},
		{"absolutely not", false, true},
		{"of course not!", false, true},
		{"yes, no problem", true, true},
		{"all right", true, true},
		{"yes no", false, false},
		{"I'm not sure", false, false},
		{"maybe yes", false, false},
		{"hello there", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		yes, ok := YesNo(tt.text)
		if yes != tt.yes || ok != tt.ok {
			t.Errorf("YesNo(%q) = %v, %v; want %v, %v", tt.text, yes, ok, tt.yes, tt.ok)
		}
	}
}

func TestDigits(t *testing.T) {
	tests := []struct {
		text, want string
		ok         bool
	}{
		{"one two three four", "1234", true},
		{"1234", "1234", true},
		{"my pin is one two three four", "1234", true},
		{"1 2 3 4", "1234", true},
		{"oh seven", "07", true},
		{"double five six", "556", true},
		{"five five five twenty three", "55523", true},
		{"um, nine eight", "98", true},
		{"one two and three four", "", false},
		{"none", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := Digits(tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Digits(%q) = %q, %v; want %q, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDate(t *testing.T) {
	// Thursday 26 November 2026, mid-afternoon.
	now := time.Date(2026, time.November, 26, 15, 4, 5, 0, time.UTC)
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		text string
		want time.Time
		ok   bool
	}{
		{"today", day(2026, 11, 26), true},
		{"tomorrow", day(2026, 11, 27), true},
		{"the day after tomorrow", day(2026, 11, 28), true},
		{"in three days", day(2026, 11, 29), true},
		{"in two weeks", day(2026, 12, 10), true},
		{"friday", day(2026, 11, 27), true},
		{"next friday", day(2026, 11, 27), true},
		{"thursday", day(2026, 12, 3), true},
		{"this thursday", day(2026, 11, 26), true},
		{"december third", day(2026, 12, 3), true},
		{"December the 3rd", day(2026, 12, 3), true},
		{"the third of december", day(2026, 12, 3), true},
		{"dec 3 2027", day(2027, 12, 3), true},
		{"january twenty first", day(2027, 1, 21), true},
		{"november twenty sixth", day(2026, 11, 26), true},
		{"2027-02-01", day(2027, 2, 1), true},
		{"um, how about tomorrow, friday", day(2026, 11, 27), true},
		{"february thirtieth", time.Time{}, false},
		{"tomorrow or friday next week", day(2026, 11, 27), true},
		{"monday or tuesday", time.Time{}, false},
		{"may I call you", time.Time{}, false},
		{"whenever", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := Date(tt.text, now)
		if !got.Equal(tt.want) || ok != tt.ok {
			t.Errorf("Date(%q) = %v, %v; want %v, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTime(t *testing.T) {
	tests := []struct {
		text string
		want Clock
		ok   bool
	}{
		{"three thirty pm", Clock{15, 30}, true},
		{"3:30 p.m.", Clock{15, 30}, true},
		{"3:30pm", Clock{15, 30}, true},
		{"7pm", Clock{19, 0}, true},
		{"seven o'clock", Clock{7, 0}, true},
		{"at seven", Clock{7, 0}, true},
		{"twelve am", Clock{0, 0}, true},
		{"twelve pm", Clock{12, 0}, true},
		{"noon", Clock{12, 0}, true},
		{"midnight", Clock{0, 0}, true},
		{"half past three", Clock{3, 30}, true},
		{"quarter to four in the afternoon", Clock{15, 45}, true},
		{"ten past six pm", Clock{18, 10}, true},
		{"eight in the evening", Clock{20, 0}, true},
		{"nine oh five am", Clock{9, 5}, true},
		{"15:45", Clock{15, 45}, true},
		{"four people at seven thirty", Clock{7, 30}, true},
		{"four", Clock{}, false},
		{"13 pm", Clock{}, false},
		{"three pm or four pm", Clock{}, false},
		{"", Clock{}, false},
	}
	for _, tt := range tests {
		got, ok := Time(tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Time(%q) = %v, %v; want %v, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
	if s := (Clock{9, 5}).String(); s != "09:05" {
		t.Errorf("Clock.String = %q", s)
	}
}

func TestMatch(t *testing.T) {
	seating := []Choice{
		{Value: "inside", Phrases: []string{"inside", "indoors", "in the dining room"}},
		{Value: "outside", Phrases: []string{"outside", "on the terrace", "outdoors"}},
		{Value: "unsure", Phrases: []string{"not sure", "either"}},
	}
	tests := []struct {
		text, want string
		ok         bool
	}{
		{"inside please", "inside", true},
		{"Um, on the terrace!", "outside", true},
		{"I'd like to sit in the dining room", "inside", true},
		{"I'm not sure", "unsure", true},
		{"inside or outside", "", false},
		{"the terrace", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := Match(tt.text, seating)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Match(%q) = %q, %v; want %q, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := Match("yes", nil); ok {
		t.Error("Match with no choices matched")
	}
	menu := []Choice{{Value: "sales", Phrases: []string{"sales", "option one"}}, {Value: "support", Phrases: []string{"support", "option 2"}}}
	for text, want := range map[string]string{"option 1": "sales", "Option two, please": "support", "um, sales": "sales"} {
		if got, ok := Match(text, menu); !ok || got != want {
			t.Errorf("Match(%q) = %q, %v; want %q", text, got, ok, want)
		}
	}
	if got, ok := Match("sure thing", []Choice{{Value: "sure", Phrases: []string{"sure", "Sure!"}}}); !ok || got != "sure" {
		t.Errorf("Match with repeated phrases = %q, %v", got, ok)
	}
}

// FuzzUnderstand checks that no text makes a reader panic or return a
// value it cannot stand behind: numbers are finite, digits are digits,
// clocks are on a 24-hour dial, dates are midnight.
func FuzzUnderstand(f *testing.F) {
	for _, s := range []string{"four", "twenty three", "3:30 pm", "december third", "one two three",
		"yeah sure", "minus", "a", "point", "in 400 days", "double", "99:99", "the 99th of may", "1e400"} {
		f.Add(s)
	}
	now := time.Date(2026, time.November, 26, 15, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := Number(s); ok && (n != n || n > 1e300 || n < -1e300) {
			t.Errorf("Number(%q) = %v", s, n)
		}
		if d, ok := Digits(s); ok && (d == "" || !allDigits(d)) {
			t.Errorf("Digits(%q) = %q", s, d)
		}
		if c, ok := Time(s); ok && (c.Hour < 0 || c.Hour > 23 || c.Minute < 0 || c.Minute > 59) {
			t.Errorf("Time(%q) = %v", s, c)
		}
		if d, ok := Date(s, now); ok && (d.Hour() != 0 || d.Minute() != 0) {
			t.Errorf("Date(%q) = %v", s, d)
		}
		YesNo(s)
		Match(s, []Choice{{Value: "a", Phrases: []string{s}}, {Value: "b", Phrases: []string{"b"}}})
	})
}
