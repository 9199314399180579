package history

// FailLast makes w's last write fail (a table that does not exist), so a
// test can see that a transaction stores all of its writes or none.
func FailLast(w *Writes) {
	w.stmts = append(w.stmts, statement{"INSERT INTO no_such_table (x) VALUES ($1)", []any{1}})
}
