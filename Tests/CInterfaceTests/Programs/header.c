/*
 * What the header promises, from C and C++ alike: header [MODE]
 *
 * Compiled as C99, C11 and C++11 with -Wall -Wextra -pedantic -Werror.
 * Prints "CHECK<TAB>ok" or "CHECK<TAB>FAILED: why" for each promise, then
 * "done". Modes: "contract" (the default: versions, the last error, destroy
 * functions, forgetting; needs a home without a display) and "forget"
 * (removes everything for real).
 */
#include <openudid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(const char *what, int ok, const char *why) {
    if (ok) {
        printf("%s\tok\n", what);
    } else {
        printf("%s\tFAILED: %s\n", what, why);
    }
}

static int destroyed;

static void count_destroy(void *ctx) {
    (void)ctx;
    destroyed++;
}

static void ignore_change(const char *id, void *ctx) {
    (void)id;
    (void)ctx;
}

static int contains(const char *text, const char *part) { return text != NULL && strstr(text, part) != NULL; }

static openudid *open_quiet(const char *app) {
    openudid *udid = NULL;
    openudid_options *options = NULL;
    openudid_options_new(&options);
    openudid_options_set_selections(options, 0);
    openudid_options_set_mirror(options, OPENUDID_MIRROR_FILE);
    openudid_open_with(app, NULL, options, &udid);
    openudid_options_free(options);
    return udid;
}

static void versions(void) {
    char built[32];
    snprintf(built, sizeof built, "%d.%d.%d", OPENUDID_VERSION_MAJOR, OPENUDID_VERSION_MINOR, OPENUDID_VERSION_PATCH);
    check("OPENUDID_VERSION is MAJOR.MINOR.PATCH", strcmp(built, OPENUDID_VERSION) == 0, built);
    check("openudid_version() is OPENUDID_VERSION", strcmp(openudid_version(), OPENUDID_VERSION) == 0, openudid_version());
    check("OPENUDID_CHECK_VERSION(this version)",
          OPENUDID_CHECK_VERSION(OPENUDID_VERSION_MAJOR, OPENUDID_VERSION_MINOR, OPENUDID_VERSION_PATCH), "false");
    check("OPENUDID_CHECK_VERSION(0, 0, 0)", OPENUDID_CHECK_VERSION(0, 0, 0), "false");
    check("OPENUDID_CHECK_VERSION(next patch)",
          !OPENUDID_CHECK_VERSION(OPENUDID_VERSION_MAJOR, OPENUDID_VERSION_MINOR, OPENUDID_VERSION_PATCH + 1), "true");
    check("OPENUDID_CHECK_VERSION(next minor)", !OPENUDID_CHECK_VERSION(OPENUDID_VERSION_MAJOR, OPENUDID_VERSION_MINOR + 1, 0),
          "true");
    check("OPENUDID_CHECK_VERSION(next major)", !OPENUDID_CHECK_VERSION(OPENUDID_VERSION_MAJOR + 1, 0, 0), "true");
#if OPENUDID_CHECK_VERSION(0, 2, 0)
    check("#if OPENUDID_CHECK_VERSION", 1, "");
#else
    check("#if OPENUDID_CHECK_VERSION", 0, "the preprocessor says no");
#endif
}

/* A failure sets the last error; the successes after it leave it alone. */
static void last_error(void) {
    openudid *udid = open_quiet("org.example.header");
    char value[OPENUDID_VALUE_SIZE];
    char app_value[OPENUDID_APP_VALUE_SIZE];
    char *text = NULL;
    int64_t generation = 0;
    int unchanged = 1;
    char failures[512] = "";

    openudid_remove_app("x");
#define STILL(call)                                                            \
    do {                                                                       \
        int code_ = (call);                                                    \
        if (code_ < 0 || !contains(openudid_last_error(), "\"x\"")) {          \
            unchanged = 0;                                                     \
            strncat(failures, #call "; ", sizeof failures - strlen(failures) - 1); \
        }                                                                      \
    } while (0)
    STILL(openudid_value(udid, value));
    STILL(openudid_app_value(udid, app_value));
    STILL(openudid_refresh(udid));
    text = openudid_report_json(udid);
    STILL(text == NULL ? -1 : 0);
    openudid_free(text);
    STILL(openudid_opt_out(udid));
    STILL(openudid_opt_in(udid));
    STILL(openudid_grant_consent(udid));
    STILL(openudid_has_consent(udid));
    STILL(openudid_reset_everywhere(NULL, &generation));
    STILL(openudid_reset_everywhere("headerns", NULL));
    STILL(openudid_opt_out_everywhere());
    STILL(openudid_is_opted_out_everywhere());
    STILL(openudid_opt_in_everywhere());
    STILL(openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, &text));
    openudid_free(text);
    STILL(openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, NULL));
    STILL(openudid_remove_app_in("org.example.other", NULL));
