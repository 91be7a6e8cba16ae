/*
 * openudid.h: the C interface of libopenudid, one identifier shared by the
 * cooperating desktop apps of a user session (X11 selections, file slots and
 * a per-vendor mirror in the Secret Service; docs/PROTOCOL.md is the contract).
 *
 *     #include <openudid.h>
 *
 *     openudid *udid;
 *     char id[OPENUDID_VALUE_SIZE];
 *     if (openudid_open("org.example.app", NULL, &udid) != OPENUDID_OK) {
 *         fprintf(stderr, "%s\n", openudid_last_error());
 *         return 1;
 *     }
 *     openudid_value(udid, id);          40 hex digits, shared by every app
 *     openudid_close(udid);
 *
 * Build with `cc app.c $(pkg-config --cflags --libs openudid)`. The library
 * carries its own copy of the Swift runtime: the machine needs no Swift
 * toolchain, only the Debian libraries it links (libX11, libxcb, libXfixes),
 * and libsecret-1 (with GLib) for the Secret Service mirror, which the library
 * loads the first time the mirror talks to a Secret Service; without it the
 * Secret Service counts as not available and the automatic choice keeps the
 * file mirror.
 *
 * Conventions that hold for every function below:
 *
 * - Errors. A function that returns `int` returns OPENUDID_OK (0) on success
 *   and a negative OPENUDID_E... code on failure; a function that returns a
 *   pointer returns NULL on failure. Either way `openudid_last_error()` then
 *   says, in one sentence, what went wrong and what to do; a call that
 *   succeeds leaves it as it was. A NULL pointer, a handle that was never
 *   opened or is already closed, an unknown enum value or flag, or a buffer
 *   that is too small is an error code, never a crash, and changes nothing.
 * - Handles. An `openudid *` or `openudid_options *` is a number the library
 *   hands out once and never again, not the address of anything: the library
 *   looks it up, never dereferences it. Once closed (or freed) it stays
 *   closed, whatever the program opens later, so a second openudid_close of
 *   it is a no-op that can never close another handle.
 * - Strings are UTF-8 and NUL-terminated. Strings passed in are copied; the
 *   library keeps no pointer to them after the call returns.
 * - Ownership. What a function returns for the caller to keep says so, and is
 *   freed with the function it names (`openudid_free`, `openudid_close`,
 *   `openudid_options_free`). Everything else belongs to the library.
 * - Threads. Every function may be called from any thread, and a handle may
 *   be shared between threads. Functions that resolve block while they read
 *   the X display and the stores: a few milliseconds usually; a quarter of a
 *   second more when peers do not answer (one deadline for the whole pass
 *   over the slots), up to 2 seconds for each Secret Service call that hangs
 *   (a slow or locked keyring), and up to 2 seconds while another process
 *   generates the first identifier. A GUI app calls them off its main loop
 *   (or uses openudid_participate_async) or accepts that pause once at
 *   start-up (later calls use the cached value).
 * - The library never prints and never exits the process.
 * - fork(). A handle belongs to the process that opened it. In a child made
 *   by fork() every call with an inherited handle returns OPENUDID_EINVAL at
 *   once, and openudid_close() leaves it alone (the parent's participation
 *   goes on untouched); openudid_open() returns OPENUDID_EINVAL too, since
 *   the threads the library runs on are the parent's. A child that wants
 *   the identifier calls exec() first.
 */
#ifndef OPENUDID_H
#define OPENUDID_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the package this header belongs to, the one
 * `openudid --version` prints. openudid_version() says which version of the
 * library was loaded at run time, which may be newer than the header a
 * program was compiled against. */
#define OPENUDID_VERSION_MAJOR 0
#define OPENUDID_VERSION_MINOR 5
#define OPENUDID_VERSION_PATCH 0
/* The same as a string, "MAJOR.MINOR.PATCH". */
#define OPENUDID_VERSION "0.5.0"

