package understand

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

var months = map[string]time.Month{
	"january": time.January, "february": time.February, "march": time.March, "april": time.April,
	"may": time.May, "june": time.June, "july": time.July, "august": time.August,
	"september": time.September, "october": time.October, "november": time.November, "december": time.December,
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April, "jun": time.June,
	"jul": time.July, "aug": time.August, "sep": time.September, "sept": time.September,
	"oct": time.October, "nov": time.November, "dec": time.December,
}

var ordinals = map[string]int{
	"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
	"eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
	"fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
	"nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}

// Date reads the one calendar day in the text, relative to now and in now's
// location: "today", "tomorrow", "the day after tomorrow", "in three days",
// "in two weeks", a weekday ("friday", "next friday", "this friday"), or a
// month and day ("december third", "the 3rd of december", "dec 3 2027",
// "2027-12-03"). A weekday alone or with "next" is the soonest such day after
// today; with "this" it may be today. A month and day without a year is the
// next such day on or after today. The result is midnight of that day.
func Date(text string, now time.Time) (time.Time, bool) {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	var found []time.Time
	// Words splits on hyphens, so ISO dates are read from the text first.
	for _, iso := range isoDates.FindAllString(text, -1) {
		if d, err := time.ParseInLocation("2006-01-02", iso, now.Location()); err == nil {
			found = append(found, d)
		}
	}
	words := Words(isoDates.ReplaceAllString(text, " "))
	for i := 0; i < len(words); {
		d, used := dateAt(words, i, today)
		if used == 0 {
			i++
			continue
		}
		found = append(found, d)
		i += used
	}
	if len(found) == 0 {
		return time.Time{}, false
	}
	for _, d := range found[1:] {
		if !d.Equal(found[0]) {
			return time.Time{}, false
		}
	}
	return found[0], true
}

// relativeDays are days named relative to today.
var relativeDays = map[string]int{"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}

func dateAt(words []string, i int, today time.Time) (time.Time, int) {
	w := words[i]
	if n, ok := relativeDays[w]; ok {
		return today.AddDate(0, 0, n), 1
	}
	if w == "day" && i+2 < len(words) && words[i+1] == "after" && words[i+2] == "tomorrow" {
		return today.AddDate(0, 0, 2), 3
	}
	if w == "in" && i+1 < len(words) {
		if d, used := inAt(words, i+1, today); used > 0 {
			return d, used + 1
		}
	}
	if d, used := weekdayAt(words, i, today); used > 0 {
		return d, used
	}
	return monthDayAt(words, i, today)
}

// weekdayAt reads "friday", "this friday", "next friday", "coming friday".
func weekdayAt(words []string, i int, today time.Time) (time.Time, int) {
	if wd, ok := weekdays[words[i]]; ok {
		return nextWeekday(today, wd, false), 1
	}
	if (words[i] == "this" || words[i] == "next" || words[i] == "coming") && i+1 < len(words) {
		if wd, ok := weekdays[words[i+1]]; ok {
			return nextWeekday(today, wd, words[i] == "this"), 2
		}
	}
	return time.Time{}, 0
}

// inAt reads "N days" or "N weeks" (after "in").
func inAt(words []string, i int, today time.Time) (time.Time, int) {
	if words[i] == "a" && i+1 < len(words) {
		switch words[i+1] {
		case "day":
			return today.AddDate(0, 0, 1), 2
		case "week":
			return today.AddDate(0, 0, 7), 2
		}
		return time.Time{}, 0
	}
	n, used := numberAt(words, i)
	if used == 0 || n != float64(int(n)) || n < 0 || n > 366 || i+used >= len(words) {
		return time.Time{}, 0
	}
	switch words[i+used] {
	case "day", "days":
		return today.AddDate(0, 0, int(n)), used + 1
	case "week", "weeks":
		return today.AddDate(0, 0, 7*int(n)), used + 1
	}
	return time.Time{}, 0
}

// nextWeekday is the soonest wd after today, or today itself when
// includeToday is set.
func nextWeekday(today time.Time, wd time.Weekday, includeToday bool) time.Time {
	days := (int(wd) - int(today.Weekday()) + 7) % 7
	if days == 0 && !includeToday {
		days = 7
	}
	return today.AddDate(0, 0, days)
}

var isoDates = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)

// monthDayAt reads "<month> [the] <day> [year]" or "[the] <day> of <month>
// [year]".
func monthDayAt(words []string, i int, today time.Time) (time.Time, int) {
	start := i
	if m, ok := months[words[i]]; ok {
		i++
		if i < len(words) && words[i] == "the" {
			i++
		}
		day, used := dayAt(words, i)
		if used == 0 {
			return time.Time{}, 0
		}
		i += used
		return withYear(words, i, start, today, m, day)
	}
	if words[i] == "the" {
		i++
	}
	day, used := dayAt(words, i)
	if used == 0 || i+used+1 >= len(words) || words[i+used] != "of" {
		return time.Time{}, 0
	}
	m, ok := months[words[i+used+1]]
	if !ok {
		return time.Time{}, 0
	}
	return withYear(words, i+used+2, start, today, m, day)
}

// withYear completes a month and day with the year said at words[i], or the
// next such day on or after today. An impossible day (february thirtieth)
// is no date.
func withYear(words []string, i, start int, today time.Time, m time.Month, day int) (time.Time, int) {
	year := today.Year()
	explicit := false
	if i < len(words) && len(words[i]) == 4 && allDigits(words[i]) {
		year, _ = strconv.Atoi(words[i])
		explicit = true
		i++
	}
	d := time.Date(year, m, day, 0, 0, 0, 0, today.Location())
	if d.Day() != day {
		return time.Time{}, 0
	}
	if !explicit && d.Before(today) {
		d = time.Date(year+1, m, day, 0, 0, 0, 0, today.Location())
		if d.Day() != day {
			return time.Time{}, 0
		}
	}
	return d, i - start
}

// dayAt reads a day of the month: "third", "twenty third", "3rd", "3",
// "thirty first", "twenty".
func dayAt(words []string, i int) (int, int) {
	if i >= len(words) {
		return 0, 0
	}
	if allDigits(words[i]) && len(words[i]) <= 2 {
		n, _ := strconv.Atoi(words[i])
		used := 1
		if i+1 < len(words) && ordinalSuffix[words[i+1]] {
			used = 2
		}
		return validDay(n, used)
	}
	if n, ok := ordinals[words[i]]; ok {
		return n, 1
	}
	n, used := spokenAt(words, i)
	if used == 0 || n != float64(int(n)) {
		return 0, 0
	}
	// "twenty third": a tens word and an ordinal.
	if (n == 20 || n == 30) && i+used < len(words) {
		if o, ok := ordinals[words[i+used]]; ok && o < 10 {
			return validDay(int(n)+o, used+1)
		}
	}
	return validDay(int(n), used)
}

var ordinalSuffix = map[string]bool{"st": true, "nd": true, "rd": true, "th": true}

func validDay(n, used int) (int, int) {
	if n < 1 || n > 31 {
		return 0, 0
	}
	return n, used
}

// Clock is a time of day.
type Clock struct {
	Hour, Minute int
}

// String is the clock as HH:MM.
func (c Clock) String() string {
	return pad2(c.Hour) + ":" + pad2(c.Minute)
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// Time reads the one time of day in the text: "three thirty pm", "3:30 pm",
// "7pm", "seven o'clock", "half past three", "quarter to four", "noon",
// "midnight", "eight in the evening", "15:45". Without "am", "pm" or a part
// of the day the hour is taken as said (a 24-hour clock).
func Time(text string) (Clock, bool) {
	words := Words(text)
	var found []Clock
	for i := 0; i < len(words); {
		c, used := clockAt(words, i)
		if used == 0 {
			i++
			continue
		}
		found = append(found, c)
		i += used
	}
	if len(found) == 0 {
		return Clock{}, false
	}
	for _, c := range found[1:] {
		if c != found[0] {
			return Clock{}, false
		}
	}
	return found[0], true
}

// clockAt reads a time of day that starts at words[i].
func clockAt(words []string, i int) (Clock, int) {
	switch words[i] {
	case "noon", "midday":
		return Clock{12, 0}, 1
	case "midnight":
		return Clock{0, 0}, 1
	}
	if c, used := pastTo(words, i); used > 0 {
		return c, used
	}
	hour, minute, used, ok := hourMinute(words, i)
	if !ok {
		return Clock{}, 0
	}
	meridiem, mused := meridiemAt(words, i+used)
	// A bare number ("four") is a time only when something says so: "at",
	// "pm", "o'clock" or minutes.
	if mused == 0 && used == 1 && !strings.Contains(words[i], ":") && (i == 0 || words[i-1] != "at") {
		return Clock{}, 0
	}
	h, ok := applyMeridiem(hour, meridiem)
	if !ok {
		return Clock{}, 0
	}
	return Clock{h, minute}, used + mused
}

// meridiemAt reads what follows an hour: "am", "pm", "o'clock" (perhaps
// followed by am or pm), "in the evening". It returns am, pm or "" and how
// many words it took.
func meridiemAt(words []string, i int) (string, int) {
	start := i
	meridiem := ""
	if i < len(words) && words[i] == "oclock" {
		i++
	}
	if i < len(words) && (words[i] == "am" || words[i] == "pm") {
		meridiem = words[i]
		i++
	}
	if m, used := partOfDay(words, i); used > 0 {
		meridiem = m
		i += used
	}
	return meridiem, i - start
}

// hourMinute reads "3:30", "3", "three", "three thirty", "three oh five",
// "three fifteen".
func hourMinute(words []string, i int) (hour, minute, used int, ok bool) {
	w := words[i]
	if h, m, found := strings.Cut(w, ":"); found && allDigits(h) && allDigits(m) && len(m) == 2 {
		hour, _ = strconv.Atoi(h)
		minute, _ = strconv.Atoi(m)
		return hour, minute, 1, hour < 24 && minute < 60
	}
	if allDigits(w) && len(w) <= 2 {
		hour, _ = strconv.Atoi(w)
		return hour, 0, 1, hour < 24
	}
	kind, v := kindOf(w)
	if (kind != "ones" && kind != "teen") || v < 1 || v > 12 {
		return 0, 0, 0, false
	}
	minute, used = minutesAt(words, i+1)
	return int(v), minute, 1 + used, true
}

// minutesAt reads the minutes after a spoken hour: "thirty", "oh five",
// "fifteen", "forty five".
func minutesAt(words []string, i int) (int, int) {
	if i >= len(words) {
		return 0, 0
	}
	if words[i] == "oh" && i+1 < len(words) {
		if m, ok := ones[words[i+1]]; ok {
			return m, 2
		}
		return 0, 0
	}
	kind, _ := kindOf(words[i])
	if kind != "teen" && kind != "tens" {
		return 0, 0
	}
	n, used := spokenAt(words, i)
	if used == 0 || n >= 60 || n != float64(int(n)) {
		return 0, 0
	}
	return int(n), used
}

// pastTo reads "half past three", "quarter to four", "ten past six pm".
func pastTo(words []string, i int) (Clock, int) {
	start := i
	minutes, used := minutesBefore(words, i)
	if used == 0 {
		return Clock{}, 0
	}
	i += used
	if i+1 >= len(words) || (words[i] != "past" && words[i] != "to" && words[i] != "after") {
		return Clock{}, 0
	}
	to := words[i] == "to"
	hour, _, used, ok := hourMinute(words, i+1)
	if !ok || used != 1 || hour < 1 || hour > 12 {
		return Clock{}, 0
	}
	i += 1 + used
	meridiem, used := meridiemAt(words, i)
	i += used
	h, _ := applyMeridiem(hour, meridiem)
	if to {
		return Clock{(h + 23) % 24, 60 - minutes}, i - start
	}
	return Clock{h, minutes}, i - start
}

// minutesBefore reads the minutes of "half past", "a quarter to", "ten
// minutes past".
func minutesBefore(words []string, i int) (int, int) {
	switch {
	case words[i] == "half":
		return 30, 1
	case words[i] == "quarter":
		return 15, 1
	case words[i] == "a" && i+1 < len(words) && words[i+1] == "quarter":
		return 15, 2
	}
	n, used := numberAt(words, i)
	if used == 0 || n != float64(int(n)) || n < 1 || n > 30 {
		return 0, 0
	}
	if i+used < len(words) && (words[i+used] == "minutes" || words[i+used] == "minute") {
		used++
	}
	return int(n), used
}

// partOfDay reads "in the morning", "in the afternoon", "in the evening",
// "at night" as am or pm.
func partOfDay(words []string, i int) (string, int) {
	if i+2 < len(words) && words[i] == "in" && words[i+1] == "the" {
		switch words[i+2] {
		case "morning":
			return "am", 3
		case "afternoon", "evening":
			return "pm", 3
		}
	}
	if i+1 < len(words) && words[i] == "at" && words[i+1] == "night" {
		return "pm", 2
	}
	return "", 0
}

func applyMeridiem(hour int, meridiem string) (int, bool) {
	switch meridiem {
	case "":
		return hour, true
	case "am":
		if hour < 1 || hour > 12 {
			return 0, false
		}
		return hour % 12, true
	default:
		if hour < 1 || hour > 12 {
			return 0, false
		}
		return hour%12 + 12, true
	}
}
