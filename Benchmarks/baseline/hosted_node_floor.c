/*
 * The hosted node's floor for `make bench` (#47): a minimal libuv server doing the least work a hosted node does for
 * an events/donate, with the node's group commit, so that the node's CPU a donation has something to be measured
 * against. Sessions arrive on a Unix socket as the load generator's (Benchmarks/baseline/hosted_load.c): an
 * `initialize` is answered at once (no token is checked: sign-in is outside the timed window), and the session's
 * account is the order it connected in. For every other newline-terminated request it finds the request's "id",
 * stages its account, a seq and the operation text a node stores for a donation (OP_TEXT, the bench copies one a
 * node wrote), and stages the reply. At the end of a loop turn (a uv_check handle, as the node's end of turn), when
 * no commit is in flight, every staged donation goes to PostgreSQL as one statement on one connection (libpq,
 * non-blocking): the accounts' cursors bumped in one upsert, their operation rows in one insert, arrays in binary
 * format; the turns that end while it is in flight wait and go together when it is answered (the node's
 * `--commit-pipeline 1`). Only after PostgreSQL answers are the replies handed to the kernel, one write a session.
 * No JSON parsing beyond the id and the method, no engine, no history rows, no notifications, no idempotency keys.
 *
 * usage: hosted_node_floor SOCKET_PATH CONNINFO OP_TEXT
 * PostgreSQL needs floor_accounts (account text PRIMARY KEY, last_cursor bigint) and floor_ops (account, cursor,
 * device, seq, op) as scripts/bench-hosted creates them for its set-based floor.
 */
#define _GNU_SOURCE
#include <libpq-fe.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>

#include "uv_baseline.h"

typedef struct conn {
  uv_pipe_t pipe;
  char account[32];
  size_t account_len;
  baseline_line_t in; /* an incomplete line carried over between reads */
  char *out; /* replies waiting for their commit */
  size_t out_len, out_cap;
  long long batched; /* its donations in the next commit (0: not in it) */
  int committing;    /* in `sent` (the commit in flight's sessions) */
  int closing;
} conn_t;

typedef struct {
  char *data;
  size_t len, cap;
} buffer_t;

typedef struct {
  conn_t **items;
  size_t count, cap;
} conns_t;

typedef struct {
  conn_t *conn;
  long long seq, rank; /* rank: its place among its account's donations in the commit, from 1 */
} donation_t;

static PGconn *pg;
static uv_poll_t pg_poll;
static const char *op_text;
static size_t op_len;
static long long next_seq = 1, next_account;
static donation_t *donations; /* the next commit's */
static size_t donation_count, donation_cap;
static conns_t staged, sent; /* the next commit's sessions, the commit in flight's */
static buffer_t params[6];   /* the commit's arrays, in PostgreSQL's binary format */
static int in_flight;
/* The accounts' cursors bumped in one upsert (in account order, as a node does), their operation rows in one
 * insert: $1 the accounts, $2 their donations in the commit; $3-$6 each donation's account, cursor offset from the
 * account's new cursor (0 for its last), seq and operation text. */
static const char *statement =
    "WITH bumped AS (INSERT INTO floor_accounts AS f (account, last_cursor)"
    " SELECT a, k FROM unnest($1::text[], $2::bigint[]) AS u(a, k) ORDER BY a"
    " ON CONFLICT (account) DO UPDATE SET last_cursor = f.last_cursor + excluded.last_cursor"
    " RETURNING f.account, f.last_cursor)"
    " INSERT INTO floor_ops (account, cursor, device, seq, op)"
    " SELECT o.a, b.last_cursor + o.off, 'floor', o.s, o.op"
    " FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::text[]) AS o(a, off, s, op)"
    " JOIN bumped b ON b.account = o.a";

static void die(const char *what) {
  fprintf(stderr, "hosted_node_floor: %s: %s\n", what, pg ? PQerrorMessage(pg) : "?");
  exit(1);
}

static void append(buffer_t *b, const void *data, size_t len) {
  baseline_grow(&b->data, &b->cap, b->len + len);
  memcpy(b->data + b->len, data, len);
  b->len += len;
}

static void append_u32(buffer_t *b, uint32_t v) {
  uint32_t be = htonl(v);
  append(b, &be, 4);
}

