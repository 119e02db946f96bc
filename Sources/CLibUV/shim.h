#ifndef TIPSD_CLIBUV_SHIM_H
#define TIPSD_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/file.h>
#include <signal.h>
#include <unistd.h>
#include <errno.h>
#endif
