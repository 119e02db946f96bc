/*
 * make bench's load generator for a hosted node (issue #36): one session per account, signed in with its own JWT,
 * over the Unix socket (newline-framed JSON-RPC, `initialize` with `auth.token`) or over WebSocket (an HTTP upgrade
 * with `Authorization: Bearer`, then text frames), and WINDOW `events/donate` requests in flight over all of them:
 * each reply sends the next donation on the next session in turn, so every account donates and the node's group
 * commit sees many accounts a turn. After a second's warm-up it counts acknowledged donations for SECONDS.
 *
 * usage: hosted_load unix:PATH|ws:PORT TOKENS_FILE WINDOW SECONDS [EVENT]
 * prints: `donate_per_sec errors` on one line (errors: replies with an error, counted but not in the rate).
 *
 * With WINDOW `rate:N` and a TIP (usage: hosted_load ws:PORT TOKENS_FILE rate:N SECONDS EVENT TIP) it measures
 * notification latency instead (hosted.connections): every session observes TIP (`tips/observe`), then N sessions a
 * second, each in turn and at most once, donate EVENT; the time from a donation sent to that session's
 * `shouldDisplayChanged` is one sample. prints: `sessions samples p50_ms p99_ms max_ms missing`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  double sent;    /* rate mode: when its donation was sent (0: not yet) */
  double latency; /* rate mode: donation to shouldDisplayChanged, seconds (0: not yet) */
  int observed;   /* rate mode: tips/observe answered */
  int fd;
  int ready;    /* initialize answered */
  int upgraded; /* ws: the HTTP upgrade answered */
  char *in;
  size_t len, cap;
} session_t;

static int websocket;
static const char *event = "search.opened";
static long next_id = 1;
static double rate; /* rate mode: donations a second (0: the window mode) */
static const char *tip = "t0";

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      die("write");
    }
    data += n;
    len -= (size_t)n;
  }
}

/* A JSON-RPC message: a line, or a masked text frame (mask key zero: the payload as is). */
static void send_message(session_t *s, const char *text) {
  size_t len = strlen(text);
  char buffer[8192];
  if (!websocket) {
    memcpy(buffer, text, len);
    buffer[len] = '\n';
    write_all(s->fd, buffer, len + 1);
    return;
  }
  size_t header = 0;
  buffer[header++] = (char)0x81;
  if (len < 126) {
    buffer[header++] = (char)(0x80 | len);
  } else {
    buffer[header++] = (char)(0x80 | 126);
    buffer[header++] = (char)(len >> 8);
    buffer[header++] = (char)(len & 0xff);
  }
  memset(buffer + header, 0, 4);
  header += 4;
  memcpy(buffer + header, text, len);
  write_all(s->fd, buffer, header + len);
}

static void donate(session_t *s) {
  char text[256];
  snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"events/donate\",\"params\":{\"id\":\"%s\"}}",
           next_id++, event);
  send_message(s, text);
}

static int connect_to(const char *target) {
  int fd;
  if (strncmp(target, "unix:", 5) == 0) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, target + 5, sizeof address.sun_path - 1);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) die("connect");
  } else {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(target + 3))};
    address.sin_addr.s_addr = inet_addr("127.0.0.1");
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

