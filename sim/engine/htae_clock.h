/* htae_clock.h: waits on simulated time that add nothing to SimGrid's sharing system: a kernel
 * timer wakes the actor, where a sleep or a timeout would be one more ptask_L07 action. */
#ifndef PROTOSIM_HTAE_CLOCK_H
#define PROTOSIM_HTAE_CLOCK_H

#include <simgrid/exec.h>
#include <simgrid/semaphore.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Block the calling actor until simulated time `date` (at once if it has passed). */
void htae_wait_until(double date);
/* Acquire sem, or give up at simulated time `date`: 1 if the date came first, else 0 (sem
 * acquired). A release at the very instant the date comes may stay on sem: callers re-check
 * their condition after every acquisition (as with sg_sem_acquire_timeout). */
int htae_sem_acquire_until(sg_sem_t sem, double date);
/* Wait for any of execs[0 .. n) to end, or for simulated time `date`: the index of the one that
 * ended (its handle then released, as sg_exec_wait_any does), or -1 at the date (every handle
 * kept: 3.32's sg_exec_wait_any_for releases them all on a timeout). */
ssize_t htae_exec_wait_any_until(sg_exec_t *execs, size_t n, double date);
/* htae_clock_restart, the engine's public call that puts the clock back to 0: htae.h. */

#ifdef __cplusplus
}
#endif

#endif
