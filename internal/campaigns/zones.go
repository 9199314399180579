package campaigns

import (
	"fmt"
	"sync"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// ZonesOf returns the time zones a contact's calling window is evaluated
// in: tz when given (an IANA name), else every zone the number's prefix
// maps to (github.com/nyaruka/phonenumbers' table), else an error: calling
// hours cannot be honored blind.
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
	zones, err := phonenumbers.GetTimezonesForNumber(num)
	if err != nil || len(zones) == 0 || (len(zones) == 1 && zones[0] == phonenumbers.UNKNOWN_TIMEZONE) {
		return nil, fmt.Errorf("the time zone of %s is unknown: give the contact a timezone", e164)
	}
	return zones, nil
}

// zoneCache holds loaded zones: LoadLocation reads and parses a file each
// time, and a campaign's contacts share a few dozen zones.
var zoneCache sync.Map // name -> *time.Location

func loadZone(name string) (*time.Location, error) {
	if z, ok := zoneCache.Load(name); ok {
		return z.(*time.Location), nil
	}
	z, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zoneCache.Store(name, z)
	return z, nil
}

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