/* The next complete message in s->in (a line, or an unmasked frame's payload), or NULL. */
static char *next_message(session_t *s, size_t *consumed, size_t *length) {
  if (!websocket) {
    char *newline = memchr(s->in, '\n', s->len);
    if (!newline) return NULL;
    *length = (size_t)(newline - s->in);
    *consumed = *length + 1;
    return s->in;
  }
  if (s->len < 2) return NULL;
  unsigned char *b = (unsigned char *)s->in;
  size_t header = 2, len = b[1] & 0x7f;
  if (len == 126) {
    if (s->len < 4) return NULL;
    len = ((size_t)b[2] << 8) | b[3];
    header = 4;
  } else if (len == 127) {
    if (s->len < 10) return NULL;
    len = 0;
    for (int i = 0; i < 8; i++) len = (len << 8) | b[2 + i];
    header = 10;
  }
  if (s->len < header + len) return NULL;
  *consumed = header + len;
  *length = len;
  return s->in + header;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: hosted_load unix:PATH|ws:PORT TOKENS_FILE WINDOW SECONDS [EVENT]\n");
    return 2;
  }
  const char *target = argv[1];
  websocket = strncmp(target, "ws:", 3) == 0;
  int window = atoi(argv[3]);
  if (strncmp(argv[3], "rate:", 5) == 0) rate = atof(argv[3] + 5);
  double seconds = atof(argv[4]);
  if (argc > 5) event = argv[5];
  if (argc > 6) tip = argv[6];

  FILE *file = fopen(argv[2], "r");
  if (!file) die(argv[2]);
  size_t count = 0, capacity = 1024;
  session_t *sessions = calloc(capacity, sizeof *sessions);
  char token[4096];
  int epoll = epoll_create1(0);
  while (fgets(token, sizeof token, file)) {
    token[strcspn(token, "\r\n")] = 0;
    if (!*token) continue;
    if (count == capacity) {
      capacity *= 2;
      sessions = realloc(sessions, capacity * sizeof *sessions);
      memset(sessions + count, 0, (capacity - count) * sizeof *sessions);
    }
    session_t *s = &sessions[count];
    s->fd = connect_to(target);
    s->cap = 65536;
    s->in = malloc(s->cap);
    char text[8192];
    if (websocket) {
      snprintf(text, sizeof text,
               "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
               "Authorization: Bearer %s\r\n\r\n",
               token);
      write_all(s->fd, text, strlen(text));
    } else {
      snprintf(text, sizeof text,
               "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"1.2\","
               "\"clientInfo\":{\"name\":\"hosted-load\"},\"auth\":{\"token\":\"%s\"}}}",
               token);
      send_message(s, text);
    }
    fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = count};
    if (epoll_ctl(epoll, EPOLL_CTL_ADD, s->fd, &ev) < 0) die("epoll_ctl");
    count++;
  }
  fclose(file);
  if (count == 0) return 2;

  size_t ready = 0, observed = 0, turn = 0;
  long acknowledged = 0, errors = 0, counted_acks = 0, counted_errors = 0;
  int started = 0, measuring = 0;
  double began = 0, measure_start = 0, deadline = now() + 120;
  struct epoll_event events[256];
  for (;;) {
    double t = now();
    if (!started && t > deadline) {
      fprintf(stderr, "hosted_load: only %zu of %zu sessions initialized\n", ready, count);
      return 1;
    }
    if (rate == 0 && started && !measuring && t - began >= 1.0) {
      measuring = 1;
      measure_start = t;
      counted_acks = acknowledged;
      counted_errors = errors;
    }
    if (rate > 0 && started) {
      /* The donations due by now, each on the next session that has not donated yet. */
      size_t due = (size_t)((t - began) * rate);
      while (turn < due && turn < count) {
        sessions[turn].sent = now();
        donate(&sessions[turn++]);
      }
      if (turn >= count || t - began >= seconds) {
        if (!measuring) {
          measuring = 1;
          measure_start = t; /* now: the grace for the last notifications */
        } else if (t - measure_start >= 2.0) {
          break;
        }
      }
    } else if (measuring && t - measure_start >= seconds) {
      break;
    }
    int n = epoll_wait(epoll, events, 256, rate > 0 ? 1 : 100);
    for (int i = 0; i < n; i++) {
      session_t *s = &sessions[events[i].data.u64];
      for (;;) {
        if (s->cap - s->len < 16384) {
          s->cap *= 2;
          s->in = realloc(s->in, s->cap);
        }
        ssize_t got = read(s->fd, s->in + s->len, s->cap - s->len);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
        if (got <= 0) {
          fprintf(stderr, "hosted_load: session %lu closed\n", (unsigned long)events[i].data.u64);
          return 1;
        }
        s->len += (size_t)got;
      }
      if (websocket && !s->upgraded) {
        char *end = memmem(s->in, s->len, "\r\n\r\n", 4);
        if (!end) continue;
        if (strncmp(s->in, "HTTP/1.1 101", 12) != 0) {
          fprintf(stderr, "hosted_load: upgrade refused: %.*s\n", (int)(end - s->in), s->in);
          return 1;
        }
        size_t used = (size_t)(end - s->in) + 4;
        memmove(s->in, s->in + used, s->len - used);
        s->len -= used;
        s->upgraded = 1;
        send_message(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"1.2\","
                        "\"clientInfo\":{\"name\":\"hosted-load\"}}}");
      }
      size_t consumed, length;
      char *message;
      while ((message = next_message(s, &consumed, &length))) {
        int is_reply = length > 0 && (memmem(message, length, "\"result\"", 8) || memmem(message, length, "\"error\"", 7)) &&
                       !memmem(message, length, "\"method\"", 8);
        if (is_reply) {
          int failed = memmem(message, length, "\"error\"", 7) && !memmem(message, length, "\"result\"", 8);
          if (!s->ready) {
            if (failed) {
              fprintf(stderr, "hosted_load: initialize refused: %.*s\n", (int)length, message);
              return 1;
            }
            s->ready = 1;
            if (++ready == count) {
              if (rate > 0) {
                char text[256];
                snprintf(text, sizeof text,
                         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tips/observe\",\"params\":{\"ids\":[\"%s\"]}}", tip);
                for (size_t k = 0; k < count; k++) send_message(&sessions[k], text);
              } else {
                started = 1;
                began = now();
                for (int w = 0; w < window; w++) donate(&sessions[turn++ % count]);
              }
            }
          } else if (rate > 0 && !s->observed) {
            if (failed) {
              fprintf(stderr, "hosted_load: tips/observe refused: %.*s\n", (int)length, message);
              return 1;
            }
            s->observed = 1;
            if (++observed == count) {
              started = 1;
              began = now();
            }
          } else if (rate > 0) {
            if (failed) errors++;
          } else {
            if (failed) {
              if (errors < 3) fprintf(stderr, "hosted_load: %.*s\n", (int)length, message);
              errors++;
            } else {
              acknowledged++;
            }
            donate(&sessions[turn++ % count]);
          }
        }
        if (rate > 0 && !is_reply && s->sent > 0 && s->latency == 0 &&
            memmem(message, length, "shouldDisplayChanged", 20))
          s->latency = now() - s->sent;
        memmove(s->in, s->in + consumed, s->len - consumed);
        s->len -= consumed;
      }
    }
  }
  if (rate > 0) {
    double *samples = malloc(count * sizeof *samples);
    size_t taken = 0, missing = 0;
    for (size_t k = 0; k < turn; k++) {
      if (sessions[k].latency > 0)
        samples[taken++] = sessions[k].latency * 1000;
      else
        missing++;
    }
    if (taken == 0) {
      printf("%zu 0 0 0 0 %zu\n", count, missing);
      return 1;
    }
    qsort(samples, taken, sizeof *samples, compare);
    printf("%zu %zu %.2f %.2f %.2f %zu\n", count, taken, samples[taken / 2], samples[(size_t)(taken * 0.99)],
           samples[taken - 1], missing);
    return 0;
  }
  double elapsed = now() - measure_start;
  printf("%.0f %ld\n", (acknowledged - counted_acks) / elapsed, errors - counted_errors);
  return 0;
}
