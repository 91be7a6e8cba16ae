/*
 * Feeds every function of openudid.h bad input: bad-input [MODE]
 *
 * Prints one line per call, "CALL<TAB>CODE<TAB>MESSAGE", where MESSAGE is
 * openudid_last_error() after a failure (or what a function that cannot fail
 * returned). The tests know which code each call must give. Surviving to the
 * end is part of the check: the last line is "done".
 *
 * Modes: "arguments" (the default) needs a home; "no-home" runs without
 * HOME or XDG directories; "no-store" with XDG directories that cannot be
 * created.
 */
#include <openudid.h>
#include <stdio.h>
#include <string.h>

static void report(const char *call, int code) {
    printf("%s\t%d\t%s\n", call, code, code == OPENUDID_OK ? "" : openudid_last_error());
}

static void said(const char *call, const char *text) {
    printf("%s\t0\t%s\n", call, text ? text : "(NULL)");
}

static void arguments(void) {
    openudid *udid = NULL;
    openudid *closed = NULL;
    openudid_options *options = NULL;
    openudid_options *freed = NULL;
    char value[OPENUDID_VALUE_SIZE];
    char app_value[OPENUDID_APP_VALUE_SIZE];
    char long_app[300];
    char forged_storage[64];
    openudid *forged = (openudid *)(void *)forged_storage;
    char *json;
    int code;

    memset(long_app, 'a', sizeof long_app - 1);
    long_app[sizeof long_app - 1] = '\0';
    memcpy(long_app, "org.", 4);
    memset(forged_storage, 0x5a, sizeof forged_storage);

    /* Opening. */
    report("openudid_open(app NULL)", openudid_open(NULL, NULL, &udid));
    report("openudid_open(out NULL)", openudid_open("org.example.bad", NULL, NULL));
    report("openudid_open(app \"notes\")", openudid_open("notes", NULL, &udid));
    report("openudid_open(app \"\")", openudid_open("", NULL, &udid));
    report("openudid_open(app 299 bytes)", openudid_open(long_app, NULL, &udid));
    report("openudid_open(app \"org..x\")", openudid_open("org..x", NULL, &udid));
    report("openudid_open(app not UTF-8)", openudid_open("org.\xff\xfe.x", NULL, &udid));
    report("openudid_open(vendor \"acme\")", openudid_open("org.example.bad", "acme", &udid));
    report("openudid_open(out set to NULL on failure)", udid == NULL ? OPENUDID_OK : -100);

    /* Options. */
    report("openudid_options_new(out NULL)", openudid_options_new(NULL));
    report("openudid_options_new", openudid_options_new(&freed));
    openudid_options_free(freed);
    report("openudid_options_set_display(options NULL)", openudid_options_set_display(NULL, ":0"));
    report("openudid_options_set_display(options freed)", openudid_options_set_display(freed, ":0"));
    report("openudid_options_set_selections(options NULL)", openudid_options_set_selections(NULL, 1));
    report("openudid_options_set_selections(options forged)", openudid_options_set_selections((openudid_options *)(void *)forged_storage, 1));
    report("openudid_options_set_namespace(options NULL)", openudid_options_set_namespace(NULL, "ns"));
    report("openudid_options_set_mirror(options NULL)", openudid_options_set_mirror(NULL, OPENUDID_MIRROR_FILE));
    report("openudid_options_set_policy(options NULL)", openudid_options_set_policy(NULL, OPENUDID_POLICY_KEEP_LOCAL));
    report("openudid_options_set_consent_required(options NULL)", openudid_options_set_consent_required(NULL, 1));
    openudid_options_new(&options);
    report("openudid_options_set_namespace(ns \"bad ns!\")", openudid_options_set_namespace(options, "bad ns!"));
    report("openudid_options_set_namespace(ns \"\")", openudid_options_set_namespace(options, ""));
    report("openudid_options_set_mirror(mirror 42)", openudid_options_set_mirror(options, (openudid_mirror)42));
    report("openudid_options_set_policy(policy -3)", openudid_options_set_policy(options, (openudid_policy)-3));
    report("openudid_open_with(options forged)", openudid_open_with("org.example.bad", NULL, (openudid_options *)(void *)forged_storage, &udid));
    report("openudid_open_with(app NULL)", openudid_open_with(NULL, NULL, options, &udid));
    report("openudid_open_with(out NULL)", openudid_open_with("org.example.bad", NULL, options, NULL));
    /* A display the options name must open; without selections it is not used. */
    openudid_options_set_display(options, ":4093");
    report("openudid_open_with(display \":4093\")", openudid_open_with("org.example.bad", NULL, options, &udid));
    report("openudid_open_with(out set to NULL without a display)", udid == NULL ? OPENUDID_OK : -100);
    openudid_options_set_selections(options, 0);
    openudid_options_set_mirror(options, OPENUDID_MIRROR_FILE);
    report("openudid_open_with", openudid_open_with("org.example.bad", NULL, options, &udid));
    openudid_options_free(options);
    openudid_options_free(options);
    openudid_options_free(NULL);
    said("openudid_options_free(twice, NULL)", "survived");

    /* Values. */
    report("openudid_value(handle NULL)", openudid_value(NULL, value));
    report("openudid_value(out NULL)", openudid_value(udid, NULL));
    report("openudid_value(handle forged)", openudid_value(forged, value));
    report("openudid_value_n(size 40)", openudid_value_n(udid, value, 40));
    report("openudid_value_n(size 0)", openudid_value_n(udid, value, 0));
    report("openudid_value_n(out NULL)", openudid_value_n(udid, NULL, sizeof value));
    report("openudid_value_n(handle NULL)", openudid_value_n(NULL, value, sizeof value));
    report("openudid_app_value(handle NULL)", openudid_app_value(NULL, app_value));
    report("openudid_app_value(out NULL)", openudid_app_value(udid, NULL));
    report("openudid_app_value_n(size 36)", openudid_app_value_n(udid, app_value, 36));
    report("openudid_app_value_n(out NULL)", openudid_app_value_n(udid, NULL, sizeof app_value));
    report("openudid_app_value_n(handle NULL)", openudid_app_value_n(NULL, app_value, sizeof app_value));
    report("openudid_refresh(handle NULL)", openudid_refresh(NULL));
    json = openudid_report_json(NULL);
    report("openudid_report_json(handle NULL)", json == NULL ? OPENUDID_EINVAL : -100);
    openudid_free(json);
    openudid_free(NULL);
    said("openudid_free(NULL)", "survived");

    /* Participation and opting out. */
    report("openudid_participate(handle NULL)", openudid_participate(NULL, NULL, NULL));
    report("openudid_participate", openudid_participate(udid, NULL, NULL));
    report("openudid_participate(twice)", openudid_participate(udid, NULL, NULL));
    report("openudid_participate_async(handle NULL)", openudid_participate_async(NULL, NULL, NULL));
    report("openudid_participate_async(already participating)", openudid_participate_async(udid, NULL, NULL));
    report("openudid_participate_full(handle NULL)", openudid_participate_full(NULL, NULL, NULL, NULL));
    report("openudid_participate_full(already participating)", openudid_participate_full(udid, NULL, NULL, NULL));
    report("openudid_participate_async_full(handle NULL)", openudid_participate_async_full(NULL, NULL, NULL, NULL));
    report("openudid_participate_async_full(already participating)", openudid_participate_async_full(udid, NULL, NULL, NULL));
    {
        /* Closed while its first resolution still runs: nothing may outlive the handle. */
        openudid *starting = NULL;
        report("openudid_open(starting)", openudid_open("org.example.starting", NULL, &starting));
        report("openudid_participate_async", openudid_participate_async(starting, NULL, NULL));
        report("openudid_participate_async(twice)", openudid_participate_async(starting, NULL, NULL));
        openudid_close(starting);
        said("openudid_close(while starting)", "survived");
    }
    report("openudid_opt_out(handle NULL)", openudid_opt_out(NULL));
    report("openudid_opt_in(handle NULL)", openudid_opt_in(NULL));
    report("openudid_grant_consent(handle NULL)", openudid_grant_consent(NULL));
    report("openudid_withdraw_consent(handle NULL)", openudid_withdraw_consent(NULL));
    report("openudid_has_consent(handle NULL)", openudid_has_consent(NULL));
    report("openudid_has_consent", openudid_has_consent(udid));

    /* A closed handle is not open any more, whatever it is given. */
    closed = udid;
    openudid_close(udid);
    report("openudid_value(handle closed)", openudid_value(closed, value));
    report("openudid_opt_out(handle closed)", openudid_opt_out(closed));
    json = openudid_report_json(closed);
    report("openudid_report_json(handle closed)", json == NULL ? OPENUDID_EINVAL : -100);
    openudid_close(closed);
    openudid_close(NULL);
    openudid_close(forged);
    said("openudid_close(twice, NULL, forged)", "survived");

    /* Removing apps. */
    report("openudid_remove_app(app NULL)", openudid_remove_app(NULL));
    report("openudid_remove_app(app \"x\")", openudid_remove_app("x"));
    report("openudid_remove_app_in(app NULL)", openudid_remove_app_in(NULL, "ns"));
    report("openudid_remove_app_in(ns \"bad ns!\")", openudid_remove_app_in("org.example.bad", "bad ns!"));
    report("openudid_reset_everywhere(ns \"bad ns!\")", openudid_reset_everywhere("bad ns!", NULL));
    json = (char *)"untouched";
    report("openudid_forget_everything(flags 0x6)", openudid_forget_everything(0x6, &json));
    report("openudid_forget_everything(listing NULL on failure)", json == NULL ? OPENUDID_OK : -100);
    report("openudid_forget_everything(listing NULL)", openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, NULL));

    /* Texts. */
    said("openudid_strerror(12345)", openudid_strerror(12345));
    said("openudid_strerror(OPENUDID_OK)", openudid_strerror(OPENUDID_OK));
    for (code = OPENUDID_EINVAL; code >= OPENUDID_ENOMEM; code--) {
        char call[64];
        snprintf(call, sizeof call, "openudid_strerror(%d)", code);
        said(call, openudid_strerror(code));
    }
    said("openudid_version", openudid_version());
    openudid_remove_app("x");
    said("openudid_last_error", openudid_last_error());
}