/* Nonzero when this header's version is `major.minor.patch` or later, for
 * code that uses a function added in that version:
 *
 *     #if OPENUDID_CHECK_VERSION(0, 2, 0)
 *         openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, &listing);
 *     #endif
 */
#define OPENUDID_CHECK_VERSION(major, minor, patch) \
    (OPENUDID_VERSION_MAJOR > (major) || \
     (OPENUDID_VERSION_MAJOR == (major) && OPENUDID_VERSION_MINOR > (minor)) || \
     (OPENUDID_VERSION_MAJOR == (major) && OPENUDID_VERSION_MINOR == (minor) && OPENUDID_VERSION_PATCH >= (patch)))

/* The version of the binary interface, the N of libopenudid.so.N: functions
 * are only ever added within it. It changes only when a function changes or
 * goes, whatever the package's version does. */
#define OPENUDID_ABI_VERSION 1

/* Buffer sizes, NUL included: the shared identifier is 40 lowercase hex
 * digits; the app-scoped value is a lowercase UUID (8-4-4-4-12). */
#define OPENUDID_VALUE_SIZE 41
#define OPENUDID_APP_VALUE_SIZE 37

/* Error codes. `openudid_strerror` names each one; `openudid_last_error`
 * says what exactly went wrong in the calling thread's last failed call. */
enum {
    OPENUDID_OK = 0,
    /* A NULL pointer, a handle that is not open, or an argument out of range. */
    OPENUDID_EINVAL = -1,
    /* The app id (or vendor) breaks the application-id rules: reverse-DNS,
     * at least two dot-separated parts of [A-Za-z0-9_-], at most 224 bytes. */
    OPENUDID_EAPP = -2,
    /* The namespace is not 1 to 64 characters of [A-Za-z0-9_-]. */
    OPENUDID_ENAMESPACE = -3,
    /* There is no usable home directory ($HOME, $XDG_DATA_HOME) for files. */
    OPENUDID_ENOHOME = -4,
    /* A store this operation must write could not be written. */
    OPENUDID_ESTORE = -5,
    /* The X display named with openudid_options_set_display cannot be opened
     * (openudid_open_with). Without a display named, the library works from
     * its files when $DISPLAY cannot be opened, and says so in its report. */
    OPENUDID_EDISPLAY = -6,
    /* The caller's buffer is too small for the answer. */
    OPENUDID_ERANGE = -7,
    /* The handle already participates (see openudid_participate). */
    OPENUDID_EBUSY = -8,
    /* Memory ran out. */
    OPENUDID_ENOMEM = -9
};

/* A handle on the identifier for one app. Opaque; open it with openudid_open
 * or openudid_open_with and give it back with openudid_close. */
typedef struct openudid openudid;

/* Options for openudid_open_with. Opaque; every field has a default that
 * suits a desktop session. */
typedef struct openudid_options openudid_options;

/* Where the per-vendor mirror lives. */
typedef enum openudid_mirror {
    /* The Secret Service if one answers on the session bus, else the file
     * store (the default). */
    OPENUDID_MIRROR_AUTOMATIC = 0,
    /* The freedesktop Secret Service (gnome-keyring, KeePassXC, KWallet). */
    OPENUDID_MIRROR_SECRET_SERVICE = 1,
    /* A file per vendor under $XDG_DATA_HOME/openudid/vendors/. */
    OPENUDID_MIRROR_FILE = 2,
    /* No mirror: selections, file slots and the local cache only. */
    OPENUDID_MIRROR_NONE = 3
} openudid_mirror;

/* Called with each new identifier (40 hex digits and a NUL, valid during the
 * call) and the `ctx` given to openudid_participate; see there. */
typedef void (*openudid_change_func)(const char *id, void *ctx);

/* Frees (or otherwise lets go of) the `ctx` a participation was given; see
 * openudid_participate_full. */
typedef void (*openudid_destroy_notify)(void *ctx);

