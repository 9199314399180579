package phone

import (
	"fmt"
	"sync"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// Zones returns every zone the number's prefix maps to, in the table's
// order; an error when the number does not parse or maps to none.
func Zones(e164 string) ([]string, error) {
	num, err := phonenumbers.Parse(e164, "")
	if err != nil {
		return nil, fmt.Errorf("%s is not a valid phone number", e164)
	}
	return NumberZones(num, e164)
}

// NumberZones is Zones for a parsed number (e164 names it in errors).
func NumberZones(num *phonenumbers.PhoneNumber, e164 string) ([]string, error) {
	zones, err := phonenumbers.GetTimezonesForNumber(num)
	if err != nil || len(zones) == 0 || (len(zones) == 1 && zones[0] == phonenumbers.UNKNOWN_TIMEZONE) {
		return nil, fmt.Errorf("the time zone of %s is unknown", e164)
	}
	return zones, nil
}

// cache holds loaded zones: LoadLocation reads and parses a file each
// time, and calls share a few dozen zones.
var cache sync.Map // name -> *time.Location

// LoadZone is time.LoadLocation, cached.
func LoadZone(name string) (*time.Location, error) {
	if z, ok := cache.Load(name); ok {
		return z.(*time.Location), nil
	}
	z, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	cache.Store(name, z)
	return z, nil
}

// CalleeZone is the time zone the dates a callee says are read in ("tomorrow"
// is tomorrow where they are): the zone their number's prefix maps to, the
// first listed where it maps to several (a country or area code across
// zones), and UTC where it maps to none.
func CalleeZone(e164 string) *time.Location {
	zones, err := Zones(e164)
	if err != nil {
		return time.UTC
	}
	loc, err := LoadZone(zones[0])
	if err != nil {
		return time.UTC
	}
	return loc
}