#undef STILL
    openudid_close(udid);
    check("successes leave the last error alone", unchanged, failures);
    check("openudid_reset_everywhere fills an int64_t", generation >= 1, "generation < 1");
}

static void destroy_functions(void) {
    openudid *udid = open_quiet("org.example.destroy");
    int ctx = 0;

    destroyed = 0;
    check("openudid_participate_full", openudid_participate_full(udid, ignore_change, &ctx, count_destroy) == OPENUDID_OK,
          openudid_last_error());
    check("openudid_participate_full(twice): EBUSY",
          openudid_participate_full(udid, ignore_change, &ctx, count_destroy) == OPENUDID_EBUSY, openudid_last_error());
    check("destroy: not called while participating nor on failure", destroyed == 0, "called");
    openudid_close(udid);
    check("destroy: called once by openudid_close", destroyed == 1, "not once");
    openudid_close(udid);
    check("destroy: not again by a second openudid_close", destroyed == 1, "called again");

    destroyed = 0;
    check("openudid_participate_full(handle closed): EINVAL",
          openudid_participate_full(udid, ignore_change, &ctx, count_destroy) == OPENUDID_EINVAL, "");
    check("openudid_participate_async_full(handle NULL): EINVAL",
          openudid_participate_async_full(NULL, ignore_change, &ctx, count_destroy) == OPENUDID_EINVAL, "");
    check("destroy: not called when participating fails", destroyed == 0, "called");

    /* Without on_change, and closed while the first resolution runs. */
    udid = open_quiet("org.example.destroy");
    check("openudid_participate_async_full(on_change NULL)",
          openudid_participate_async_full(udid, NULL, &ctx, count_destroy) == OPENUDID_OK, openudid_last_error());
    openudid_close(udid);
    check("destroy: called once when closed while starting", destroyed == 1, "not once");

    udid = open_quiet("org.example.destroy");
    check("openudid_participate_full(destroy NULL)", openudid_participate_full(udid, ignore_change, &ctx, NULL) == OPENUDID_OK,
          openudid_last_error());
    openudid_close(udid);
    check("destroy NULL: nothing called", destroyed == 1, "called");
}

/* A buffer too small is refused before anything is resolved, read or written. */
static void small_buffers(void) {
    openudid *udid = open_quiet("org.example.small");
    char value[OPENUDID_VALUE_SIZE];
    char *listing = NULL;
    check("openudid_value_n(size 40): ERANGE", openudid_value_n(udid, value, OPENUDID_VALUE_SIZE - 1) == OPENUDID_ERANGE,
          openudid_last_error());
    check("openudid_app_value_n(size 36): ERANGE",
          openudid_app_value_n(udid, value, OPENUDID_APP_VALUE_SIZE - 1) == OPENUDID_ERANGE, openudid_last_error());
    openudid_close(udid);
    openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, &listing);
    check("a buffer too small: nothing written", listing != NULL && !contains(listing, "org.example.small"),
          listing ? listing : openudid_last_error());
    openudid_free(listing);
}

static void forgetting(int really) {
    openudid *udid = open_quiet("org.example.forget");
    char value[OPENUDID_VALUE_SIZE];
    char *listing = NULL;
    char *again = NULL;
    int code;

    openudid_value(udid, value);
    openudid_close(udid);
    code = openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, &listing);
    check("dry run: lists the app's files", code == OPENUDID_OK && contains(listing, "org.example.forget"),
          listing ? listing : openudid_last_error());
    check("dry run: says it is one", contains(listing, "\"dryRun\":true"), listing ? listing : "(NULL)");
    code = openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, &again);
    check("dry run: removed nothing", code == OPENUDID_OK && listing && again && strcmp(listing, again) == 0,
          again ? again : "(NULL)");
    openudid_free(again);
    again = NULL;
    code = openudid_forget_everything(0x10, &again);
    check("unknown flag: EINVAL", code == OPENUDID_EINVAL && contains(openudid_last_error(), "unknown flag"),
          openudid_last_error());
    check("unknown flag: no listing", again == NULL, again ? again : "");
    code = openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, &again);
    check("unknown flag: removed nothing", code == OPENUDID_OK && again && strcmp(listing, again) == 0, again ? again : "");
    openudid_free(again);
    again = NULL;
    if (really) {
        code = openudid_forget_everything(0, &again);
        check("forget: removes what the dry run listed", code == OPENUDID_OK && contains(again, "\"dryRun\":false")
                                                             && contains(again, "org.example.forget"),
              again ? again : openudid_last_error());
        openudid_free(again);
        again = NULL;
        code = openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, &again);
        check("forget: nothing is left", code == OPENUDID_OK && !contains(again, "org.example.forget"), again ? again : "");
        openudid_free(again);
    }
    openudid_free(listing);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "contract";
    if (strcmp(mode, "forget") == 0) {
        forgetting(1);
    } else {
        versions();
        last_error();
        destroy_functions();
        small_buffers();
        forgetting(0);
    }
    printf("done\n");
    return 0;
}
