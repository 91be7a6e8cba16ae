/*
 * Closes a handle twice with other handles opened in between: handles
 *
 * Each of 500 rounds opens a handle A, closes it, opens 16 more (an
 * allocator that hands out addresses would put one of them where A was)
 * and closes A again. The second close must be a no-op: every one of the 16
 * must still be open afterwards, and none may equal A. Prints "rounds N",
 * "reused N" (rounds where a new handle equalled A), "closed-live N" (rounds
 * where a live handle stopped answering) and "done". Run it under
 * AddressSanitizer too: nothing may touch freed memory.
 */
#include <openudid.h>
#include <stdio.h>

#define ROUNDS 500
#define OTHERS 16

int main(void) {
    int round, i, reused = 0, closed_live = 0;
    for (round = 0; round < ROUNDS; round++) {
        openudid *a = NULL;
        openudid *others[OTHERS];
        int reused_here = 0, closed_here = 0;
        if (openudid_open("org.example.handles", NULL, &a) != OPENUDID_OK) {
            fprintf(stderr, "open: %s\n", openudid_last_error());
            return 1;
        }
        openudid_close(a);
        for (i = 0; i < OTHERS; i++) {
            if (openudid_open("org.example.handles", NULL, &others[i]) != OPENUDID_OK) {
                fprintf(stderr, "open: %s\n", openudid_last_error());
                return 1;
            }
            if (others[i] == a) reused_here = 1;
        }
        openudid_close(a);
        /* A closed handle answers OPENUDID_EINVAL; an open one 0 or 1. */
        if (openudid_has_consent(a) != OPENUDID_EINVAL) closed_here = 1;
        for (i = 0; i < OTHERS; i++) {
            if (openudid_has_consent(others[i]) < 0) closed_here = 1;
            openudid_close(others[i]);
        }
        reused += reused_here;
        closed_live += closed_here;
    }
    printf("rounds %d\nreused %d\nclosed-live %d\ndone\n", ROUNDS, reused, closed_live);
    return 0;
}
