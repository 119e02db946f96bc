/*
 * The practical limit for `make bench`: a minimal libuv server on a Unix socket that answers every
 * newline-terminated line with one fixed reply. No parsing, no state, no durability — what tipsd is
 * compared against.
 *
 * usage: uv_fixed_reply SOCKET_PATH [TCP_PORT]
 *
 * With TCP_PORT it also listens on 127.0.0.1:TCP_PORT with the same handlers (make bench's connection flood on
 * TCP: the peer to tipsd's --listen, which floods there while a healthy client stays on the Unix socket).
 */
#include <sys/socket.h>

#include "uv_baseline.h"

static const char REPLY[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"count\":1}}\n";

typedef struct {
  uv_write_t req;
  char *data;
} write_req_t;

static void on_close(uv_handle_t *handle) { free(handle); }

static void on_write(uv_write_t *req, int status) {
  (void)status;
  write_req_t *w = (write_req_t *)req;
  free(w->data);
  free(w);
}

static void on_read(uv_stream_t *client, ssize_t nread, const uv_buf_t *buf) {
  if (nread < 0) {
    uv_close((uv_handle_t *)client, on_close);
    return;
  }
  size_t lines = 0;
  for (ssize_t i = 0; i < nread; i++)
    if (buf->base[i] == '\n') lines++;
  if (lines == 0) return;
  size_t len = lines * (sizeof(REPLY) - 1);
  write_req_t *w = malloc(sizeof(write_req_t));
  w->data = malloc(len);
  for (size_t i = 0; i < lines; i++) memcpy(w->data + i * (sizeof(REPLY) - 1), REPLY, sizeof(REPLY) - 1);
  uv_buf_t out = uv_buf_init(w->data, (unsigned)len);
  uv_write(&w->req, client, &out, 1, on_write);
}

static void on_connection(uv_stream_t *server, int status) {
  if (status < 0) return;
  uv_stream_t *client;
  if (server->type == UV_TCP) {
    client = malloc(sizeof(uv_tcp_t));
    uv_tcp_init(server->loop, (uv_tcp_t *)client);
  } else {
    client = malloc(sizeof(uv_pipe_t));
    uv_pipe_init(server->loop, (uv_pipe_t *)client, 0);
  }
  if (uv_accept(server, (uv_stream_t *)client) == 0) {
    uv_read_start((uv_stream_t *)client, baseline_alloc_slab, on_read);
  } else {
    uv_close((uv_handle_t *)client, on_close);
  }
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s SOCKET_PATH [TCP_PORT]\n", argv[0]);
    return 2;
  }
  uv_loop_t *loop = uv_default_loop();
  uv_pipe_t server;
  if (baseline_listen_unix(loop, &server, argv[1], 128, on_connection) != 0) return 1;
  uv_tcp_t tcp;
  if (argc == 3) {
    struct sockaddr_in address;
    uv_tcp_init(loop, &tcp);
    uv_ip4_addr("127.0.0.1", atoi(argv[2]), &address);
    int rc = uv_tcp_bind(&tcp, (const struct sockaddr *)&address, 0);
    /* The backlog libwebsockets gives tipsd's --listen socket (SOMAXCONN, 4096 here): under a connection flood both
       servers then face the same queue; with 128 the kernel drops the flood's SYNs and the baseline sees a trickle. */
    if (rc == 0) rc = uv_listen((uv_stream_t *)&tcp, SOMAXCONN, on_connection);
    if (rc != 0) {
      fprintf(stderr, "127.0.0.1:%s: %s\n", argv[2], uv_strerror(rc));
      return 1;
    }
  }
  return uv_run(loop, UV_RUN_DEFAULT);
}