/* A one-dimensional array's header in PostgreSQL's binary format: no NULLs, element type `oid`. */
static void array_header(buffer_t *b, uint32_t oid, size_t count) {
  b->len = 0;
  append_u32(b, 1);
  append_u32(b, 0);
  append_u32(b, oid);
  append_u32(b, (uint32_t)count);
  append_u32(b, 1);
}

static void array_bytes(buffer_t *b, const char *data, size_t len) {
  append_u32(b, (uint32_t)len);
  append(b, data, len);
}

static void array_int8(buffer_t *b, long long v) {
  uint64_t u = (uint64_t)v;
  append_u32(b, 8);
  append_u32(b, (uint32_t)(u >> 32));
  append_u32(b, (uint32_t)u);
}

static void push(conns_t *list, conn_t *c) {
  if (list->count == list->cap) {
    list->cap = list->cap ? list->cap * 2 : 256;
    list->items = realloc(list->items, list->cap * sizeof *list->items);
    if (!list->items) die("realloc");
  }
  list->items[list->count++] = c;
}

static void on_close(uv_handle_t *handle) {
  conn_t *c = (conn_t *)handle;
  free(c->in.data);
  free(c->out);
  free(c);
}

static void reply(conn_t *c, const char *id, size_t id_len, const char *result) {
  baseline_grow(&c->out, &c->out_cap, c->out_len + id_len + strlen(result) + 64);
  char *o = c->out + c->out_len;
  memcpy(o, "{\"jsonrpc\":\"2.0\",\"id\":", 22);
  o += 22;
  memcpy(o, id, id_len);
  o += id_len;
  o += sprintf(o, ",\"result\":%s}\n", result);
  c->out_len = (size_t)(o - c->out);
}

/* Hands a session's waiting replies to the kernel (one write), or closes a session that hung up. */
static void flush_replies(conn_t *c) {
  if (c->out_len && !c->closing) {
    uv_buf_t out = uv_buf_init(c->out, (unsigned)c->out_len);
    int written = uv_try_write((uv_stream_t *)&c->pipe, &out, 1);
    if (written < 0 || (size_t)written < c->out_len) {
      /* The bench's replies fit a socket's buffer; a session that cannot take one is dropped. */
      c->closing = 1;
      uv_read_stop((uv_stream_t *)&c->pipe);
    }
  }
  c->out_len = 0;
  if (c->closing && !c->batched && !c->committing) uv_close((uv_handle_t *)&c->pipe, on_close);
}

/* One request line: the id's raw JSON text and the method; a donation is staged for the next commit. */
static void handle_line(void *context, const char *line, size_t len) {
  conn_t *c = context;
  static const char key[] = "\"id\":";
  const char *id = "null";
  size_t id_len = 4;
  const char *found = memmem(line, len, key, sizeof key - 1);
  if (found) {
    const char *p = found + sizeof key - 1, *limit = line + len;
    const char *end = p;
    if (end < limit && *end == '"') {
      end++;
      while (end < limit && *end != '"') end++;
      if (end < limit) end++;
    } else {
      while (end < limit && *end != ',' && *end != '}') end++;
    }
    id = p;
    id_len = (size_t)(end - p);
  }
  if (memmem(line, len, "\"method\":\"initialize\"", 21)) {
    c->account_len = (size_t)snprintf(c->account, sizeof c->account, "floor-%lld", next_account++);
    reply(c, id, id_len, "{\"protocolVersion\":\"1.2\"}");
    flush_replies(c);
    return;
  }
  if (donation_count == donation_cap) {
    donation_cap = donation_cap ? donation_cap * 2 : 1024;
    donations = realloc(donations, donation_cap * sizeof *donations);
    if (!donations) die("realloc");
  }
  if (!c->batched) push(&staged, c);
  donations[donation_count++] = (donation_t){.conn = c, .seq = next_seq++, .rank = ++c->batched};
  reply(c, id, id_len, "{\"count\":1}");
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  conn_t *c = (conn_t *)stream;
  if (nread < 0) {
    uv_read_stop(stream);
    c->closing = 1;
    if (!c->batched && !c->committing) uv_close((uv_handle_t *)stream, on_close);
    return;
  }
  baseline_feed_lines(&c->in, buf->base, (size_t)nread, handle_line, c);
}

static void on_pg(uv_poll_t *handle, int status, int events);

