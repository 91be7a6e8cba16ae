/* The program scripts/order-libopenudid runs under callgrind to learn which
   functions of libopenudid a C host runs: what a desktop app does with the
   library when it starts and while it runs. Run twice, in an empty namespace
   and then in the one the first run left, so that both the first start and a
   start with a stored identifier are seen.

   usage: workload APP NAMESPACE */
#include <openudid.h>
#include <stdio.h>
#include <unistd.h>

static void changed(const char *id, void *ctx) {
    (void)id;
    ++*(int *)ctx;
}

static int fail(const char *what) {
    fprintf(stderr, "workload: %s: %s\n", what, openudid_last_error());
    return 1;
}

int main(int argc, char **argv) {
    openudid_options *options;
    openudid *udid;
    char id[OPENUDID_VALUE_SIZE];
    char app_id[OPENUDID_APP_VALUE_SIZE];
    char *report;
    int changes = 0;
    if (argc != 3) return 2;
    if (openudid_options_new(&options) != OPENUDID_OK) return fail("options");
    openudid_options_set_namespace(options, argv[2]);
    openudid_options_set_mirror(options, OPENUDID_MIRROR_FILE);
    if (openudid_open_with(argv[1], NULL, options, &udid) != OPENUDID_OK) return fail("open");
    openudid_options_free(options);
    if (openudid_value(udid, id) != OPENUDID_OK) return fail("value");
    if (openudid_app_value(udid, app_id) != OPENUDID_OK) return fail("app value");
    if (openudid_participate_async(udid, changed, &changes) != OPENUDID_OK) return fail("participate");
    usleep(300000);
    report = openudid_report_json(udid);
    if (report == NULL) return fail("report");
    openudid_free(report);
    if (openudid_opt_out(udid) != OPENUDID_OK || openudid_opt_in(udid) != OPENUDID_OK) return fail("opt-out");
    usleep(100000);
    openudid_close(udid);
    printf("%s %d\n", id, changes);
    return 0;
}
