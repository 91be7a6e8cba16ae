/*
 * GLib's glibconfig.h lives in the multiarch library directory, not beside the
 * other GLib headers; this finds it there for the architectures Debian ships
 * Swift for.
 */
#if defined(__x86_64__)
#include "/usr/lib/x86_64-linux-gnu/glib-2.0/include/glibconfig.h"
#elif defined(__aarch64__)
#include "/usr/lib/aarch64-linux-gnu/glib-2.0/include/glibconfig.h"
#else
#error "CLibSecret: add the multiarch directory of glibconfig.h for this architecture"
#endif
