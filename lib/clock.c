/* The one clock the library times trials with. */
#include "internal.h"

#include <time.h>

double batchfit__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