/* Flags for openudid_forget_everything. */
enum {
    /* List what would be removed; remove nothing. */
    OPENUDID_FORGET_DRY_RUN = 1
};

/* What an app does when its own value disagrees with the consensus. */
typedef enum openudid_policy {
    /* Adopt the consensus, so that apps converge (the default). */
    OPENUDID_POLICY_FOLLOW_CONSENSUS = 0,
    /* Keep the app's own value and report the disagreement. */
    OPENUDID_POLICY_KEEP_LOCAL = 1
} openudid_policy;

/* ---- Errors ------------------------------------------------------------ */

/* A static description of `code` ("invalid app id", ...), for any int; an
 * unknown code gets "unknown error". Never NULL, never to be freed. */
const char *openudid_strerror(int code);

/* What the calling thread's last failed call went wrong with, naming the
 * thing and the remedy: "invalid app id \"notes\": an app id has at least two
 * parts separated by dots, such as com.acme.notes". The empty string when no
 * call on this thread has failed. Valid until the thread's next call into the
 * library; never to be freed. */
const char *openudid_last_error(void);

/* The version of the library loaded at run time, such as "0.2.0" (compare
 * OPENUDID_VERSION, the header's). Static; never to be freed. */
const char *openudid_version(void);

/* ---- Options ----------------------------------------------------------- */

/* Creates options with every default: the display from $DISPLAY, no
 * namespace, OPENUDID_MIRROR_AUTOMATIC, OPENUDID_POLICY_FOLLOW_CONSENSUS.
 * On success `*out` holds options for the caller to free with
 * openudid_options_free. Errors: OPENUDID_EINVAL (out is NULL). */
int openudid_options_new(openudid_options **out);

/* Frees options made by openudid_options_new; NULL is allowed and ignored.
 * A handle opened with the options does not need them any more. */
void openudid_options_free(openudid_options *options);

/* The X display to use, such as ":0"; NULL means $DISPLAY. A display named
 * here must open: openudid_open_with fails with OPENUDID_EDISPLAY when it
 * does not (with $DISPLAY the app goes on from its files instead).
 * Errors: OPENUDID_EINVAL (options not made by openudid_options_new). */
int openudid_options_set_display(openudid_options *options, const char *display);

/* Whether to use the X display at all (default 1). With 0 the app works from
 * its file slot, its local cache and the mirror alone.
 * Errors: OPENUDID_EINVAL. */
int openudid_options_set_selections(openudid_options *options, int enabled);

/* A namespace separates a set of apps from everyone else's: its selections
 * and shared files are its own. For tests and experiments; NULL for none.
 * Errors: OPENUDID_EINVAL, OPENUDID_ENAMESPACE (not 1 to 64 characters of
 * [A-Za-z0-9_-]). */
int openudid_options_set_namespace(openudid_options *options, const char *ns);

/* Where the per-vendor mirror lives.
 * Errors: OPENUDID_EINVAL (also for a value that is not an openudid_mirror). */
int openudid_options_set_mirror(openudid_options *options, openudid_mirror mirror);

/* What to do when the app's own value disagrees with the consensus.
 * Errors: OPENUDID_EINVAL (also for a value that is not an openudid_policy). */
int openudid_options_set_policy(openudid_options *options, openudid_policy policy);

/* Whether the app takes part only once the user has consented: with
 * `required` nonzero, a handle reads, generates, writes and publishes nothing,
 * and reports 40 zeros, until openudid_grant_consent (default: 0, not
 * required). Errors: OPENUDID_EINVAL. */
int openudid_options_set_consent_required(openudid_options *options, int required);

/* ---- Handles ----------------------------------------------------------- */

