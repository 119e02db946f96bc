#ifndef TIPSD_CLIBPQ_SHIM_H
#define TIPSD_CLIBPQ_SHIM_H
// libpq, PostgreSQL's C client (Debian: libpq-dev; headers under /usr/include/postgresql, found through pkg-config).
// tipsd uses only its non-blocking API (PQconnectStart/PQconnectPoll, PQsendQueryParams, PQconsumeInput, PQisBusy,
// PQflush, PQsocket), driven by a uv_poll handle on the daemon's loop; nothing here blocks.
#include <libpq-fe.h>
#endif
