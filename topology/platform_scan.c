/* platform_scan.c: the platform file read with libxml2 before SimGrid loads it, for what SimGrid
 * does not report as an error with a line: it aborts, crashes, hangs or exits instead.
 *
 * Rules (docs/design-notes.md, "Cluster validation"):
 * - the path is a regular file (a directory made SimGrid's XML scanner exit 2);
 * - the XML is well formed (libxml2's message, line and column); <include> is refused (the
 *   included file would escape these checks);
 * - ids are unique: links among links, netpoints (hosts, routers, zones) among netpoints
 *   (SimGrid aborts on a second link of one name);
 * - a route (or zoneRoute, or bypass route) from src to dst is given once per zone, counting the
 *   reverse of a symmetrical one (SimGrid aborts on the second);
 * - a graph zone (Dijkstra, DijkstraCache, Floyd) joins every vertex to every other: its
 *   vertices with an edge, its GPU hosts, its zones holding GPUs and the gateways its parents'
 *   zoneRoutes go through (an unreachable vertex crashes SimGrid or loops in its route search);
 * - a Full zone has a route (or bypass route) from every GPU-bearing member to every other
 *   required member, and a None zone has at most one: SimGrid silently gives an empty route,
 *   that is infinite bandwidth;
 * - zones are Full, Floyd, Dijkstra, DijkstraCache or None (SimGrid aborts on an unknown
 *   routing, and on some attributes the others need); <cluster> and <peer> elements route every
 *   pair of their hosts by construction.
 * Line numbers of hosts and links are kept for cluster_load's messages. */
#include "platform_scan.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libxml/xmlreader.h>

#include "../sim/base/xalloc.h"

enum { ITEM_HOST, ITEM_ROUTER, ITEM_ZONE, ITEM_LINK };
static const char *const item_kind[] = {"host", "router", "zone", "link"};

typedef struct scan_item {
    char *name;
    int kind, line;
    int zone;         /* item index of the enclosing zone; -1 at the top */
    int gpu;          /* a host with <prop id="gpu">, or a zone holding one */
    int gateway;      /* in its zone, on the way to a gateway of an ancestor's zoneRoute */
    int local;        /* index among its zone's members */
    char routing[24]; /* zones */
} scan_item;

typedef struct scan_route {
    char *src, *dst, *gw_src, *gw_dst; /* gateways: zoneRoutes only */
    int s, d, gs, gd;                  /* item indices; -1 when unknown */
    int zone, sym, bypass, line;
} scan_route;

struct platform_scan {
    const char *path;
    scan_item *items;
    int n_items;
    size_t items_cap;
    scan_route *routes;
    int n_routes;
    size_t routes_cap;
    int *netpoints, n_netpoints; /* item indices of hosts, routers, zones, by name */
    int *links, n_links;         /* item indices of links, by name */
};

/* ------------------------------------------------------------------ reading */

typedef struct reader {
    platform_scan *s;
    xmlTextReaderPtr r;
    int zones[256], depth; /* open zones */
    int host;              /* open <host>, or -1 */
    ps_error *err;
} reader;

static void on_xml_error(void *arg, xmlErrorPtr e)
{
    reader *rd = arg;
    if (!e || e->level < XML_ERR_ERROR)
        return;
    char msg[400];
    snprintf(msg, sizeof msg, "%s", e->message ? e->message : "malformed XML");
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    ps_error_set(rd->err, PS_EINPUT, rd->s->path, e->line, e->int2, "", "not a valid XML file: %s",
                 msg);
}

static char *attr(reader *rd, const char *name)
{
    xmlChar *v = xmlTextReaderGetAttribute(rd->r, BAD_CAST name);
    char *out = v ? xstrdup((const char *)v) : NULL;
    xmlFree(v);
    return out;
}

static int element_line(reader *rd)
{
    xmlNodePtr node = xmlTextReaderCurrentNode(rd->r);
    long line = node ? xmlGetLineNo(node) : -1;
    return line > 0 && line < INT32_MAX ? (int)line : xmlTextReaderGetParserLineNumber(rd->r);
}

