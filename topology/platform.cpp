/* platform.cpp: the C++ shim between protosim's C code and SimGrid's platforms: loading an XML
 * file (SimGrid's exceptions become a message and a line number), and building a cluster
 * description's platform directly, routed by a zone of protosim's own (FabricZone). */
#include <simgrid/Exception.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
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
#include <pthread.h>
#include <unistd.h>
#include <exception>
#include <string>

extern "C" {
#include "cluster.h"
#include "cluster_desc.h"
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

/* The thread that started the engine: SimGrid's calls belong to it (cluster_route asserts it
 * where the answer would come from SimGrid: sim/run/run.c compiles on a second thread only on a
 * built platform, whose zone answers alone). */
static pthread_t engine_thread;

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
    engine_thread = pthread_self();
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

namespace
{

using simgrid::kernel::resource::StandardLinkImpl;
using simgrid::kernel::routing::NetPoint;
using simgrid::kernel::routing::Route;

/* The one zone of a built platform: every GPU host in it, routes computed by fabric_route from
 * the description's node models and fabric rules (no route listed, no shortest-path search).
 * A host's netpoint id is its rank: the hosts are its only components, created in rank order. */
class FabricZone final : public simgrid::kernel::routing::NetZoneImpl
{
    cluster_desc *desc_;
    std::vector<StandardLinkImpl *> up_, down_;     /* [global link]: its two directions */
    std::vector<double> latency_, bw_up_, bw_down_; /* bw_: read again when scaled */
    std::vector<simgrid::s4u::Link *> link_up_, link_down_;

  public:
    explicit FabricZone(cluster_desc *d)
        : NetZoneImpl("cluster"), desc_(d), up_((size_t)d->layout.n_links, nullptr),
          down_((size_t)d->layout.n_links, nullptr), latency_((size_t)d->layout.n_links, 0.0),
          bw_up_((size_t)d->layout.n_links, 0.0), bw_down_((size_t)d->layout.n_links, 0.0),
          link_up_((size_t)d->layout.n_links, nullptr),
          link_down_((size_t)d->layout.n_links, nullptr)
    {
    }
    ~FabricZone() override
    {
        cluster_desc_free(desc_);
    }

    void set_link(int link, simgrid::s4u::Link *up, simgrid::s4u::Link *down, double latency)
    {
        up_[(size_t)link] = up->get_impl();
        down_[(size_t)link] = down->get_impl();
        latency_[(size_t)link] = latency;
        link_up_[(size_t)link] = up;
        link_down_[(size_t)link] = down;
        bw_up_[(size_t)link] = up->get_bandwidth();
        bw_down_[(size_t)link] = down->get_bandwidth();
    }

    /* The links' bandwidths as they are now (after cluster_scale_bandwidth). */
    void reread_bandwidths()
    {
        for (size_t l = 0; l < link_up_.size(); l++)
            if (link_up_[l]) {
                bw_up_[l] = link_up_[l]->get_bandwidth();
                bw_down_[l] = link_down_[l]->get_bandwidth();
            }
    }

    /* A route's narrowest bandwidth and summed latency, as route_to gives them (the same hops,
     * the latencies added in the same order), without SimGrid's route object. */
    void route_figures(int src, int dst, double *bandwidth, double *latency) const
    {
        fabric_hop hops[FABRIC_MAX_HOPS];
        int n = fabric_route(&desc_->layout, src, dst, hops);
        for (int h = 0; h < n; h++) {
            size_t l = (size_t)hops[h].link;
            *bandwidth = std::min(*bandwidth, hops[h].up ? bw_up_[l] : bw_down_[l]);
            *latency += latency_[l];
        }
    }

    void get_local_route(const NetPoint *src, const NetPoint *dst, Route *into,
                         double *latency) override
    {
        if (src == dst)
            return;
        fabric_hop hops[FABRIC_MAX_HOPS];
        int n = fabric_route(&desc_->layout, (int)src->id(), (int)dst->id(), hops);
        for (int h = 0; h < n; h++) {
            size_t l = (size_t)hops[h].link;
            into->link_list_.push_back(hops[h].up ? up_[l] : down_[l]);
            if (latency)
                *latency += latency_[l];
        }
    }
};

/* Global link `link` of the layout, SPLITDUPLEX, if it exists. */
void build_link(FabricZone *zone, const fabric *f, int link)
{
    if (!fabric_link_exists(f, link))
        return;
    char name[96];
    fabric_link_name(f, link, name, sizeof name);
    double latency = fabric_link_latency(f, link);
    /* its two directions as the shared links <id>_UP and <id>_DOWN, as SimGrid makes a
     * SPLITDUPLEX link of an XML platform (without the wrapper object, which nothing reads) */
    simgrid::s4u::Link *half[2];
    size_t len = std::strlen(name);
    for (int k = 0; k < 2; k++) {
        std::snprintf(name + len, sizeof name - len, "%s", k ? "_DOWN" : "_UP");
        half[k] = zone->create_link(name, {fabric_link_GBps(f, link) * 1e9});
        half[k]->set_latency(latency);
        half[k]->seal();
    }
    zone->set_link(link, half[0], half[1], latency);
}

/* The layout's links in the order an XML platform of it declares them (unit by unit: the
 * nodes' links, then the unit's uplinks), so that both forms give SimGrid's solver the same
 * constraints in the same order; then the GPU hosts in rank order. */
void build_platform(FabricZone *zone, const fabric *f, void **hosts)
{
    for (int u = 0; u < f->units; u++) {
        int first = u * f->per_unit, last = std::min(first + f->per_unit, f->nodes);
        for (int node = first; node < last; node++)
            for (int l = 0; l < f->models[f->model_of[node]]->n_links; l++)
                build_link(zone, f, f->link0[node] + l);
        for (int k = 0; k < fabric_unit_links(f); k++)
            build_link(zone, f, fabric_unit_link(f, u, k));
    }
    char name[64];
    for (int r = 0; r < f->gpus; r++) {
        int node = f->node_of_rank[r];
        const node_model *m = f->models[f->model_of[node]];
        std::snprintf(name, sizeof name, "n%dg%d", node, r - f->rank0[node]);
        simgrid::s4u::Host *h = zone->create_host(name, {m->flops});
        h->set_property("gpu", m->gpu);
        h->set_property("rank", std::to_string(r));
        h->set_property("node", std::to_string(node));
        h->seal();
        hosts[r] = h;
    }
}

/* The built platform's zone, NULL while the platform is XML. */
FabricZone *fabric_zone;

} // namespace

extern "C" int cluster_platform_build(cluster_desc *d, void **hosts, char *msg, size_t msg_cap)
{
    if (!engine_started || platform_loaded) {
        std::snprintf(msg, msg_cap, "%s",
                      engine_started ? "a platform is already loaded in this process"
                                     : "the engine is not started (cluster_engine_start)");
        cluster_desc_free(d);
        return engine_started ? -1 : -2;
    }
    platform_loaded = true;
    try {
        auto *zone = new FabricZone(d); /* the root zone: the engine owns it, and it owns d */
        zone->set_parent(nullptr);
        build_platform(zone, &d->layout, hosts);
        simgrid::s4u::Engine::on_platform_created();
        simgrid::s4u::Engine::get_instance()->seal_platform();
        fabric_zone = zone;
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(msg, msg_cap, "%s", e.what());
    }
    return -1;
}

extern "C" void cluster_platform_bandwidths_changed(void)
{
    if (fabric_zone)
        fabric_zone->reread_bandwidths();
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

/* The route between two hosts: its narrowest bandwidth and summed latency (INFINITY and 0 for a
 * host and itself). On a built platform the zone's own rules answer, without SimGrid's route
 * object (a host's netpoint id is its rank in the file): the same hops, the latencies added in
 * the same order. */
static void host_route(const simgrid::s4u::Host *from, const simgrid::s4u::Host *to,
                       double *bandwidth, double *latency)
{
    *bandwidth = INFINITY;
    *latency = 0.0;
    assert(from && to);
    if (from == to)
        return;
    assert(fabric_zone || pthread_equal(pthread_self(), engine_thread));
    if (fabric_zone) {
        fabric_zone->route_figures((int)from->get_netpoint()->id(), (int)to->get_netpoint()->id(),
                                   bandwidth, latency);
        return;
    }
    std::vector<simgrid::s4u::Link *> links;
    from->route_to(to, links, latency);
    for (const simgrid::s4u::Link *l : links)
        *bandwidth = std::min(*bandwidth, l->get_bandwidth());
}

extern "C" double cluster_host_route_latency(const void *a, const void *b)
{
    double bandwidth, latency;
    host_route(static_cast<const simgrid::s4u::Host *>(a),
               static_cast<const simgrid::s4u::Host *>(b), &bandwidth, &latency);
    return latency;
}

extern "C" int cluster_routes_concurrent(void)
{
    return fabric_zone != nullptr;
}

/* Both figures from one route lookup: sg_host_get_route_bandwidth and sg_host_get_route_latency
 * each look the route up again (folding's checks on 16,384 GPUs ask for hundreds of thousands;
 * 131,072 GPUs about a million). On a built platform the zone's own rules answer, without
 * SimGrid's route object (a host's netpoint id is its rank in the file). */
extern "C" void cluster_route(const cluster *c, int a, int b, double *bandwidth, double *latency)
{
    assert(a >= 0 && a < c->n_gpus && b >= 0 && b < c->n_gpus);
    host_route(static_cast<const simgrid::s4u::Host *>(c->sg_hosts[a]),
               static_cast<const simgrid::s4u::Host *>(c->sg_hosts[b]), bandwidth, latency);
}
