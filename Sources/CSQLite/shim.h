#ifndef TIPSD_CSQLITE_SHIM_H
#define TIPSD_CSQLITE_SHIM_H
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot import it.
static inline sqlite3_destructor_type tipsd_sqlite_transient(void) { return SQLITE_TRANSIENT; }
/// sqlite3_config is variadic.
#endif