static int add_item(reader *rd, int kind)
{
    platform_scan *s = rd->s;
    xgrow(&s->items, sizeof *s->items, (size_t)s->n_items + 1, &s->items_cap);
    scan_item *it = &s->items[s->n_items];
    memset(it, 0, sizeof *it);
    it->name = attr(rd, "id");
    if (!it->name)
        it->name = xstrdup("");
    it->kind = kind;
    it->line = element_line(rd);
    it->zone = rd->depth ? rd->zones[rd->depth - 1] : -1;
    return s->n_items++;
}

static void add_route(reader *rd, int zone_route, int bypass)
{
    platform_scan *s = rd->s;
    xgrow(&s->routes, sizeof *s->routes, (size_t)s->n_routes + 1, &s->routes_cap);
    scan_route *r = &s->routes[s->n_routes++];
    memset(r, 0, sizeof *r);
    r->src = attr(rd, "src");
    r->dst = attr(rd, "dst");
    if (zone_route) {
        r->gw_src = attr(rd, "gw_src");
        r->gw_dst = attr(rd, "gw_dst");
    }
    char *sym = attr(rd, "symmetrical");
    r->sym = !bypass && (!sym || !strcmp(sym, "YES") || !strcmp(sym, "yes"));
    free(sym);
    r->bypass = bypass;
    r->zone = rd->depth ? rd->zones[rd->depth - 1] : -1;
    r->line = element_line(rd);
    r->s = r->d = r->gs = r->gd = -1;
}

static int is(const xmlChar *name, const char *want)
{
    return !strcmp((const char *)name, want);
}

static int graph_routing(const char *routing)
{
    return !strcmp(routing, "Dijkstra") || !strcmp(routing, "DijkstraCache") ||
           !strcmp(routing, "Floyd");
}

/* The routings whose routes this file checks; SimGrid aborts on an unknown one, and others
 * (Star, Vivaldi, Wifi, ...) abort on missing attributes or route every pair over one link. */
static int known_routing(const char *routing)
{
    return graph_routing(routing) || !strcmp(routing, "Full") || !strcmp(routing, "None");
}

/* One start tag. */
static int on_element(reader *rd, const xmlChar *name)
{
    platform_scan *s = rd->s;
    int empty = xmlTextReaderIsEmptyElement(rd->r) == 1;
    if (is(name, "zone") || is(name, "AS")) {
        int z = add_item(rd, ITEM_ZONE);
        char *routing = attr(rd, "routing");
        snprintf(s->items[z].routing, sizeof s->items[z].routing, "%s", routing ? routing : "");
        free(routing);
        if (!known_routing(s->items[z].routing))
            return ps_error_set(rd->err, PS_EINPUT, s->path, s->items[z].line, 0, "routing",
                                "zone '%s': routing '%s' is not one protosim checks (Full, "
                                "Floyd, Dijkstra, DijkstraCache or None)",
                                s->items[z].name, s->items[z].routing);
        if (!empty && rd->depth == (int)(sizeof rd->zones / sizeof *rd->zones))
            return ps_error_set(rd->err, PS_EINPUT, s->path, s->items[z].line, 0, "zone",
                                "zones nested more than %d deep", rd->depth);
        if (!empty)
            rd->zones[rd->depth++] = z;
    } else if (is(name, "cluster") || is(name, "peer")) {
        /* hosts SimGrid makes and routes by construction; a gpu prop applies to each host */
        int z = add_item(rd, ITEM_ZONE);
        snprintf(s->items[z].routing, sizeof s->items[z].routing, "Cluster");
        rd->host = empty ? -1 : z;
    } else if (is(name, "host")) {
        int h = add_item(rd, ITEM_HOST);
        rd->host = empty ? -1 : h;
    } else if (is(name, "router")) {
        add_item(rd, ITEM_ROUTER);
    } else if (is(name, "link")) {
        add_item(rd, ITEM_LINK);
    } else if (is(name, "prop") && rd->host >= 0) {
        char *id = attr(rd, "id");
        if (id && !strcmp(id, "gpu"))
            s->items[rd->host].gpu = 1;
        free(id);
    } else if (is(name, "route") || is(name, "bypassRoute")) {
        add_route(rd, 0, is(name, "bypassRoute"));
    } else if (is(name, "zoneRoute") || is(name, "ASroute") || is(name, "bypassZoneRoute") ||
               is(name, "bypassASroute")) {
        add_route(rd, 1, is(name, "bypassZoneRoute") || is(name, "bypassASroute"));
    } else if (is(name, "include")) {
        return ps_error_set(rd->err, PS_EINPUT, s->path, element_line(rd), 0, "include",
                            "<include> is not supported: give the whole platform in one file");
    }
    return 0;
}

