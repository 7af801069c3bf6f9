/* htae_clock.cpp: waits on simulated time through SimGrid's kernel timers (see htae_clock.h).
 * The timer's callback runs in the engine (maestro), where SimGrid calls take effect at once. */
#include "htae_clock.h"

#include <dlfcn.h>

#include <simgrid/engine.h>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Actor.hpp>

using simgrid::kernel::timer::Timer;

extern "C" void htae_wait_until(double date)
{
    if (date <= simgrid_get_clock())
        return;
    simgrid::s4u::Actor *self = simgrid::s4u::Actor::self();
    Timer::set(date, [self] { self->resume(); });
    simgrid::s4u::this_actor::suspend();
}

extern "C" int htae_sem_acquire_until(sg_sem_t sem, double date)
{
    if (date <= simgrid_get_clock())
        return 1;
    bool fired = false;
    Timer *t = Timer::set(date, [&fired, sem] {
        fired = true;
        sg_sem_release(sem);
    });
    sg_sem_acquire(sem);
    if (!fired)
        t->remove();
    return fired ? 1 : 0;
}

extern "C" int htae_clock_restart(void)
{
    static double *clock_now = static_cast<double *>(
        dlsym(RTLD_DEFAULT, "_ZN7simgrid6kernel10EngineImpl4now_E")); /* EngineImpl::now_ */
    double now = simgrid_get_clock();
    if (now == 0.0)
        return 1;
    if (!clock_now || *clock_now != now || simgrid::s4u::Engine::get_instance()->get_actor_count())
        return 0;
    *clock_now = 0.0;
    return simgrid_get_clock() == 0.0;
}
