/* The interrupt request: set from a signal handler, read by the running
 * probe (a child trial's supervisor polls it; an in-process probe checks it
 * before each trial), and consumed by the probe it stops. */
#include "internal.h"

#include <signal.h>

static volatile sig_atomic_t requested;

void batchfit_interrupt(int signal_number)
{
    requested = signal_number > 0 ? signal_number : SIGINT;
}

int batchfit__interrupt_pending(void)
{
    return requested;
}

void batchfit__interrupt_clear(void)
{
    requested = 0;
}

int batchfit_interrupt_take(void)
{
    int signal_number = requested;
    requested = 0;
    return signal_number;
}