static int read_platform(platform_scan *s, ps_error *err)
{
    reader rd = {.s = s, .host = -1, .err = err};
    rd.r = xmlReaderForFile(s->path, NULL, XML_PARSE_NONET);
    if (!rd.r)
        return ps_error_set(err, PS_EINPUT, s->path, 0, 0, "", "cannot read as XML");
    xmlTextReaderSetStructuredErrorHandler(rd.r, on_xml_error, &rd);
    int ret;
    while (!err->code && (ret = xmlTextReaderRead(rd.r)) == 1) {
        int type = xmlTextReaderNodeType(rd.r);
        const xmlChar *name = xmlTextReaderConstName(rd.r);
        if (type == XML_READER_TYPE_ELEMENT && name)
            on_element(&rd, name);
        else if (type == XML_READER_TYPE_END_ELEMENT && name && rd.depth &&
                 (is(name, "zone") || is(name, "AS")))
            rd.depth--;
        else if (type == XML_READER_TYPE_END_ELEMENT && name &&
                 (is(name, "host") || is(name, "cluster") || is(name, "peer")))
            rd.host = -1;
    }
    if (!err->code && ret < 0)
        ps_error_set(err, PS_EINPUT, s->path, xmlTextReaderGetParserLineNumber(rd.r),
                     xmlTextReaderGetParserColumnNumber(rd.r), "", "not a valid XML file");
    xmlFreeTextReader(rd.r);
    return err->code;
}

/* ------------------------------------------------------------------ names */

static const platform_scan *sort_scan; /* qsort has no context argument */

