/*
 * What make bench's libuv baselines share (uv_fixed_reply.c, uv_durable_floor.c, hosted_node_floor.c): the read
 * slab, the Unix socket they listen on, a buffer that grows, and newline framing with a line carried over between
 * reads. Each function is static inline and small, so every baseline stays one translation unit doing the least work.
 */
#ifndef TIPSD_UV_BASELINE_H
#define TIPSD_UV_BASELINE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

/* Every read lands in one static slab: the loop is single-threaded and each read is consumed before the next. */
static inline void baseline_alloc_slab(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  (void)handle;
  (void)suggested;
  static char slab[65536];
  buf->base = slab;
  buf->len = sizeof(slab);
}

/* `*buf` (of capacity `*cap`) made to hold at least `need` bytes, doubling from 4 KiB; exits if memory runs out. */
static inline void baseline_grow(char **buf, size_t *cap, size_t need) {
  if (need <= *cap) return;
  size_t next = *cap ? *cap : 4096;
  while (next < need) next *= 2;
  *buf = realloc(*buf, next);
  if (!*buf) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  *cap = next;
}

/* Listens on the Unix socket `path` (replacing a stale file); prints why and returns non-zero when it cannot. */
static inline int baseline_listen_unix(uv_loop_t *loop, uv_pipe_t *server, const char *path, int backlog,
                                       uv_connection_cb on_connection) {
  uv_pipe_init(loop, server, 0);
  unlink(path);
  int rc = uv_pipe_bind(server, path);
  if (rc == 0) rc = uv_listen((uv_stream_t *)server, backlog, on_connection);
  if (rc != 0) fprintf(stderr, "%s: %s\n", path, uv_strerror(rc));
  return rc;
}

/* A connection's unfinished line, carried over between reads. */
typedef struct {
  char *data;
  size_t len, cap;
} baseline_line_t;

/* Calls `line` for each newline-terminated line of `data` (without its newline), the carried-over part first, and
 * keeps what follows the last newline for the next read. */
static inline void baseline_feed_lines(baseline_line_t *carry, const char *data, size_t n,
                                       void (*line)(void *context, const char *text, size_t len), void *context) {
  const char *p = data, *end = data + n;
  if (carry->len) {
    const char *nl = memchr(p, '\n', n);
    size_t part = nl ? (size_t)(nl - p) : n;
    baseline_grow(&carry->data, &carry->cap, carry->len + part);
    memcpy(carry->data + carry->len, p, part);
    carry->len += part;
    if (!nl) return;
    line(context, carry->data, carry->len);
    carry->len = 0;
    p = nl + 1;
  }
  for (const char *nl; (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) line(context, p, (size_t)(nl - p));
  if (p < end) {
    baseline_grow(&carry->data, &carry->cap, (size_t)(end - p));
    memcpy(carry->data, p, (size_t)(end - p));
    carry->len = (size_t)(end - p);
  }
}

#endif
