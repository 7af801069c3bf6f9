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
/* Put SimGrid's clock back to 0 between two runs in one process (no actor, timer or activity
 * left), so that a run gives exactly what it gives in a process of its own: a second run from
 * the first's end time does not (measured: a 64-GPU plan's iteration time moved 0.3% after
 * another plan's run; events close in time order differently at another origin). SimGrid 3.32
 * has no call for it: its clock is a static member of its engine's implementation class, which
 * libsimgrid exports without declaring it in an installed header; it is found by its symbol
 * name and written only if it holds simgrid_get_clock()'s value. Returns 1 when the clock is
 * 0, 0 when it could not be reset (then the run counts from its start, htae_run). */
int htae_clock_restart(void);

#ifdef __cplusplus
}
#endif

#endif
