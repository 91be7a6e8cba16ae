/*
 * A C host that uses libopenudid the hard ways, for the tests:
 *
 *   threaded-host threads NAMESPACE THREADS ITERATIONS
 *       THREADS threads each do ITERATIONS times {open; participate (every
 *       other time participate_async); close}; prints "done" at the end.
 *   threaded-host once NAMESPACE
 *       opens, reads the value, closes; prints "result CODE".
 *   threaded-host outlive NAMESPACE
 *       opens and participates, prints "participating", waits for a line on
 *       standard input (the test takes the server away meanwhile), then
 *       refreshes and reads the value, closes; prints "closed".
 *   threaded-host fork NAMESPACE CHILDREN
 *       opens and participates, then forks CHILDREN children one after the
 *       other; each child refreshes and reads the inherited handle,
 *       tries to open a new one, and exits; prints "child CODE CODE CODE"
 *       from each child and "forked" at the end.
 *
 * The library must print nothing: the program itself writes to standard
 * error only on a failure of its own, and the tests check that stream.
 */
#define _POSIX_C_SOURCE 200809L
#include <openudid.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *name_space;
static int iterations;

static void on_change(const char *id, void *context) {
    (void)id;
    (void)context;
}

static int open_handle(const char *app, openudid **out) {
    openudid_options *options;
    int code = openudid_options_new(&options);
    if (code != OPENUDID_OK) return code;
    openudid_options_set_namespace(options, name_space);
    openudid_options_set_mirror(options, OPENUDID_MIRROR_FILE);
    code = openudid_open_with(app, NULL, options, out);
    openudid_options_free(options);
    return code;
}

static void *worker(void *argument) {
    long index = (long)argument;
    char app[64];
    int i;
    snprintf(app, sizeof app, "org.example.thread%ld", index);
    for (i = 0; i < iterations; i++) {
        openudid *udid;
        if (open_handle(app, &udid) != OPENUDID_OK) continue;
        if (i % 2 == 0) {
            openudid_participate(udid, on_change, NULL);
        } else {
            openudid_participate_async(udid, on_change, NULL);
        }
        openudid_close(udid);
    }
    return NULL;
}

static int run_threads(int count) {
    pthread_t threads[64];
    long index;
    if (count < 1 || count > 64) return 2;
    for (index = 0; index < count; index++) {
        if (pthread_create(&threads[index], NULL, worker, (void *)index) != 0) return 1;
    }
    for (index = 0; index < count; index++) pthread_join(threads[index], NULL);
    printf("done\n");
    return 0;
}

static int run_once(void) {
    openudid *udid;
    char value[OPENUDID_VALUE_SIZE];
    int code = open_handle("org.example.once", &udid);
    if (code == OPENUDID_OK) {
        code = openudid_value(udid, value);
        openudid_close(udid);
    }
    printf("result %d\n", code);
    return 0;
}

static int run_outlive(void) {
    openudid *udid;
    char value[OPENUDID_VALUE_SIZE];
    char line[64];
    int code = open_handle("org.example.outlive", &udid);
    if (code != OPENUDID_OK) {
        printf("result %d\n", code);
        return 0;
    }
    openudid_participate(udid, on_change, NULL);
    printf("participating\n");
    fflush(stdout);
    if (fgets(line, sizeof line, stdin) == NULL) line[0] = 0;
    openudid_refresh(udid);
    openudid_value(udid, value);
    openudid_close(udid);
    printf("closed\n");
    return 0;
}

static int run_fork(int children) {
    openudid *udid;
    int code = open_handle("org.example.parent", &udid);
    int i;
    if (code != OPENUDID_OK) {
        printf("result %d\n", code);
        return 0;
    }
    openudid_participate(udid, on_change, NULL);
    fflush(stdout);
    for (i = 0; i < children; i++) {
        int status;
        pid_t child = fork();
        if (child < 0) return 1;
        if (child == 0) {
            char value[OPENUDID_VALUE_SIZE];
            openudid *fresh;
            int refreshed = openudid_refresh(udid);
            int inherited = openudid_value(udid, value);
            int opened = open_handle("org.example.child", &fresh);
            if (opened == OPENUDID_OK) {
                opened = openudid_value(fresh, value);
                openudid_close(fresh);
            }
            printf("child %d %d %d\n", refreshed, inherited, opened);
            fflush(stdout);
            _exit(0);
        }
        if (waitpid(child, &status, 0) != child) return 1;
    }
    openudid_close(udid);
    printf("forked\n");
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: threaded-host threads|once|outlive|fork NAMESPACE ...\n");
        return 2;
    }
    name_space = argv[2];
    if (strcmp(argv[1], "threads") == 0 && argc == 5) {
        iterations = atoi(argv[4]);
        return run_threads(atoi(argv[3]));
    }
    if (strcmp(argv[1], "once") == 0) return run_once();
    if (strcmp(argv[1], "outlive") == 0) return run_outlive();
    if (strcmp(argv[1], "fork") == 0 && argc == 4) return run_fork(atoi(argv[3]));
    fprintf(stderr, "usage: threaded-host threads|once|outlive|fork NAMESPACE ...\n");
    return 2;
}
