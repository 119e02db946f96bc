#ifndef TIPSD_CSQLITE_SHIM_H
#define TIPSD_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot import it.
static inline sqlite3_destructor_type tipsd_sqlite_transient(void) { return SQLITE_TRANSIENT; }
/// sqlite3_config is variadic. Turns off SQLite's memory statistics (a global mutex and bookkeeping on every
/// allocation; tipsd never reads them). Only effective before SQLite initializes; returns SQLITE_MISUSE after.
static inline int tipsd_sqlite_disable_memstatus(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

/// sqlite3_db_config is variadic. With `on` set, closing the connection does not checkpoint the WAL into the
/// database file (nor remove the WAL): used until a datastore file has been validated, so that refusing a damaged
/// file never writes to it.
static inline int tipsd_sqlite_no_checkpoint_on_close(sqlite3 *db, int on) {
  return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, on, (int *)0);
}
#endif
