package history

import (
	"slices"
	"testing"
)

// TestMigrationsMatchAcrossDialects: a migration added for one database and
// forgotten for the other would leave the two stores at the same version
// with different schemas.
func TestMigrationsMatchAcrossDialects(t *testing.T) {
	names := func(dialect string) []string {
		all, err := loadMigrations(dialect)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, m := range all {
			n = append(n, m.name)
		}
		return n
	}
	sqlite, postgres := names("sqlite"), names("postgres")
	if len(sqlite) == 0 || !slices.Equal(sqlite, postgres) {
		t.Fatalf("sqlite migrations %v, postgres migrations %v: want the same files in both", sqlite, postgres)
	}
}