/* Without HOME or XDG directories: nothing that keeps files can work. */
static void no_home(void) {
    openudid *udid = NULL;
    report("openudid_open(no home)", openudid_open("org.example.bad", NULL, &udid));
    report("openudid_opt_out_everywhere(no home)", openudid_opt_out_everywhere());
    report("openudid_opt_in_everywhere(no home)", openudid_opt_in_everywhere());
    report("openudid_remove_app(no home)", openudid_remove_app("org.example.bad"));
    report("openudid_remove_app_in(no home)", openudid_remove_app_in("org.example.bad", "ns"));
    report("openudid_reset_everywhere(no home)", openudid_reset_everywhere(NULL, NULL));
    report("openudid_forget_everything(no home)", openudid_forget_everything(OPENUDID_FORGET_DRY_RUN, NULL));
    said("openudid_is_opted_out_everywhere(no home)", openudid_is_opted_out_everywhere() ? "1" : "0");
}

/* With XDG directories below a regular file: every write fails. */
static void no_store(void) {
    openudid *udid = NULL;
    openudid_options *options = NULL;
    openudid_options_new(&options);
    openudid_options_set_selections(options, 0);
    openudid_options_set_mirror(options, OPENUDID_MIRROR_NONE);
    report("openudid_open_with(no store)", openudid_open_with("org.example.bad", NULL, options, &udid));
    openudid_options_free(options);
    report("openudid_opt_out(no store)", openudid_opt_out(udid));
    report("openudid_opt_out_everywhere(no store)", openudid_opt_out_everywhere());
    report("openudid_reset_everywhere(no store)", openudid_reset_everywhere(NULL, NULL));
    openudid_close(udid);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "arguments";
    if (strcmp(mode, "no-home") == 0) {
        no_home();
    } else if (strcmp(mode, "no-store") == 0) {
        no_store();
    } else {
        arguments();
    }
    printf("done\n");
    return 0;
}
