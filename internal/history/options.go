package history

import (
	"flag"
)

// Options say which history store the process opens.
type Options struct {
	// DSN is the store's address (empty: the process's default, env
	// SWITCHBOARD_HISTORY_DSN, else an SQLite file; see Open).
	DSN string
}

// DefaultOptions are the binary's: the address is resolved by the process
// (it depends on --dev and the environment).
var DefaultOptions = Options{}

// BindFlags binds --history-dsn to fs, defaulting to o's value.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.DSN, "history-dsn", o.DSN, "The history store of calls: postgres://user@host/db?sslmode=verify-full (PostgreSQL, for production and several replicas; the password from env PGPASSWORD or the DSN) or sqlite:PATH (embedded, one replica). Default sqlite:/var/lib/switchboard/history/history.db (sqlite:<dev-dir>/history.db with --dev). Env SWITCHBOARD_HISTORY_DSN.")
}
