/*
 * A C app for the tests: client APP NAMESPACE [--once]
 *
 * Opens APP in NAMESPACE with the file mirror and prints "value HEX" and
 * "app UUID". Then, unless --once, it participates and prints "change HEX"
 * on every change until SIGTERM or SIGINT ("closed" when it has closed);
 * SIGUSR1 toggles its opt-out. Errors go to stderr with exit status 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <openudid.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t toggle_requested, quit_requested;

static void on_signal(int number) {
    if (number == SIGUSR1) {
        toggle_requested = 1;
    } else {
        quit_requested = 1;
    }
}

/* Runs on a thread of the library's: prints and returns at once. */
static void on_change(const char *id, void *context) {
    (void)context;
    printf("change %s\n", id);
    fflush(stdout);
}

static int fail(const char *what, int code) {
    fprintf(stderr, "client: %s failed (%d, %s): %s\n", what, code, openudid_strerror(code), openudid_last_error());
    return 1;
}

int main(int argc, char **argv) {
    openudid_options *options;
    openudid *udid;
    char value[OPENUDID_VALUE_SIZE];
    char app_value[OPENUDID_APP_VALUE_SIZE];
    struct sigaction action;
    struct timespec pause = {0, 10 * 1000 * 1000};
    int opted_out = 0;
    int code;

    if (argc < 3) {
        fprintf(stderr, "usage: client APP NAMESPACE [--once]\n");
        return 2;
    }
    if ((code = openudid_options_new(&options)) != OPENUDID_OK) return fail("openudid_options_new", code);
    if ((code = openudid_options_set_namespace(options, argv[2])) != OPENUDID_OK) return fail("openudid_options_set_namespace", code);
    if ((code = openudid_options_set_mirror(options, OPENUDID_MIRROR_FILE)) != OPENUDID_OK) return fail("openudid_options_set_mirror", code);
    code = openudid_open_with(argv[1], NULL, options, &udid);
    openudid_options_free(options);
    if (code != OPENUDID_OK) return fail("openudid_open_with", code);

    if ((code = openudid_value(udid, value)) != OPENUDID_OK) return fail("openudid_value", code);
    if ((code = openudid_app_value(udid, app_value)) != OPENUDID_OK) return fail("openudid_app_value", code);
    printf("value %s\napp %s\n", value, app_value);
    fflush(stdout);
    if (argc > 3 && strcmp(argv[3], "--once") == 0) {
        openudid_close(udid);
        return 0;
    }

    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    if ((code = openudid_participate(udid, on_change, NULL)) != OPENUDID_OK) return fail("openudid_participate", code);
    while (!quit_requested) {
        if (toggle_requested) {
            toggle_requested = 0;
            opted_out = !opted_out;
            code = opted_out ? openudid_opt_out(udid) : openudid_opt_in(udid);
            if (code != OPENUDID_OK) return fail(opted_out ? "openudid_opt_out" : "openudid_opt_in", code);
        }
        nanosleep(&pause, NULL);
    }
    openudid_close(udid);
    printf("closed\n");
    return 0;
}
