/* The interrupt request: set from a signal handler, read by the running
 * probe (a child trial's supervisor polls it; an in-process probe checks it
 * before each trial), and consumed by the probe it stops. A lock-free
 * atomic, so that taking it (read and clear at once) loses no signal that
 * lands in between. */
#include "internal.h"

#include <signal.h>
#include <stdatomic.h>

#if ATOMIC_INT_LOCK_FREE != 2
#error "batchfit's interrupt request needs a lock-free atomic int (async-signal-safe)"
#endif

static atomic_int requested;

void batchfit_interrupt(int signal_number)
{
    atomic_store(&requested, signal_number > 0 ? signal_number : SIGINT);
}

int batchfit__interrupt_pending(void)
{
    return atomic_load(&requested);
}

void batchfit__interrupt_clear(void)
{
    atomic_store(&requested, 0);
}

int batchfit_interrupt_take(void)
{
    return atomic_exchange(&requested, 0);
}
