package history

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// migrationFiles holds one folder per dialect. Adding a migration is adding
// the next numbered file (0002_deliveries.sql, ...) to both folders.
//
//go:embed migrations
var migrationFiles embed.FS

type migration struct {
	version int64
	name    string
	sql     string
}

// recordMigration runs in the migration's own transaction, so a migration is
// either applied and recorded or neither.
const recordMigration = `INSERT INTO schema_migrations (version) VALUES ($1)`

// readMigrations is every version recorded, in order.
const readMigrations = `SELECT version FROM schema_migrations ORDER BY version`

// loadMigrations returns dialect's migrations in version order. A file's
// version is the number its name starts with; versions run 1, 2, 3, ... so
// that the versions a database records say exactly which files it ran.
func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var all []migration
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("history: migration %s/%s is not named NNNN_name.sql", dialect, e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		all = append(all, migration{version: v, name: e.Name(), sql: string(body)})
	}
	for i, m := range all { // ReadDir sorts by name, hence by zero-padded version
		if m.version != int64(i+1) {
			return nil, fmt.Errorf("history: migration %s/%s: expected version %d", dialect, m.name, i+1)
		}
	}
	return all, nil
}

// migrateAll loads dialect's migrations and applies them with migrateOne,
// one transaction each, until migrateOne reports the schema current. Each
// dialect's migrateOne says how it keeps two processes from applying one
// migration twice.
func migrateAll(dialect string, migrateOne func([]migration) (done bool, err error)) error {
	known, err := loadMigrations(dialect)
	if err != nil {
		return err
	}
	for {
		done, err := migrateOne(known)
		if err != nil || done {
			return err
		}
	}
}

// nextMigration compares the versions a database records with the known
// migrations and returns the next one to apply, or nil when the schema is
// current. A database migrated by a newer Switchboard is refused rather than
// used: this binary would misread its tables.
func nextMigration(recorded []int64, known []migration) (*migration, error) {
	if n := len(recorded); n > 0 && recorded[n-1] > int64(len(known)) {
		return nil, fmt.Errorf("history store schema is at version %d, newer than this Switchboard (knows up to %d): "+
			"upgrade Switchboard or point it at another database", recorded[n-1], len(known))
	}
	for i, v := range recorded {
		if v != int64(i+1) {
			return nil, fmt.Errorf("history store migration table schema_migrations is corrupt: "+
				"it records versions %v, expected 1 to %d in sequence", recorded, len(recorded))
		}
	}
	if len(recorded) == len(known) {
		return nil, nil
	}
	return &known[len(recorded)], nil
}

// unreadableMigrations wraps a failure to read schema_migrations.
func unreadableMigrations(err error) error {
	return fmt.Errorf("history store migration table schema_migrations is unreadable: %w", err)
}
