// What Swift cannot import from libwebsockets 4.1 by itself: macros and variadic functions.
#ifndef PEOPLEKEEPER_LWS_SHIM_H
#define PEOPLEKEEPER_LWS_SHIM_H

#include <libwebsockets.h>
#include <ev.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

/// Headroom lws_write needs before every payload (LWS_PRE is a macro).
static const size_t pk_lws_pre = LWS_PRE;

/// Bytes written to the socket as they are (LWS_WRITE_RAW is a macro): ready-made frames.
static const enum lws_write_protocol pk_lws_write_raw = LWS_WRITE_RAW;

/// Option bits (64-bit macros that do not import as constants).
static const uint64_t pk_option_validate_utf8 = LWS_SERVER_OPTION_VALIDATE_UTF8;
static const uint64_t pk_option_disable_ipv6 = LWS_SERVER_OPTION_DISABLE_IPV6;
static const uint64_t pk_option_fail_unable_to_bind = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
static const uint64_t pk_option_do_ssl_global_init = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
// Clients send the Origin header as given (else lws puts "http://" in front of it).
static const uint64_t pk_option_raw_origin = LWS_SERVER_OPTION_JUST_USE_RAW_ORIGIN;

// lws runs its connections on a libev loop we own (a "foreign" loop), so that one turn of it
// (`pk_ev_run_once`) returns to our loop between rounds as `lws_service` does with lws's own poll().
static const uint64_t pk_option_libev = LWS_SERVER_OPTION_LIBEV;

/// A libev loop on epoll (Linux), or NULL when the kernel has none.
static inline void *pk_ev_loop_new(void) { return ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOENV); }
/// One turn of the loop: waits for at least one event (or lws's timer), handles what is ready.
static inline int pk_ev_run_once(void *loop) { return ev_run((struct ev_loop *)loop, EVRUN_ONCE); }
static inline void pk_ev_loop_destroy(void *loop) { ev_loop_destroy((struct ev_loop *)loop); }

// lws 4.1.6's libev glue arms one libev timer for its next scheduled event (a sul) and never
// shortens it: `ev_timer_start` on an armed timer does nothing. So an event scheduled later for an
// earlier time (a connection's deadline, a client's handshake timeout) waits for the armed one (lws's
// 30-second housekeeping) unless other traffic wakes the loop first: a client's 1-second handshake
// timeout fired after 30 s. A tick wakes lws through its cancel pipe every `seconds`; handling that
// wake runs every event that is due. One wake a second per service thread.
struct pk_ev_tick {
    ev_timer timer;
    struct lws_context *context;
};
static void pk_ev_tick_fired(struct ev_loop *loop, ev_timer *timer, int revents) {
    (void)loop; (void)revents;
    lws_cancel_service(((struct pk_ev_tick *)timer)->context);
}
static inline void *pk_ev_tick_start(void *loop, struct lws_context *context, double seconds) {
    struct pk_ev_tick *tick = calloc(1, sizeof *tick);
    if (!tick) return NULL;
    tick->context = context;
    ev_timer_init(&tick->timer, pk_ev_tick_fired, seconds, seconds);
    ev_timer_start((struct ev_loop *)loop, &tick->timer);
    return tick;
}
/// Stops and frees a tick (before its context is destroyed).
static inline void pk_ev_tick_stop(void *loop, void *tick) {
    if (!tick) return;
    ev_timer_stop((struct ev_loop *)loop, &((struct pk_ev_tick *)tick)->timer);
    free(tick);
}

/// Runs lws's handling of "this socket may be written" for `wsi` now, as if the loop had reported
/// POLLOUT: lws first finishes what it owes the connection (a partial write, a pong for a ping it
/// read), in its own order, then calls WRITEABLE. Used at the end of a round for a connection read in
/// that round instead of asking epoll for POLLOUT (a syscall to arm it, a turn of the loop, a syscall
/// to drop it). A socket that takes less than is written keeps the rest in lws, which asks for POLLOUT
/// itself. Returns what `lws_service_fd` does (1: the connection was closed and freed).
static inline int pk_service_writable(struct lws_context *context, struct lws *wsi) {
    struct lws_pollfd pfd;
    pfd.fd = lws_get_socket_fd(wsi);
    if (pfd.fd < 0) return -1;
    pfd.events = LWS_POLLOUT;
    pfd.revents = LWS_POLLOUT;
    return lws_service_fd(context, &pfd);
}

/// Names the calling thread (15 bytes are kept) as `top -H` and `perf` show it; prctl is variadic.
static inline void pk_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

/// The permessage-deflate extension callback (RFC 7692).
static inline lws_extension_callback_function *pk_pm_deflate_callback(void) {
    return lws_extension_callback_pm_deflate;
}

#endif
