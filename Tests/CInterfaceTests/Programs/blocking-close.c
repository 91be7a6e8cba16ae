/*
 * Closes a handle while its on_change callback blocks: blocking-close APP NAMESPACE
 *
 * Participates; the first on_change prints "change HEX" and "blocking", then
 * blocks until a line arrives on standard input. Meanwhile the main thread
 * prints "closing" and calls openudid_close, which must release the
 * selection slot at once and then wait for the callback: the test sees the
 * slot go while the callback still blocks, then sends the line. Then the
 * program prints "returned" (from the callback), "closed" (once
 * openudid_close returns) and "destroyed N" (calls of the destroy function).
 */
#include <openudid.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t entered_cond = PTHREAD_COND_INITIALIZER;
static int entered;
static int destroyed;

static void on_change(const char *id, void *ctx) {
    char line[64];
    (void)ctx;
    pthread_mutex_lock(&lock);
    if (entered) {
        pthread_mutex_unlock(&lock);
        return;
    }
    printf("change %s\nblocking\n", id);
    fflush(stdout);
    entered = 1;
    pthread_cond_broadcast(&entered_cond);
    pthread_mutex_unlock(&lock);
    if (fgets(line, sizeof line, stdin) == NULL) {
        /* The test went away: nothing to wait for. */
    }
    printf("returned\n");
    fflush(stdout);
}

static void on_destroy(void *ctx) {
    (void)ctx;
    destroyed++;
}

int main(int argc, char **argv) {
    openudid *udid = NULL;
    openudid_options *options = NULL;
    if (argc < 3) {
        fprintf(stderr, "usage: blocking-close APP NAMESPACE\n");
        return 2;
    }
    openudid_options_new(&options);
    openudid_options_set_namespace(options, argv[2]);
    openudid_options_set_mirror(options, OPENUDID_MIRROR_FILE);
    if (openudid_open_with(argv[1], NULL, options, &udid) != OPENUDID_OK) {
        fprintf(stderr, "%s\n", openudid_last_error());
        return 1;
    }
    openudid_options_free(options);
    if (openudid_participate_full(udid, on_change, NULL, on_destroy) != OPENUDID_OK) {
        fprintf(stderr, "%s\n", openudid_last_error());
        return 1;
    }
    pthread_mutex_lock(&lock);
    while (!entered) pthread_cond_wait(&entered_cond, &lock);
    pthread_mutex_unlock(&lock);
    printf("closing\n");
    fflush(stdout);
    openudid_close(udid);
    printf("closed\ndestroyed %d\n", destroyed);
    return 0;
}
