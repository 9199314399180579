package history

import (
	"context"
	"errors"
	"net/url"
	"strings"
)

// Open connects to the store at dsn, whose form picks the backend:
// postgres://... or postgresql://... for PostgreSQL, sqlite:PATH for an
// embedded SQLite file (sqlite::memory: for a throwaway one). It applies
// any pending migrations before returning.
func Open(ctx context.Context, dsn string) (Store, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return openPostgres(ctx, dsn)
	case strings.HasPrefix(dsn, "sqlite:") && len(dsn) > len("sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(dsn, "sqlite:"))
	default:
		// The address itself is left out of the message: it may hold a password.
		return nil, errors.New("history: unsupported store address: expected postgres://..., " +
			"postgresql://..., or sqlite:PATH (for example sqlite:.dev/history.db, or sqlite::memory:)")
	}
}

// Describe names the store at dsn for logs: the backend and where it is,
// without user name or password.
func Describe(dsn string) string {
	if strings.HasPrefix(dsn, "sqlite:") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres (unparsable address)"
	}
	return "postgres://" + u.Host + u.Path
}
