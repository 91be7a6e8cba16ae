#ifndef OPENUDID_CX11_SHIM_H
#define OPENUDID_CX11_SHIM_H

#include <xcb/xcb.h>
#include <xcb/xcbext.h>
#include <xcb/xfixes.h>
#include <X11/Xauth.h>

/// The XFixes extension's descriptor, which libxcb caches per connection
/// (a global variable, reached through a function so Swift sees no mutable global).
static inline xcb_extension_t *openudid_xcb_xfixes_extension(void) { return &xcb_xfixes_id; }

/// dup3(2), which glibc declares only under _GNU_SOURCE: the server's socket
/// takes over a descriptor number of libxcb's with close-on-exec set at once.
static inline int openudid_dup3(int from, int to, int flags) {
    extern int dup3(int, int, int);
    return dup3(from, to, flags);
}

/// getrandom(2), which Swift's Glibc module does not declare: a reader's pass
/// draws every conversion's random time in one call (the standard library's
/// generator makes one system call per number).
#include <sys/random.h>
static inline long openudid_getrandom(void *buffer, unsigned long length) { return getrandom(buffer, length, 0); }

#endif
