/* htae_clock.h: waits on simulated time that add nothing to SimGrid's sharing system: a kernel
 * timer wakes the actor, where a sleep or a timeout would be one more ptask_L07 action. */
#ifndef PROTOSIM_HTAE_CLOCK_H
#define PROTOSIM_HTAE_CLOCK_H

#include <simgrid/semaphore.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Block the calling actor until simulated time `date` (at once if it has passed). */
void htae_wait_until(double date);
/* Acquire sem, or give up at simulated time `date`: 1 if the date came first, else 0 (sem
 * acquired). A release at the very instant the date comes may stay on sem: callers re-check
 * their condition after every acquisition (as with sg_sem_acquire_timeout). */
int htae_sem_acquire_until(sg_sem_t sem, double date);
/* htae_clock_restart, the engine's public call that puts the clock back to 0: htae.h. */

#ifdef __cplusplus
}
#endif

#endif
