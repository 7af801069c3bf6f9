/* platform.cpp: the C++ shim between protosim's C code and SimGrid's platform loading.
 * SimGrid throws on bad platforms; here every exception becomes a message and a line number. */
#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <csignal>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/resource.h>
#include <unistd.h>
#include <exception>
#include <string>

extern "C" {
#include "cluster.h"
}

/* The line SimGrid's XML scanner (flex) is at: exported by libsimgrid 3.32 but declared in no
 * installed header. Read after a parse error that names no line, it is the element's. */
int surf_parse_get_lineno();

static bool engine_started = false;
static bool platform_loaded = false;

/* SimGrid says "Parse error at FILE:LINE: ..." (and "(XML input line LINE" for XML errors). The
 * file name may hold colons, so look for the path we gave it first. */
static int line_of_message(const std::string &msg, const char *path)
{
    size_t at = msg.find(std::string(path) + ":");
    if (at != std::string::npos)
        return std::atoi(msg.c_str() + at + std::strlen(path) + 1);
    at = msg.find("input line ");
    if (at != std::string::npos)
        return std::atoi(msg.c_str() + at + std::strlen("input line "));
    return 0;
}

/* The message without its "Parse error at FILE:LINE: " prefix: ps_error prints the position. */
static const char *without_position(const char *msg, const char *path)
{
    std::string prefix = std::string("Parse error at ") + path + ":";
    if (std::strncmp(msg, prefix.c_str(), prefix.size()))
        return msg;
    const char *rest = std::strstr(msg + prefix.size(), ": ");
    return rest ? rest + 2 : msg;
}

/* The last resort while SimGrid reads a platform: its xbt_assert and xbt_die abort, and its XML
 * scanner exits with 2 (protosim's "does not fit" code) on a read error. platform_scan.c checks
 * the known causes first; an unknown one still ends as an input error (exit 1) naming the file
 * and line, after SimGrid's own message. */
static char loading_path[600];
static volatile sig_atomic_t loading = 0;

static void refuse_platform(void)
{
    char text[800];
    int n = std::snprintf(text, sizeof text,
                          "protosim: error: %s:%d:0: SimGrid refused the platform (its message "
                          "is above)\n",
                          loading_path, surf_parse_get_lineno());
    if (n > 0 && write(STDERR_FILENO, text, (size_t)n) < 0)
        n = 0;
    _exit(1);
}

static void on_abort(int)
{
    refuse_platform();
}

static void on_exit_while_loading(void)
{
    if (loading)
        refuse_platform();
}

/* Arm (1) or disarm (0) the handlers above around simgrid_load_platform and the seal. */
static void guard_loading(int on)
{
    static struct sigaction previous;
    static bool exit_hook = false;
    if (on) {
        if (!exit_hook)
            exit_hook = std::atexit(on_exit_while_loading) == 0;
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_abort;
        sigaction(SIGABRT, &sa, &previous);
        loading = 1;
    } else {
        loading = 0;
        sigaction(SIGABRT, &previous, nullptr);
    }
}

/* SimGrid's max-min solver recurses over every constraint connected to a changed one, on the
 * main thread (maestro): one collective over 16,384 GPUs goes deeper than the usual 8 MiB stack
 * (measured: a crash at 8 MiB, fine unlimited). Linux keeps at least 128 MiB free below the main
 * stack at exec, so the soft limit is raised to 120 MiB (never above the hard limit). */
static void raise_stack_limit()
{
    const rlim_t want = (rlim_t)120 << 20;
    struct rlimit r;
    if (getrlimit(RLIMIT_STACK, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= want)
        return;
    r.rlim_cur = r.rlim_max == RLIM_INFINITY || r.rlim_max > want ? want : r.rlim_max;
    setrlimit(RLIMIT_STACK, &r);
}

static void start_engine()
{
    raise_stack_limit();
    /* ptask_L07 with TCP-gamma 0 gives exact fluid timings (1 GB over 100 GB/s = 10.000 ms);
     * the default LV08 model adds TCP factors that do not describe NVLink. */
    std::string log = "--log=root.thres:critical";
    const char *user_log = std::getenv("PROTOSIM_SIMGRID_LOG");
    if (user_log && *user_log)
        log = std::string("--log=") + user_log;
    static char arg0[] = "protosim";
    static char model[] = "--cfg=host/model:ptask_L07";
    static char gamma[] = "--cfg=network/TCP-gamma:0";
    static char precision[] = "--cfg=surf/precision:1e-9";
    static std::string log_arg;
    log_arg = log;
    char *argv[] = {arg0, model, gamma, precision, &log_arg[0], nullptr};
    int argc = 5;
    simgrid_init(&argc, argv);
    engine_started = true;
}

extern "C" void cluster_engine_start(void)
{
    if (!engine_started)
        start_engine();
}

extern "C" int cluster_platform_load(const char *path, char *msg, size_t msg_cap, int *line)
{
    *line = 0;
    if (!engine_started) {
        std::snprintf(msg, msg_cap, "the engine is not started (cluster_engine_start)");
        return -2;
    }
    if (platform_loaded) {
        /* SimGrid cannot be reset, and a second platform would merge into the first. */
        std::snprintf(msg, msg_cap, "a platform is already loaded in this process");
        return -1;
    }
    bool parsing = true;
    std::snprintf(loading_path, sizeof loading_path, "%s", path);
    guard_loading(1);
    try {
        platform_loaded = true;
        simgrid_load_platform(path);
        parsing = false;
        /* Graph zones (Dijkstra, Floyd) number their vertices when sealed; a route queried
         * before (the compiler asks for routes before the simulation runs, which would seal it)
         * reads unset indices and crashes or loops. */
        simgrid::s4u::Engine::get_instance()->seal_platform();
        guard_loading(0);
        return 0;
    } catch (const std::exception &e) {
        guard_loading(0);
        /* simgrid::ParseError, AssertionError and friends all derive from std::exception. */
        *line = line_of_message(e.what(), path);
        if (*line == 0 && parsing)
            *line = surf_parse_get_lineno();
        std::snprintf(msg, msg_cap, "%s", without_position(e.what(), path));
    } catch (...) {
        guard_loading(0);
        std::snprintf(msg, msg_cap, "unknown error while loading the platform");
    }
    return -1;
}

extern "C" const char *cluster_platform_host_zone(const void *host)
{
    try {
        const auto *h = static_cast<const simgrid::s4u::Host *>(host);
        if (!h || !h->get_englobing_zone())
            return nullptr;
        return h->get_englobing_zone()->get_cname();
    } catch (...) {
        return nullptr;
    }
}

/* Both figures from one route lookup: sg_host_get_route_bandwidth and sg_host_get_route_latency
 * each look the route up again (folding's checks on 16,384 GPUs ask for hundreds of thousands). */
extern "C" void cluster_route(const cluster *c, int a, int b, double *bandwidth, double *latency)
{
    assert(a >= 0 && a < c->n_gpus && b >= 0 && b < c->n_gpus);
    *bandwidth = INFINITY;
    *latency = 0.0;
    if (a == b)
        return;
    auto *from = static_cast<const simgrid::s4u::Host *>(c->sg_hosts[a]);
    auto *to = static_cast<const simgrid::s4u::Host *>(c->sg_hosts[b]);
    assert(from && to);
    std::vector<simgrid::s4u::Link *> links;
    from->route_to(to, links, latency);
    for (const simgrid::s4u::Link *l : links)
        *bandwidth = std::min(*bandwidth, l->get_bandwidth());
}