/* Opens a handle for `app`, a reverse-DNS application id such as
 * "org.example.mail", with the default options.
 *
 * `vendor` names the vendor whose mirror the app shares; NULL means the id's
 * first two parts ("org.example"), or three under a hosting prefix such as
 * "io.github.alice". Nothing is read or written yet: that happens on the
 * first openudid_value, openudid_report_json or openudid_participate.
 *
 * On success `*out` holds a handle for the caller to close with
 * openudid_close; on failure `*out` is set to NULL (when `out` is not NULL).
 * Errors: OPENUDID_EINVAL (app or out is NULL), OPENUDID_EAPP,
 * OPENUDID_ENOHOME, OPENUDID_ENOMEM. */
int openudid_open(const char *app, const char *vendor, openudid **out);

/* Like openudid_open, with `options` (NULL for the defaults).
 * Errors: those of openudid_open, OPENUDID_EINVAL for options not made by
 * openudid_options_new, and OPENUDID_EDISPLAY when the options name a display
 * (openudid_options_set_display) that cannot be opened and use selections. */
int openudid_open_with(const char *app, const char *vendor, const openudid_options *options, openudid **out);

/* Stops the handle's participation, if any, and frees the handle. The
 * selection slot is released first, at once, even while on_change is
 * running; then openudid_close waits for a running on_change to return.
 * When it returns, on_change is not running and will not be called again,
 * and a destroy function (openudid_participate_full) has been called, so the
 * context can be freed. Called from inside on_change it does the same without
 * waiting for on_change to return; the destroy function then runs right after
 * on_change returns, on the library's thread. It never waits for a resolution
 * under way (one may wait seconds for a keyring): that one ends on the
 * library's thread afterwards and calls nothing.
 * NULL, a handle already closed (however many handles were opened since) and
 * a value that was never a handle are ignored: a no-op. */
void openudid_close(openudid *handle);

/* Writes the identifier every participating app shares into `out`: 40
 * lowercase hex digits and a NUL (OPENUDID_VALUE_SIZE bytes); 40 zeros when
 * the app or the user opted out.
 *
 * The first call resolves (reads every source, holds the vote, writes the
 * winner where this app keeps copies); later calls return the cached value,
 * which a participating handle keeps up to date.
 *
 * A source that cannot be read does not make this fail: the report
 * (openudid_report_json) says which answered. Errors: OPENUDID_EINVAL. */
int openudid_value(openudid *handle, char out[OPENUDID_VALUE_SIZE]);

/* Like openudid_value, into a buffer of `size` bytes.
 * Errors: OPENUDID_EINVAL, OPENUDID_ERANGE (size < OPENUDID_VALUE_SIZE;
 * nothing is written). */
int openudid_value_n(openudid *handle, char *out, size_t size);

/* Writes the value derived for this app alone from the shared identifier, a
 * lowercase version-4 UUID and a NUL (OPENUDID_APP_VALUE_SIZE bytes); the nil
 * UUID when opted out. No other app can link it to its own: use it wherever
 * an identifier is shown or sent. Errors: OPENUDID_EINVAL. */
int openudid_app_value(openudid *handle, char out[OPENUDID_APP_VALUE_SIZE]);

/* Like openudid_app_value, into a buffer of `size` bytes.
 * Errors: OPENUDID_EINVAL, OPENUDID_ERANGE (size < OPENUDID_APP_VALUE_SIZE;
 * nothing is written). */
int openudid_app_value_n(openudid *handle, char *out, size_t size);

/* Resolves again now instead of using the cached value (a participating
 * handle also reports a change through on_change). Errors: OPENUDID_EINVAL. */
int openudid_refresh(openudid *handle);

/* The latest resolution with its provenance, as the JSON object that
 * `openudid get --json` prints (docs/PROTOCOL.md, "Reports"): "id",
 * "appScoped", "origin" (consensus, generated, kept-local or opted-out),
 * "votes", "agreeing", "disagreeing", "sources", "repairs", "mirror", "slot".
 * Resolves first if nothing was resolved yet.
 *
 * Returns a string for the caller to free with openudid_free, or NULL
 * (invalid handle, no memory; see openudid_last_error). */
char *openudid_report_json(openudid *handle);

