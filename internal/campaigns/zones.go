package campaigns

import (
	"fmt"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/switchboard-dev/switchboard/internal/phone"
)

// ZonesOf returns the time zones a contact's calling window is evaluated
// in: tz when given (an IANA name), else every zone the number's prefix
// maps to (package phone), else an error: calling hours cannot be
// honored blind.
func ZonesOf(e164, tz string) ([]string, error) {
	if tz != "" {
		if _, err := loadZone(tz); err != nil {
			return nil, fmt.Errorf("unknown time zone %q: use an IANA name such as America/New_York", tz)
		}
		return []string{tz}, nil
	}
	num, err := phonenumbers.Parse(e164, "")
	if err != nil {
		return nil, fmt.Errorf("%s is not a valid phone number", e164)
	}
	return zonesOfNumber(num, e164)
}

// zonesOfNumber is the zones of a parsed number (e164 names it in errors).
func zonesOfNumber(num *phonenumbers.PhoneNumber, e164 string) ([]string, error) {
	zones, err := phone.NumberZones(num, e164)
	if err != nil {
		return nil, fmt.Errorf("%w: give the contact a timezone", err)
	}
	return zones, nil
}

var loadZone = phone.LoadZone

// locations loads zones; a name that no longer loads (the zone database
// changed) is left out rather than blocking the contact forever.
func locations(names []string) []*time.Location {
	zs := make([]*time.Location, 0, len(names))
	for _, n := range names {
		if z, err := loadZone(n); err == nil {
			zs = append(zs, z)
		}
	}
	return zs
}
