/*
 * The durable floor for `make bench`: a minimal libuv server on a Unix socket doing the least work tipsd's
 * durability contract needs for an events/donate. For every newline-terminated request it finds the request's
 * "id", appends 8 bytes (the donation's instant) to the turn's one packed row, and stages a reply; once per loop
 * turn (a uv_check handle, as tipsd's end of turn) it inserts that row in one transaction (SQLite WAL,
 * synchronous=NORMAL, 1 KiB pages — tipsd's settings) and only after COMMIT hands the replies to the kernel, one
 * write per connection. No JSON parsing beyond the id, no engine, no state beyond a counter.
 *
 * usage: uv_durable_floor SOCKET_PATH DATABASE_PATH
 */
#include <sqlite3.h>
#include <stdint.h>
#include <time.h>

#include "uv_baseline.h"

typedef struct conn {
  uv_pipe_t pipe;
  baseline_line_t in; /* an incomplete line carried over between reads */
  char *out; /* replies staged this turn, written after COMMIT */
  size_t out_len, out_cap;
  int dirty;
  int closing;
  struct conn *next_dirty;
} conn_t;

typedef struct {
  uv_write_t req;
  char *data;
} write_req_t;

static sqlite3 *db;
static sqlite3_stmt *insert_row;
static sqlite3_stmt *begin_txn;
static sqlite3_stmt *commit_txn;
static unsigned char *row;  /* the turn's packed row: 8 bytes a donation */
static size_t row_len, row_cap;
static long long lifetime;  /* donations committed and staged */
static conn_t *dirty_head;

static void die(const char *what) {
  fprintf(stderr, "%s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
  exit(1);
}

static void on_close(uv_handle_t *handle) {
  conn_t *c = (conn_t *)handle;
  free(c->in.data);
  free(c->out);
  free(c);
}

static void on_write(uv_write_t *req, int status) {
  (void)status;
  write_req_t *w = (write_req_t *)req;
  free(w->data);
  free(w);
}

/* One request line: the id's raw JSON text (a number or a string), 8 bytes appended to the row, a reply staged. */
static void handle_line(void *context, const char *line, size_t len) {
  conn_t *c = context;
  static const char key[] = "\"id\":";
  const char *id = NULL;
  size_t id_len = 0;
  /* The envelope's id is the first "id": at depth 1; the bench's requests put it before params. */
  for (size_t i = 0; i + sizeof(key) - 1 <= len; i++) {
    if (line[i] == '"' && memcmp(line + i, key, sizeof(key) - 1) == 0) {
      id = line + i + sizeof(key) - 1;
      const char *end = id;
      const char *limit = line + len;
      if (end < limit && *end == '"') {
        end++;
        while (end < limit && *end != '"') end++;
        if (end < limit) end++;
      } else {
        while (end < limit && *end != ',' && *end != '}') end++;
      }
      id_len = (size_t)(end - id);
      break;
    }
  }
  if (!id) {
    id = "null";
    id_len = 4;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  double at = (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
  baseline_grow((char **)&row, &row_cap, row_len + 8);
  memcpy(row + row_len, &at, 8);
  row_len += 8;
  lifetime++;
  baseline_grow(&c->out, &c->out_cap, c->out_len + id_len + 96);
  char *o = c->out + c->out_len;
  memcpy(o, "{\"jsonrpc\":\"2.0\",\"id\":", 22);
  o += 22;
  memcpy(o, id, id_len);
  o += id_len;
  o += sprintf(o, ",\"result\":{\"count\":%lld,\"lifetime\":%lld}}\n", lifetime, lifetime);
  c->out_len = (size_t)(o - c->out);
  if (!c->dirty) {
    c->dirty = 1;
    c->next_dirty = dirty_head;
    dirty_head = c;
  }
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  conn_t *c = (conn_t *)stream;
  if (nread < 0) {
    uv_read_stop(stream);
    c->closing = 1;
    if (!c->dirty) uv_close((uv_handle_t *)stream, on_close);
    return;
  }
  baseline_feed_lines(&c->in, buf->base, (size_t)nread, handle_line, c);
}

static void step(sqlite3_stmt *stmt, const char *what) {
  if (sqlite3_step(stmt) != SQLITE_DONE) die(what);
  sqlite3_reset(stmt);
}

/* End of turn: commit the packed row, then hand every staged reply to the kernel. */
static void on_check(uv_check_t *handle) {
  (void)handle;
  if (row_len) {
    step(begin_txn, "BEGIN");
    sqlite3_bind_int64(insert_row, 1, lifetime);
    sqlite3_bind_blob(insert_row, 2, row, (int)row_len, SQLITE_STATIC);
    step(insert_row, "INSERT");
    step(commit_txn, "COMMIT");
    row_len = 0;
  }
  while (dirty_head) {
    conn_t *c = dirty_head;
    dirty_head = c->next_dirty;
    c->dirty = 0;
    if (c->out_len) {
      write_req_t *w = malloc(sizeof(write_req_t));
      w->data = c->out;
      uv_buf_t out = uv_buf_init(c->out, (unsigned)c->out_len);
      c->out = NULL;
      c->out_cap = 0;
      c->out_len = 0;
      if (!c->closing) {
        uv_write(&w->req, (uv_stream_t *)&c->pipe, &out, 1, on_write);
      } else {
        free(w->data);
        free(w);
      }
    }
    if (c->closing) uv_close((uv_handle_t *)&c->pipe, on_close);
  }
}

static void on_connection(uv_stream_t *server, int status) {
  if (status < 0) return;
  conn_t *c = calloc(1, sizeof(conn_t));
  uv_pipe_init(server->loop, &c->pipe, 0);
  if (uv_accept(server, (uv_stream_t *)&c->pipe) == 0) {
    uv_read_start((uv_stream_t *)&c->pipe, baseline_alloc_slab, on_read);
  } else {
    uv_close((uv_handle_t *)&c->pipe, on_close);
  }
}

static void exec(const char *sql) {
  char *error = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &error) != SQLITE_OK) {
    fprintf(stderr, "%s: %s\n", sql, error ? error : "?");
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SOCKET_PATH DATABASE_PATH\n", argv[0]);
    return 2;
  }
  if (sqlite3_open(argv[2], &db) != SQLITE_OK) die(argv[2]);
  exec("PRAGMA page_size = 1024");
  exec("PRAGMA journal_mode = WAL");
  exec("PRAGMA synchronous = NORMAL");
  exec("CREATE TABLE IF NOT EXISTS chunks (id INTEGER PRIMARY KEY, end_seq INTEGER NOT NULL, data BLOB NOT NULL)");
  if (sqlite3_prepare_v2(db, "INSERT INTO chunks (end_seq, data) VALUES (?1, ?2)", -1, &insert_row, NULL) != SQLITE_OK)
    die("prepare INSERT");
  if (sqlite3_prepare_v2(db, "BEGIN", -1, &begin_txn, NULL) != SQLITE_OK) die("prepare BEGIN");
  if (sqlite3_prepare_v2(db, "COMMIT", -1, &commit_txn, NULL) != SQLITE_OK) die("prepare COMMIT");

  uv_loop_t *loop = uv_default_loop();
  uv_check_t check;
  uv_check_init(loop, &check);
  uv_check_start(&check, on_check);
  uv_unref((uv_handle_t *)&check);
  uv_pipe_t server;
  if (baseline_listen_unix(loop, &server, argv[1], 128, on_connection) != 0) return 1;
  return uv_run(loop, UV_RUN_DEFAULT);
}