/* Takes part in the session until openudid_close: serves this app's record
 * in the lowest free selection slot, resolves again whenever another
 * participant comes, goes or changes, and calls `on_change` with each new
 * identifier (40 hex digits, 40 zeros when opted out), starting with the
 * first. `on_change` may be NULL to serve without being told.
 *
 * Returns once the first resolution is served. Without an X display the app
 * goes on from its files and takes part once a display answers.
 *
 * Threading: on_change runs on a thread of the library's, never the
 * caller's, one call at a time and in order. The `id` string is valid only
 * during the call; copy it to keep it. Keep the callback short and hand the
 * value to the app's own loop rather than touching widgets from it:
 *
 *   GTK/GLib:  g_idle_add_full(G_PRIORITY_DEFAULT, update_ui, g_strdup(id), g_free);
 *   Qt:        QMetaObject::invokeMethod(window, [window, s = QString(id)] {
 *                  window->show(s); }, Qt::QueuedConnection);
 *
 * The callback may call any function of this header on the same handle,
 * including openudid_close.
 *
 * Cost: a participating handle runs two threads of its own and holds seven
 * file descriptors (one X connection, which serves its slot and reads the
 * others, two wake pipes, an inotify watch and a lock file); a callback adds
 * one thread and a pipe. A process may have at
 * most one participating handle per selection slot (100 per namespace):
 * each serves one slot, and one more fails at once with OPENUDID_EBUSY.
 *
 * Errors: OPENUDID_EINVAL, OPENUDID_EBUSY (the handle already participates,
 * one participation per handle; or the process already has a participating
 * handle for every selection slot of the namespace). */
int openudid_participate(openudid *handle, openudid_change_func on_change, void *ctx);

/* Like openudid_participate, but returns at once: the first resolution (which
 * reads the X server, the files and the Secret Service, seconds with a slow
 * keyring) runs on a thread of the library's, and `on_change` hears the first
 * identifier when it is done. Call this one from a GUI main loop, and leave the
 * calls that resolve (openudid_value, openudid_report_json) until the first
 * on_change. openudid_close while it starts is safe: no callback runs after
 * openudid_close returns.
 * Errors: those of openudid_participate. */
int openudid_participate_async(openudid *handle, openudid_change_func on_change, void *ctx);

/* Like openudid_participate, with `destroy` (NULL for none), which the
 * library calls with `ctx` exactly once when the participation ends: after
 * the last on_change has returned, before openudid_close returns (or, when
 * openudid_close is called from on_change, right after that on_change
 * returns). It is called whether on_change is NULL or not. When this
 * function fails, destroy is not called: `ctx` is still the caller's.
 *
 *   openudid_participate_full(udid, on_change, state, free);
 *
 * Errors: those of openudid_participate. */
int openudid_participate_full(openudid *handle, openudid_change_func on_change, void *ctx, openudid_destroy_notify destroy);

/* Like openudid_participate_async, with `destroy` as for
 * openudid_participate_full; it is called too when openudid_close comes
 * before the first resolution is done.
 * Errors: those of openudid_participate. */
int openudid_participate_async_full(openudid *handle, openudid_change_func on_change, void *ctx, openudid_destroy_notify destroy);

/* Opts this app out: it reports 40 zeros, publishes that it opted out and no
 * longer votes, until openudid_opt_in. Kept in the app's local cache, so it
 * lasts across restarts. A participating handle publishes the change at once
 * (and on_change reports the zeros).
 * Errors: OPENUDID_EINVAL, OPENUDID_ESTORE (the local cache cannot be written). */
int openudid_opt_out(openudid *handle);

/* Undoes openudid_opt_out; the app takes the consensus again.
 * Errors: OPENUDID_EINVAL, OPENUDID_ESTORE. */
int openudid_opt_in(openudid *handle);

/* Records the user's consent for this app (kept beside its local cache until
 * withdrawn); a participating handle takes part at once.
 * Errors: OPENUDID_EINVAL, OPENUDID_ESTORE. */
