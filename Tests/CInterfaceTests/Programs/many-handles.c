/*
 * A host with as many participating handles as there are slots: many-handles NAMESPACE COUNT
 *
 * Opens COUNT handles of apps org.example.many0 ... in NAMESPACE and makes
 * each participate, with a callback (its own thread) on every other one.
 * Prints "base T F" (the process's threads and open descriptors before),
 * "participating T F" (with every handle participating), "extra RC MESSAGE"
 * (one more handle's openudid_participate), "closed-us N" (the microseconds
 * closing all COUNT handles took), then "done".
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <openudid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long threads(void) {
    FILE *file = fopen("/proc/self/status", "r");
    char line[256];
    long value = -1;
    while (file != NULL && fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, "Threads:", 8) == 0) {
            value = strtol(line + 8, NULL, 10);
            break;
        }
    }
    if (file != NULL) fclose(file);
    return value;
}

static long descriptors(void) {
    DIR *directory = opendir("/proc/self/fd");
    long count = 0;
    struct dirent *entry;
    while (directory != NULL && (entry = readdir(directory)) != NULL) {
        if (entry->d_name[0] != '.') count++;
    }
    if (directory != NULL) closedir(directory);
    return count - 1; /* the directory's own */
}

static void on_change(const char *id, void *ctx) {
    (void)id;
    (void)ctx;
}

static openudid *open_app(const char *namespace, int index) {
    openudid_options *options = NULL;
    openudid *udid = NULL;
    char app[64];
    snprintf(app, sizeof app, "org.example.many%d", index);
    openudid_options_new(&options);
    openudid_options_set_namespace(options, namespace);
    openudid_options_set_mirror(options, OPENUDID_MIRROR_NONE);
    if (openudid_open_with(app, NULL, options, &udid) != OPENUDID_OK) {
        fprintf(stderr, "open %s: %s\n", app, openudid_last_error());
        exit(1);
    }
    openudid_options_free(options);
    return udid;
}

int main(int argc, char **argv) {
    openudid **handles;
    openudid *extra;
    struct timespec started, ended;
    int count, i, rc;
    if (argc < 3) return 2;
    count = atoi(argv[2]);
    handles = calloc((size_t)count, sizeof *handles);
    if (handles == NULL) return 1;
    printf("base %ld %ld\n", threads(), descriptors());
    for (i = 0; i < count; i++) {
        handles[i] = open_app(argv[1], i);
        if (openudid_participate(handles[i], i % 2 == 0 ? on_change : NULL, NULL) != OPENUDID_OK) {
            fprintf(stderr, "participate %d: %s\n", i, openudid_last_error());
            return 1;
        }
    }
    printf("participating %ld %ld\n", threads(), descriptors());
    extra = open_app(argv[1], count);
    rc = openudid_participate(extra, NULL, NULL);
    printf("extra %d %s\n", rc, rc == OPENUDID_OK ? "" : openudid_last_error());
    openudid_close(extra);
    clock_gettime(CLOCK_MONOTONIC, &started);
    for (i = 0; i < count; i++) openudid_close(handles[i]);
    clock_gettime(CLOCK_MONOTONIC, &ended);
    printf("closed-us %ld\n", (long)((ended.tv_sec - started.tv_sec) * 1000000L + (ended.tv_nsec - started.tv_nsec) / 1000L));
    free(handles);
    printf("done\n");
    fflush(stdout);
    return 0;
}