static void watch_pg(void) {
  uv_poll_start(&pg_poll, UV_READABLE | (PQflush(pg) == 1 ? UV_WRITABLE : 0), on_pg);
}

/* End of turn: the staged donations go as one commit when none is in flight. */
static void on_check(uv_check_t *handle) {
  (void)handle;
  if (in_flight || !donation_count) return;
  array_header(&params[0], 25, staged.count);
  array_header(&params[1], 20, staged.count);
  for (size_t i = 0; i < staged.count; i++) {
    conn_t *c = staged.items[i];
    array_bytes(&params[0], c->account, c->account_len);
    array_int8(&params[1], c->batched);
  }
  array_header(&params[2], 25, donation_count);
  array_header(&params[3], 20, donation_count);
  array_header(&params[4], 20, donation_count);
  array_header(&params[5], 25, donation_count);
  for (size_t i = 0; i < donation_count; i++) {
    donation_t *d = &donations[i];
    array_bytes(&params[2], d->conn->account, d->conn->account_len);
    array_int8(&params[3], d->rank - d->conn->batched);
    array_int8(&params[4], d->seq);
    array_bytes(&params[5], op_text, op_len);
  }
  const char *values[6];
  int lengths[6], formats[6];
  for (int i = 0; i < 6; i++) {
    values[i] = params[i].data;
    lengths[i] = (int)params[i].len;
    formats[i] = 1;
  }
  if (!PQsendQueryParams(pg, statement, 6, NULL, values, lengths, formats, 0)) die("send");
  in_flight = 1;
  donation_count = 0;
  conns_t swap = sent;
  sent = staged;
  staged = swap;
  staged.count = 0;
  for (size_t i = 0; i < sent.count; i++) {
    sent.items[i]->batched = 0;
    sent.items[i]->committing = 1;
  }
  watch_pg();
}

/* PostgreSQL answered: the commit's sessions get their replies. */
static void on_pg(uv_poll_t *handle, int status, int events) {
  (void)handle;
  if (status < 0) die("poll");
  if ((events & UV_WRITABLE) && PQflush(pg) < 0) die("flush");
  if (!(events & UV_READABLE)) return watch_pg();
  if (!PQconsumeInput(pg)) die("read");
  while (!PQisBusy(pg)) {
    PGresult *result = PQgetResult(pg);
    if (!result) {
      in_flight = 0;
      /* A session in the next commit as well keeps the replies staged after this commit's (none in the bench). */
      for (size_t i = 0; i < sent.count; i++) {
        conn_t *c = sent.items[i];
        c->committing = 0;
        if (!c->batched) flush_replies(c);
      }
      sent.count = 0;
      uv_poll_start(&pg_poll, UV_READABLE, on_pg);
      return;
    }
    if (PQresultStatus(result) != PGRES_COMMAND_OK) die(PQresultErrorMessage(result));
    PQclear(result);
  }
  watch_pg();
}

static void on_connection(uv_stream_t *server, int status) {
  if (status < 0) return;
  conn_t *c = calloc(1, sizeof(conn_t));
  if (!c) die("calloc");
  uv_pipe_init(server->loop, &c->pipe, 0);
  if (uv_accept(server, (uv_stream_t *)&c->pipe) == 0) {
    uv_read_start((uv_stream_t *)&c->pipe, baseline_alloc_slab, on_read);
  } else {
    uv_close((uv_handle_t *)&c->pipe, on_close);
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s SOCKET_PATH CONNINFO OP_TEXT\n", argv[0]);
    return 2;
  }
  op_text = argv[3];
  op_len = strlen(op_text);
  signal(SIGPIPE, SIG_IGN); /* a session that hung up is an EPIPE, not the end of the server */
  pg = PQconnectdb(argv[2]);
  if (PQstatus(pg) != CONNECTION_OK) die("connect");
  if (PQsetnonblocking(pg, 1) != 0) die("nonblocking");
  uv_loop_t *loop = uv_default_loop();
  uv_poll_init(loop, &pg_poll, PQsocket(pg));
  uv_check_t check;
  uv_check_init(loop, &check);
  uv_check_start(&check, on_check);
  uv_unref((uv_handle_t *)&check);
  uv_pipe_t server;
  if (baseline_listen_unix(loop, &server, argv[1], 1024, on_connection) != 0) return 1;
  return uv_run(loop, UV_RUN_DEFAULT);
}