int openudid_grant_consent(openudid *handle);

/* Withdraws the user's consent and erases the app's file slot and local cache;
 * a participating handle gives up its slot at once. The vendor's mirror, which
 * other apps of the vendor share, is left alone.
 * Errors: OPENUDID_EINVAL, OPENUDID_ESTORE. */
int openudid_withdraw_consent(openudid *handle);

/* 1 when the user's consent for this app is recorded, 0 when not, or
 * OPENUDID_EINVAL for a bad handle. */
int openudid_has_consent(openudid *handle);

/* ---- The user, and uninstalling ----------------------------------------- */

/* Opts the user out for every participating app: a marker file in
 * $XDG_CONFIG_HOME/openudid/. Apps see it on their next resolution.
 * Errors: OPENUDID_ENOHOME, OPENUDID_ESTORE. */
int openudid_opt_out_everywhere(void);

/* Undoes openudid_opt_out_everywhere. Errors: OPENUDID_ENOHOME, OPENUDID_ESTORE. */
int openudid_opt_in_everywhere(void);

/* 1 when the user opted out for every app, 0 when not. */
int openudid_is_opted_out_everywhere(void);

/* Resets the shared identifier for the user: every participating app moves
 * to a new identifier and never back to the old one (docs/PROTOCOL.md §9).
 * Removes every copy of it in namespace `ns` (NULL: real use) -- file slots,
 * local caches, file mirrors, Secret Service items -- and raises the reset
 * generation, which it stores in *generation unless that is NULL. Running
 * apps follow within a second, the others on their next start. A copy that
 * could not be removed (a locked keyring) is superseded by the new
 * generation and overwritten when next read, so the call still succeeds
 * (`openudid reset` prints what was left). Opt-outs and consent stay.
 * Errors: OPENUDID_ENAMESPACE, OPENUDID_ENOHOME, OPENUDID_ESTORE (the reset
 * marker cannot be written: nothing was reset). */
int openudid_reset_everywhere(const char *ns, int64_t *generation);

/* Removes everything the library wrote for the user, in every namespace:
 * file slots, local caches, consent records, mirror files and Secret Service
 * items, and the opt-out and reset markers (`openudid forget --all`). Stop
 * the participating apps first, or they write their copies again.
 *
 * `flags` is 0 or OPENUDID_FORGET_DRY_RUN, which lists what would be removed
 * and removes nothing. Unless `listing` is NULL, *listing receives a JSON
 * object for the caller to free with openudid_free: "dryRun" (true or false),
 * "files" (paths), "keyringItems" (item labels) and "problems" (what could
 * not be looked at or removed); on failure *listing is NULL, except for
 * OPENUDID_ESTORE, where it says what was removed and what was left.
 * Errors: OPENUDID_EINVAL (an unknown flag: nothing is removed),
 * OPENUDID_ENOHOME, OPENUDID_ESTORE (something could not be removed;
 * openudid_last_error names it), OPENUDID_ENOMEM. */
int openudid_forget_everything(unsigned int flags, char **listing);

/* Deletes what uninstalling `app` with its data would: its file slot and its
 * local cache. Nothing of other apps, and nothing of the vendor mirror, is
 * touched; stopping the app's process is the caller's business.
 * Errors: OPENUDID_EINVAL (app is NULL), OPENUDID_EAPP, OPENUDID_ENOHOME,
 * OPENUDID_ESTORE. */
int openudid_remove_app(const char *app);

/* Like openudid_remove_app for an app that used namespace `ns` (NULL: none).
 * Errors: those of openudid_remove_app, and OPENUDID_ENAMESPACE. */
int openudid_remove_app_in(const char *app, const char *ns);

/* Frees a string the library returned for the caller to free
 * (openudid_report_json, openudid_forget_everything). NULL is allowed and
 * ignored. */
void openudid_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* OPENUDID_H */
