#ifndef TIPSD_CLIBUV_SHIM_H
#define TIPSD_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <signal.h>
#include <unistd.h>
#include <errno.h>
#include <stdint.h>

/// Peer credentials of a connected AF_UNIX socket (Linux `SO_PEERCRED`).
///
/// `struct ucred` is only declared under `_GNU_SOURCE`, which Swift's Glibc
/// module does not define, so the kernel's layout is mirrored here.
/// Returns 0 on success, or a negative errno (libuv-style) on failure.
static inline int tipsd_peer_credentials(int fd, int32_t *pid, uint32_t *uid, uint32_t *gid) {
#ifdef SO_PEERCRED
  struct { int32_t pid; uint32_t uid; uint32_t gid; } cred;
  socklen_t len = (socklen_t)sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -errno;
  if (len != (socklen_t)sizeof(cred)) return -EINVAL;
  *pid = cred.pid;
  *uid = cred.uid;
  *gid = cred.gid;
  return 0;
#else
  (void)fd; (void)pid; (void)uid; (void)gid;
  return -ENOTSUP;
#endif
}

/// `signal(SIGPIPE, SIG_IGN)`; `SIG_IGN` is a cast macro Swift cannot import portably.
static inline void tipsd_ignore_sigpipe(void) {
  signal(SIGPIPE, SIG_IGN);
}

/// Unblocks SIGTERM and SIGINT, which a parent (e.g. a test runner's thread) may have left blocked in the mask
/// the daemon inherited; blocked, they would never reach the libuv signal watchers.
static inline void tipsd_unblock_termination_signals(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
}

#endif
