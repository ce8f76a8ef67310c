#ifndef QSQLITE_H
#define QSQLITE_H

/// Hardens a connection that reads a database file an untrusted account wrote (SQLite's "Defense
/// Against The Dark Arts"): defensive mode (no writable_schema, no shadow-table writes, no
/// journal games), views and triggers switched off (a crafted `downloads` view cannot run a query
/// of its own), no trusted schema, no extension loading. `connection` is a `sqlite3 *`.
/// Returns 0, or the first SQLite error code.
int qsqlite_harden(void *connection);

#endif
