#ifndef TIPSD_CLIBWEBSOCKETS_SHIM_H
#define TIPSD_CLIBWEBSOCKETS_SHIM_H
// libwebsockets (Debian's libwebsockets-dev 4.1, built with LWS_WITH_LIBUV and event-loop plugins; the libuv
// glue is the libwebsockets-evlib-uv package). Only what Swift cannot import is wrapped here.
#include <libwebsockets.h>

/// `LWS_PRE`: the headroom lws_write needs before a payload (a macro Swift cannot import).
static inline size_t tipsd_lws_pre(void) { return LWS_PRE; }

/// Routes lws's own log lines (warnings and errors only) to `emit`; `lws_set_log_level` is variadic-free but its
/// level bits are macros.
static inline void tipsd_lws_set_logging(void (*emit)(int level, const char *line)) {
  lws_set_log_level(LLL_ERR | LLL_WARN, emit);
}

/// Whether a log level is an error (else a warning).
static inline int tipsd_lws_is_error(int level) { return (level & LLL_ERR) != 0; }

#endif