static int by_name(const void *a, const void *b)
{
    const scan_item *x = &sort_scan->items[*(const int *)a],
                    *y = &sort_scan->items[*(const int *)b];
    int c = strcmp(x->name, y->name);
    return c ? c : (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* Items of kind `links` (1: links, 0: netpoints) sorted by name into *out; a name given twice
 * is an error at its second place. */
static int index_names(platform_scan *s, int links, int **out, int *n_out, ps_error *err)
{
    int *idx = xcalloc((size_t)s->n_items + 1, sizeof *idx), n = 0;
    for (int i = 0; i < s->n_items; i++)
        if ((s->items[i].kind == ITEM_LINK) == links)
            idx[n++] = i;
    sort_scan = s;
    qsort(idx, (size_t)n, sizeof *idx, by_name);
    *out = idx;
    *n_out = n;
    for (int i = 1; i < n; i++) {
        const scan_item *a = &s->items[idx[i - 1]], *b = &s->items[idx[i]];
        if (!strcmp(a->name, b->name))
            return ps_error_set(err, PS_EINPUT, s->path, b->line, 0, "id",
                                "%s id '%s' is already used by the %s at line %d (%s)",
                                item_kind[b->kind], b->name, item_kind[a->kind], a->line,
                                links ? "link ids are unique"
                                      : "hosts, routers and zones share one namespace");
    }
    return 0;
}

/* Item index of the netpoint or link called name, or -1. */
static int find_name(const platform_scan *s, const int *idx, int n, const char *name)
{
    if (!name)
        return -1;
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(s->items[idx[mid]].name, name);
        if (!c)
            return idx[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Route ends to item indices; zones holding GPUs; the members leading to gateways. */
static void resolve(platform_scan *s)
{
    for (int i = 0; i < s->n_items; i++)
        if (s->items[i].kind == ITEM_HOST && s->items[i].gpu)
            for (int z = s->items[i].zone; z >= 0 && !s->items[z].gpu; z = s->items[z].zone)
                s->items[z].gpu = 1;
    for (int i = 0; i < s->n_routes; i++) {
        scan_route *r = &s->routes[i];
        r->s = find_name(s, s->netpoints, s->n_netpoints, r->src);
        r->d = find_name(s, s->netpoints, s->n_netpoints, r->dst);
        r->gs = find_name(s, s->netpoints, s->n_netpoints, r->gw_src);
        r->gd = find_name(s, s->netpoints, s->n_netpoints, r->gw_dst);
        if (r->bypass)
            continue;
        /* the route into a zone ends at its gateway: every zone on the way down must reach it */
        int ends[2][2] = {{r->gs, r->s}, {r->gd, r->d}};
        for (int e = 0; e < 2; e++)
            for (int m = ends[e][0], steps = 0; m >= 0 && m != ends[e][1] && steps < 256;
                 m = s->items[m].zone, steps++)
                s->items[m].gateway = 1;
    }
}

/* ------------------------------------------------------------------ routes */

/* (zone, from, to, bypass) of a route given in the file, for duplicate and existence checks. */
typedef struct route_key {
    int zone, from, to, bypass, route;
} route_key;

static int by_key(const void *a, const void *b)
{
    const route_key *x = a, *y = b;
    int d[] = {x->zone - y->zone, x->from - y->from, x->to - y->to, x->bypass - y->bypass,
               x->route - y->route};
    for (int i = 0; i < 5; i++)
        if (d[i])
            return d[i] < 0 ? -1 : 1;
    return 0;
}

/* Every directed route of the file (a symmetrical one both ways), sorted. */
static route_key *route_keys(const platform_scan *s, int *n_out)
{
    route_key *k = xcalloc((size_t)s->n_routes * 2 + 1, sizeof *k);
    int n = 0;
    for (int i = 0; i < s->n_routes; i++) {
        const scan_route *r = &s->routes[i];
        if (r->s < 0 || r->d < 0)
            continue; /* SimGrid names the unknown end, with its line */
        k[n++] = (route_key){r->zone, r->s, r->d, r->bypass, i};
        if (r->sym && r->s != r->d)
            k[n++] = (route_key){r->zone, r->d, r->s, r->bypass, i};
    }
    qsort(k, (size_t)n, sizeof *k, by_key);
    *n_out = n;
    return k;
}

static int duplicate_routes(const platform_scan *s, const route_key *k, int n, ps_error *err)
{
    for (int i = 1; i < n; i++) {
        const route_key *a = &k[i - 1], *b = &k[i];
        if (a->zone != b->zone || a->from != b->from || a->to != b->to || a->bypass != b->bypass)
            continue;
        const scan_route *later = &s->routes[b->route], *first = &s->routes[a->route];
        return ps_error_set(err, PS_EINPUT, s->path, later->line, 0, "route",
                            "a %sroute from '%s' to '%s' is already given at line %d (routes are "
                            "symmetrical unless symmetrical=\"NO\")",
                            b->bypass ? "bypass " : "", s->items[b->from].name,
                            s->items[b->to].name, first->line);
    }
    return 0;
}

static int has_route(const route_key *k, int n, int zone, int from, int to, int bypass)
{
    route_key want = {zone, from, to, bypass, -1};
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (by_key(&k[mid], &want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && k[lo].zone == zone && k[lo].from == from && k[lo].to == to &&
           k[lo].bypass == bypass;
}

/* ------------------------------------------------------------------ zones */

static const char *what(const scan_item *it)
{
    return it->kind == ITEM_ZONE ? "zone" : it->kind == ITEM_ROUTER ? "router" : "host";
}

/* A zone's routes between its members, as adjacency lists (forward and backward). */
typedef struct zone_graph {
    int n;                   /* members */
    int *start[2], *edge[2]; /* [dir][n + 1], [dir][edges]: 0 along the routes, 1 against */
} zone_graph;

/* A route between two members of its zone (SimGrid refuses the others). */
static int in_zone(const platform_scan *s, const route_key *k)
{
    return !k->bypass && s->items[k->from].zone == k->zone && s->items[k->to].zone == k->zone;
}

static void graph_build(const platform_scan *s, const route_key *k, int lo, int hi, int n,
                        zone_graph *g)
{
    g->n = n;
    for (int dir = 0; dir < 2; dir++) {
        g->start[dir] = xcalloc((size_t)n + 2, sizeof *g->start[dir]);
        g->edge[dir] = xcalloc((size_t)(hi - lo) + 1, sizeof *g->edge[dir]);
        for (int i = lo; i < hi; i++)
            if (in_zone(s, &k[i]))
                g->start[dir][s->items[dir ? k[i].to : k[i].from].local + 2]++;
        for (int v = 0; v < n; v++)
            g->start[dir][v + 2] += g->start[dir][v + 1];
        for (int i = lo; i < hi; i++)
            if (in_zone(s, &k[i])) {
                int u = s->items[dir ? k[i].to : k[i].from].local;
                int v = s->items[dir ? k[i].from : k[i].to].local;
                g->edge[dir][g->start[dir][u + 1]++] = v;
            }
    }
}

static void graph_free(zone_graph *g)
{
    for (int dir = 0; dir < 2; dir++) {
        free(g->start[dir]);
        free(g->edge[dir]);
    }
}

/* seen[v] = 1 for the members reached from `from` (dir 1: that reach `from`). */
static void graph_reach(const zone_graph *g, int from, int dir, char *seen)
{
    int *queue = xcalloc((size_t)g->n + 1, sizeof *queue), head = 0, tail = 0;
    memset(seen, 0, (size_t)g->n);
    seen[from] = 1;
    queue[tail++] = from;
    while (head < tail) {
        int u = queue[head++];
        for (int e = g->start[dir][u]; e < g->start[dir][u + 1]; e++)
            if (!seen[g->edge[dir][e]]) {
                seen[g->edge[dir][e]] = 1;
                queue[tail++] = g->edge[dir][e];
            }
    }
    free(queue);
}

/* A graph zone: its required members and every member with a route, joined both ways. */
static int check_graph_zone(const platform_scan *s, int z, const int *member, int n,
                            const route_key *k, int lo, int hi, ps_error *err)
{
    zone_graph g;
    graph_build(s, k, lo, hi, n, &g);
    char *need = xcalloc((size_t)n + 1, 1), *seen = xcalloc((size_t)n + 1, 1);
    int first = -1;
    for (int v = 0; v < n; v++) {
        const scan_item *it = &s->items[member[v]];
        need[v] = it->gpu || it->gateway || g.start[0][v + 1] > g.start[0][v] ||
                  g.start[1][v + 1] > g.start[1][v];
        if (need[v] && first < 0)
            first = v;
    }
    for (int dir = 0; first >= 0 && dir < 2 && !err->code; dir++) {
        graph_reach(&g, first, dir, seen);
        for (int v = 0; v < n && !err->code; v++)
            if (need[v] && !seen[v]) {
                const scan_item *a = &s->items[member[first]], *b = &s->items[member[v]];
                if (dir)
                    a = b, b = &s->items[member[first]];
                ps_error_set(err, PS_EINPUT, s->path, s->items[member[v]].line, 0, "route",
                             "zone '%s' (routing %s) has no route from %s '%s' to %s '%s' "
                             "(a graph zone must join all its vertices both ways)",
                             s->items[z].name, s->items[z].routing, what(a), a->name, what(b),
                             b->name);
            }
    }
    free(need);
    free(seen);
    graph_free(&g);
    return err->code;
}

/* A Full or None zone: a route from every GPU-bearing member to every other required one, and
 * back. */
static int check_pairs_zone(const platform_scan *s, int z, const int *member, int n,
                            const route_key *k, int n_keys, ps_error *err)
{
    int *req = xcalloc((size_t)n + 1, sizeof *req), n_req = 0;
    for (int v = 0; v < n; v++)
        if (s->items[member[v]].gpu || s->items[member[v]].gateway)
            req[n_req++] = member[v];
    for (int i = 0; i < n_req && !err->code; i++)
        for (int j = 0; j < n_req && !err->code; j++) {
            const scan_item *a = &s->items[req[i]], *b = &s->items[req[j]];
            if (i == j || !(a->gpu || b->gpu) || has_route(k, n_keys, z, req[i], req[j], 0) ||
                has_route(k, n_keys, z, req[i], req[j], 1))
                continue;
            ps_error_set(err, PS_EINPUT, s->path, s->items[z].line, 0, "route",
                         "zone '%s' (routing %s) has no route from %s '%s' to %s '%s' (SimGrid "
                         "would move their data over no link at all)",
                         s->items[z].name, s->items[z].routing, what(a), a->name, what(b), b->name);
        }
    free(req);
    return err->code;
}

/* Members of every zone (counting sort by enclosing zone), then each zone's rule: graph zones
 * (pairs 0), or Full and None zones (pairs 1). */
static int check_zones(platform_scan *s, const route_key *k, int n_keys, int pairs, ps_error *err)
{
    int *start = xcalloc((size_t)s->n_items + 2, sizeof *start);
    int *member = xcalloc((size_t)s->n_items + 1, sizeof *member);
    for (int i = 0; i < s->n_items; i++)
        if (s->items[i].kind != ITEM_LINK && s->items[i].zone >= 0)
            start[s->items[i].zone + 2]++;
    for (int z = 0; z < s->n_items; z++)
        start[z + 2] += start[z + 1];
    for (int i = 0; i < s->n_items; i++)
        if (s->items[i].kind != ITEM_LINK && s->items[i].zone >= 0) {
            int z = s->items[i].zone;
            s->items[i].local = start[z + 1] - start[z];
            member[start[z + 1]++] = i;
        }
    int lo = 0;
    while (lo < n_keys && k[lo].zone < 0)
        lo++;
    for (int z = 0; z < s->n_items && !err->code; z++) {
        int hi = lo;
        while (hi < n_keys && k[hi].zone == z)
            hi++;
        const scan_item *it = &s->items[z];
        int n = start[z + 1] - start[z];
        if (it->kind == ITEM_ZONE && !pairs && graph_routing(it->routing))
            check_graph_zone(s, z, member + start[z], n, k, lo, hi, err);
        else if (it->kind == ITEM_ZONE && pairs &&
                 (!strcmp(it->routing, "Full") || !strcmp(it->routing, "None")))
            check_pairs_zone(s, z, member + start[z], n, k, n_keys, err);
        lo = hi;
    }
    free(start);
    free(member);
    return err->code;
}

/* ------------------------------------------------------------------ API */

int platform_scan_file(const char *path, platform_scan **out, ps_error *err)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "", "cannot open: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "", "not a regular file%s",
                            S_ISDIR(st.st_mode) ? " (a directory)" : "");
    platform_scan *s = xcalloc(1, sizeof *s);
    s->path = path;
    int n_keys = 0;
    route_key *k = NULL;
    if (!read_platform(s, err) && !index_names(s, 0, &s->netpoints, &s->n_netpoints, err) &&
        !index_names(s, 1, &s->links, &s->n_links, err)) {
        resolve(s);
        k = route_keys(s, &n_keys);
        if (!duplicate_routes(s, k, n_keys, err))
            check_zones(s, k, n_keys, 0, err);
    }
    free(k);
    if (err->code) {
        platform_scan_free(s);
        return err->code;
    }
    *out = s;
    return 0;
}

int platform_scan_check_pairs(platform_scan *s, ps_error *err)
{
    int n_keys;
    route_key *k = route_keys(s, &n_keys);
    check_zones(s, k, n_keys, 1, err);
    free(k);
    return err->code;
}

int platform_scan_line(const platform_scan *s, const char *kind, const char *name)
{
    if (!s)
        return 0;
    int link = !strcmp(kind, "link");
    int i = link ? find_name(s, s->links, s->n_links, name)
                 : find_name(s, s->netpoints, s->n_netpoints, name);
    return i >= 0 ? s->items[i].line : 0;
}

void platform_scan_free(platform_scan *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_items; i++)
        free(s->items[i].name);
    for (int i = 0; i < s->n_routes; i++) {
        free(s->routes[i].src);
        free(s->routes[i].dst);
        free(s->routes[i].gw_src);
        free(s->routes[i].gw_dst);
    }
    free(s->items);
    free(s->routes);
    free(s->netpoints);
    free(s->links);
    free(s);
}
