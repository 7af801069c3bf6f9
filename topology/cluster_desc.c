/* cluster_desc.c: the cluster description (cluster_desc.h): writing it from node models, and
 * reading it back with every value checked and located. docs/design-notes.md ("Cluster
 * descriptions") has the format and why it replaced the XML as `protosim cluster`'s output.
 *
 *   protosim_cluster: 1
 *   fabric: fat-tree                      # or rail
 *   nodes_per_leaf: 4                     # per leaf switch (fat tree) or scalable unit (rail)
 *   oversubscription: 1
 *   node_models:
 *     - name: dgx-a100
 *       gpu: A100-SXM4-80GB               # topology/devices/devices.yaml
 *       tflops: 312                       # host speed
 *       links:                            # SPLITDUPLEX: each direction has the bandwidth
 *         - {id: g0_nvl, bandwidth_GBps: 300, latency_us: 0.7}
 *       rail_of_gpu: [0, 1, ...]          # the NIC (rail) each GPU sends through
 *       gpu_to_nic:                       # GPU g's route out of the node, its NIC last
 *         - [g0_nic UP]
 *       gpu_to_gpu:                       # every pair i < j once; j -> i is i -> j reversed
 *         - {from: 0, to: 1, route: [g0_nvl UP, g1_nvl DOWN]}
 *   nodes:                                # groups of nodes, ranked node-major in this order
 *     - {model: dgx-a100, count: 2048}
 *   slowdown:                             # optional stragglers: kernels 1.2x as long on rank 5
 *     - {rank: 5, factor: 1.2}
 */
#include "cluster_desc.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/limits.h"
#include "../sim/base/xalloc.h"
#include "../sim/base/yaml_read.h"

#define DESC_VERSION 1

/* ---- writing ---- */

static void write_path(FILE *out, const node_model *m, const node_path *p)
{
    fputc('[', out);
    for (int h = 0; h < p->n; h++)
        fprintf(out, "%s%s %s", h ? ", " : "", m->links[p->hop[h].link].id,
                p->hop[h].up ? "UP" : "DOWN");
    fputc(']', out);
}

/* The length of the valid UTF-8 sequence at s (1 for ASCII), or 0: names are written as
 * valid UTF-8 (an hwloc name cut at a byte limit may end inside a character, which libyaml
 * would refuse to read back). */
static int utf8_length(const unsigned char *s)
{
    int n = s[0] < 0x80             ? 1
            : (s[0] & 0xe0) == 0xc0 ? 2
            : (s[0] & 0xf0) == 0xe0 ? 3
            : (s[0] & 0xf8) == 0xf0 ? 4
                                    : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* s as a double-quoted YAML string (in_comment: as plain text in a comment line); control
 * characters and invalid UTF-8 bytes as '?'. */
static void write_text(FILE *out, const char *s, int in_comment)
{
    const unsigned char *p = (const unsigned char *)s;
    if (!in_comment)
        fputc('"', out);
    while (*p) {
        int n = utf8_length(p);
        if (n == 0 || *p < 0x20) {
            fputc('?', out);
            p++;
            continue;
        }
        if (!in_comment && (*p == '"' || *p == '\\'))
            fputc('\\', out);
        fwrite(p, 1, (size_t)n, out);
        p += n;
    }
    if (!in_comment)
        fputc('"', out);
}

static int same_paths(const node_path *a, const node_path *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i].n != b[i].n)
            return 0;
        for (int h = 0; h < a[i].n; h++)
            if (a[i].hop[h].link != b[i].hop[h].link || a[i].hop[h].up != b[i].hop[h].up)
                return 0;
    }
    return 1;
}

/* Whether two node models are the same in everything the description writes. */
static int same_model(const node_model *a, const node_model *b)
{
    if (strcmp(a->kind, b->kind) || strcmp(a->gpu, b->gpu) || a->flops != b->flops ||
        a->gpus != b->gpus || a->n_links != b->n_links)
        return 0;
    for (int l = 0; l < a->n_links; l++)
        if (strcmp(a->links[l].id, b->links[l].id) || a->links[l].GBps != b->links[l].GBps ||
            a->links[l].latency_s != b->links[l].latency_s)
            return 0;
    return !memcmp(a->nic_of_gpu, b->nic_of_gpu, (size_t)a->gpus * sizeof *a->nic_of_gpu) &&
           same_paths(a->gpu_nic, b->gpu_nic, a->gpus) &&
           same_paths(a->gpu_gpu, b->gpu_gpu, a->gpus * a->gpus);
}

/* Model i's name: its kind, with the group's number when an earlier model has the same kind. */
static void model_name(const node_model *const *models, const int *first, int i, char *buf,
                       size_t cap)
{
    int taken = 0;
    for (int j = 0; j < i && !taken; j++)
        taken = first[j] == j && !strcmp(models[j]->kind, models[i]->kind);
    if (taken)
        snprintf(buf, cap, "%s-%d", models[i]->kind, i + 1);
    else
        snprintf(buf, cap, "%s", models[i]->kind);
}

static void write_model(FILE *out, const node_model *m, const char *name)
{
    fprintf(out, "  - name: ");
    write_text(out, name, 0);
    fprintf(out, "\n    gpu: ");
    write_text(out, m->gpu, 0);
    fprintf(out, "\n    tflops: %.10g\n    links:\n", m->flops / 1e12);
    for (int l = 0; l < m->n_links; l++)
        fprintf(out, "      - {id: %s, bandwidth_GBps: %.10g, latency_us: %.10g}\n", m->links[l].id,
                m->links[l].GBps, m->links[l].latency_s * 1e6);
    fprintf(out, "    rail_of_gpu: [");
    for (int g = 0; g < m->gpus; g++)
        fprintf(out, "%s%d", g ? ", " : "", m->nic_of_gpu[g]);
    fprintf(out, "]\n    gpu_to_nic:\n");
    for (int g = 0; g < m->gpus; g++) {
        fprintf(out, "      - ");
        write_path(out, m, &m->gpu_nic[g]);
        fputc('\n', out);
    }
    fprintf(out, "    gpu_to_gpu:%s\n", m->gpus > 1 ? "" : " []");
    for (int g = 0; g < m->gpus; g++)
        for (int h = g + 1; h < m->gpus; h++) {
            fprintf(out, "      - {from: %d, to: %d, route: ", g, h);
            write_path(out, m, &m->gpu_gpu[g * m->gpus + h]);
            fprintf(out, "}\n");
        }
}

/* The header: the version key first (cluster_desc_sniff looks for it), then what was generated
 * as comments. */
static void write_header(FILE *out, const fabric *f, const node_model *const *models,
                         const int *group_nodes, int n_groups)
{
    fprintf(out, "protosim_cluster: %d\n", DESC_VERSION);
    fprintf(out, "# A protosim cluster description (generated by protosim cluster): %d node%s",
            f->nodes, f->nodes > 1 ? "s" : "");
    for (int i = 0; i < n_groups; i++) {
        fprintf(out, "%s\n#   %d x ", i ? "," : ":", group_nodes[i]);
        write_text(out, models[i]->kind, 1);
        fprintf(out, " (%d ", models[i]->gpus);
        write_text(out, models[i]->gpu, 1);
        fprintf(out, ", %d NIC%s of %g Gb/s)", models[i]->nics, models[i]->nics > 1 ? "s" : "",
                models[i]->nic_GBps * 8);
    }
    fprintf(out,
            ".\n# Load it with --cluster FILE; `protosim cluster ... -o FILE.xml` writes the same "
            "cluster as a\n# SimGrid platform. The nodes: topology/%s; the fabric and its "
            "routes:\n# docs/design-notes.md (\"Fabrics\", \"Cluster descriptions\").\n",
            strncmp(models[0]->kind, "hwloc:", 6) ? "generate.c" : "hwloc_import.c");
}

int cluster_write_description(const node_model *const *models, const int *group_nodes, int n_groups,
                              const cluster_gen_opts *opts, FILE *out, ps_error *err)
{
    fabric f;
    int rc = fabric_init(&f, models, n_groups, NULL, group_nodes, n_groups, opts, err);
    if (rc) {
        fabric_free(&f);
        return rc;
    }
    int *first = xcalloc((size_t)n_groups, sizeof *first), distinct = 0; /* the same model's */
    for (int i = 0; i < n_groups; i++) {
        first[i] = i;
        for (int j = 0; j < i && first[i] == i; j++)
            if (first[j] == j && same_model(models[j], models[i]))
                first[i] = j;
        distinct += first[i] == i;
    }
    if (distinct > PS_MAX_NODE_MODELS) {
        free(first);
        fabric_free(&f);
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                            "--nodes: %d kinds of node, more than %d (protosim's limit)", distinct,
                            PS_MAX_NODE_MODELS);
    }
    write_header(out, &f, models, group_nodes, n_groups);
    fprintf(out, "fabric: %s\nnodes_per_leaf: %d\noversubscription: %.10g\nnode_models:\n",
            enum_name(cluster_fabric_names, f.kind), f.per_unit, f.over);
    fabric_free(&f);
    char name[48];
    for (int i = 0; i < n_groups; i++)
        if (first[i] == i) {
            model_name(models, first, i, name, sizeof name);
            write_model(out, models[i], name);
        }
    fprintf(out, "nodes:\n");
    for (int i = 0; i < n_groups; i++) {
        model_name(models, first, first[i], name, sizeof name);
        fprintf(out, "  - {model: ");
        write_text(out, name, 0);
        fprintf(out, ", count: %d}\n", group_nodes[i]);
    }
    free(first);
    if (ferror(out))
        return ps_error_set(err, PS_EINTERNAL, "", 0, 0, "", "cannot write the description");
    return 0;
}

/* ---- reading ---- */

int cluster_desc_sniff(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char head[4096];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    size_t skip = strspn(head, " \t\r\n");
    if (skip == n || head[skip] == '<')
        return 0;
    for (const char *line = head; line; line = strchr(line + 1, '\n'))
        if (!strncmp(line + (*line == '\n'), "protosim_cluster:", 17))
            return 1;
    size_t len = strlen(path); /* neither: the name decides which loader reports it */
    return !(len > 4 && !strcmp(path + len - 4, ".xml"));
}

/* A string of 1 to cap - 1 characters: a name, an id. `ident`: a letter or '_' first, then
 * letters, digits, '_', '-' or '.'. */
static int read_name(yread_ctx *c, ynode *n, const char *field, int ident, char *out, size_t cap)
{
    const char *s = yread_scalar(n);
    if (!s || !s[0] || strlen(s) >= cap)
        return yread_fail(c, n, field, "expected a name of 1 to %zu characters", cap - 1);
    for (const char *p = s; ident && *p; p++)
        if (!(isalpha((unsigned char)*p) || *p == '_' ||
              (p > s && (isdigit((unsigned char)*p) || *p == '-' || *p == '.'))))
            return yread_fail(c, n, field,
                              "'%s' is not an id: a letter or '_' first, then letters, digits, "
                              "'_', '-' or '.'",
                              s);
    snprintf(out, cap, "%s", s);
    return 0;
}

/* A model's link ids in strcmp order, for hops to name links by binary search (a model may have
 * PS_MAX_NODE_LINKS links and a file a million hops). */
typedef struct link_id {
    const char *id;
    int link;
    ynode *node; /* where it is declared */
} link_id;

static int compare_link_ids(const void *a, const void *b)
{
    const link_id *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->link > y->link) - (x->link < y->link);
}

/* The model's link ids sorted into ids[m->n_links]; a repeated id is an error at its second
 * declaration. */
static int sort_link_ids(yread_ctx *c, const node_model *m, link_id *ids, const char *field)
{
    for (int l = 0; l < m->n_links; l++)
        ids[l].id = m->links[l].id;
    qsort(ids, (size_t)m->n_links, sizeof *ids, compare_link_ids);
    for (int l = 1; l < m->n_links; l++)
        if (!strcmp(ids[l - 1].id, ids[l].id))
            return yread_fail(c, ids[l].node, field, "link '%s' is declared twice in this model",
                              ids[l].id);
    return 0;
}

/* The link named by the first len characters of s, or -1. */
static int find_link(const link_id *ids, int n, const char *s, size_t len)
{
    char name[sizeof(((node_link *)0)->id)];
    if (len >= sizeof name)
        return -1;
    memcpy(name, s, len);
    name[len] = '\0';
    link_id key = {name, -1, NULL};
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(ids[mid].id, key.id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && !strcmp(ids[lo].id, name) ? ids[lo].link : -1;
}

/* One link {id, bandwidth_GBps, latency_us} within cluster.h's ranges; *id_node: its id. */
static int read_link(yread_ctx *c, ynode *n, const char *path, node_model *m, ynode **id_node)
{
    static const char *const keys[] = {"id", "bandwidth_GBps", "latency_us"};
    ynode *id, *bw, *lat;
    char field[192];
    node_link *l = &m->links[m->n_links];
    if (yread_expect_mapping(c, n, path) || yread_check_keys(c, n, path, keys, 3) ||
        !(id = yread_required(c, n, path, "id")) ||
        !(bw = yread_required(c, n, path, "bandwidth_GBps")) ||
        !(lat = yread_required(c, n, path, "latency_us")))
        return c->err->code;
    yread_join_path(field, sizeof field, path, "id");
    if (read_name(c, id, field, 1, l->id, sizeof l->id))
        return c->err->code;
    *id_node = id;
    yread_join_path(field, sizeof field, path, "bandwidth_GBps");
    if (yread_positive(c, bw, field, &l->GBps))
        return c->err->code;
    if (l->GBps * 1e9 < CLUSTER_LINK_BW_MIN || l->GBps * 1e9 > CLUSTER_LINK_BW_MAX)
        return yread_fail(c, bw, field, "%g GB/s is outside [%g, %g] GB/s (1 MB/s to 10 PB/s)",
                          l->GBps, CLUSTER_LINK_BW_MIN / 1e9, CLUSTER_LINK_BW_MAX / 1e9);
    double us;
    yread_join_path(field, sizeof field, path, "latency_us");
    if (yread_nonnegative(c, lat, field, &us))
        return c->err->code;
    if (us * 1e-6 > CLUSTER_LINK_LATENCY_MAX)
        return yread_fail(c, lat, field, "%g us is more than %g s", us, CLUSTER_LINK_LATENCY_MAX);
    l->latency_s = us * 1e-6;
    m->n_links++;
    return 0;
}

/* A route: a list of 1 to NODE_MAX_HOPS hops "LINK UP" or "LINK DOWN", each a declared link. */
static int read_path(yread_ctx *c, ynode *n, const char *field, const node_model *m,
                     const link_id *ids, node_path *p)
{
    int count;
    if (yread_list(c, n, field, &count))
        return c->err->code;
    if (count < 1 || count > NODE_MAX_HOPS)
        return yread_fail(c, n, field, "a route has 1 to %d links, not %d", NODE_MAX_HOPS, count);
    p->n = count;
    for (int h = 0; h < count; h++) {
        ynode *hop = yread_list_item(c, n, h);
        const char *s = yread_scalar(hop);
        const char *space = s ? strchr(s, ' ') : NULL;
        int up = space && !strcmp(space + 1, "UP"), down = space && !strcmp(space + 1, "DOWN");
        if (!up && !down)
            return yread_fail(c, hop, field, "a hop is 'LINK UP' or 'LINK DOWN', not %s%s%s",
                              s ? "'" : yread_kind(hop), s ? s : "", s ? "'" : "");
        int link = find_link(ids, m->n_links, s, (size_t)(space - s));
        if (link < 0)
            return yread_fail(c, hop, field, "link '%.*s' is not in this model's links",
                              (int)(space - s), s);
        p->hop[h].link = link;
        p->hop[h].up = up;
    }
    return 0;
}

/* rail_of_gpu: one rail per GPU, 0 .. PS_MAX_GPUS_PER_NODE - 1 (a node may leave rails out:
 * 16 NICs for 8 GPUs put them on rails 0, 2, ..., 14); sets m->gpus, m->nics (the rails). */
static int read_rails(yread_ctx *c, ynode *n, const char *path, node_model *m)
{
    char field[192];
    yread_join_path(field, sizeof field, path, "rail_of_gpu");
    int count;
    if (yread_list(c, n, field, &count))
        return c->err->code;
    if (count < 1 || count > PS_MAX_GPUS_PER_NODE)
        return yread_fail(c, n, field, "a node has 1 to %d GPUs (one rail each), not %d",
                          PS_MAX_GPUS_PER_NODE, count);
    m->gpus = count;
    m->nic_of_gpu = xcalloc((size_t)count, sizeof *m->nic_of_gpu);
    for (int g = 0; g < count; g++) {
        if (yread_int(c, yread_list_item(c, n, g), field, 0, PS_MAX_GPUS_PER_NODE - 1,
                      &m->nic_of_gpu[g]))
            return c->err->code;
        m->nics = m->nic_of_gpu[g] + 1 > m->nics ? m->nic_of_gpu[g] + 1 : m->nics;
    }
    return 0;
}

/* gpu_to_nic: one route per GPU; the first NIC link's bandwidth is the model's nic_GBps. */
static int read_nic_routes(yread_ctx *c, ynode *n, const char *path, node_model *m,
                           const link_id *ids)
{
    char field[192];
    yread_join_path(field, sizeof field, path, "gpu_to_nic");
    int count;
    if (yread_list(c, n, field, &count))
        return c->err->code;
    if (count != m->gpus)
        return yread_fail(c, n, field, "%d routes for %d GPUs (rail_of_gpu): one per GPU", count,
                          m->gpus);
    m->gpu_nic = xcalloc((size_t)count, sizeof *m->gpu_nic);
    for (int g = 0; g < count; g++)
        if (read_path(c, yread_list_item(c, n, g), field, m, ids, &m->gpu_nic[g]))
            return c->err->code;
    for (int g = 0; g < count; g++) /* a NIC is on one rail: GPUs sharing it share the rail */
        for (int h = 0; h < g; h++) {
            int nic = m->gpu_nic[g].hop[m->gpu_nic[g].n - 1].link;
            if (nic == m->gpu_nic[h].hop[m->gpu_nic[h].n - 1].link &&
                m->nic_of_gpu[g] != m->nic_of_gpu[h])
                return yread_fail(c, yread_list_item(c, n, g), field,
                                  "GPUs %d and %d leave through the same NIC %s but are on rails "
                                  "%d and %d (rail_of_gpu): GPUs sharing a NIC share its rail",
                                  h, g, m->links[nic].id, m->nic_of_gpu[h], m->nic_of_gpu[g]);
        }
    m->nic_GBps = m->links[m->gpu_nic[0].hop[m->gpu_nic[0].n - 1].link].GBps;
    return 0;
}

/* gpu_to_gpu: every pair i < j once; j -> i is set to i -> j reversed. */
static int read_gpu_routes(yread_ctx *c, ynode *n, const char *path, node_model *m,
                           const link_id *ids)
{
    static const char *const keys[] = {"from", "to", "route"};
    char field[192];
    yread_join_path(field, sizeof field, path, "gpu_to_gpu");
    int count, G = m->gpus;
    if (yread_list(c, n, field, &count))
        return c->err->code;
    m->gpu_gpu = xcalloc((size_t)G * (size_t)G, sizeof *m->gpu_gpu);
    for (int k = 0; k < count; k++) {
        ynode *e = yread_list_item(c, n, k), *from, *to, *route;
        int i, j;
        if (yread_expect_mapping(c, e, field) || yread_check_keys(c, e, field, keys, 3) ||
            !(from = yread_required(c, e, field, "from")) ||
            !(to = yread_required(c, e, field, "to")) ||
            !(route = yread_required(c, e, field, "route")) ||
            yread_int(c, from, field, 0, G - 1, &i) || yread_int(c, to, field, 0, G - 1, &j))
            return c->err->code;
        if (i >= j)
            return yread_fail(c, to, field, "pairs are given once, from < to (got %d -> %d)", i, j);
        node_path *p = &m->gpu_gpu[i * G + j], *back = &m->gpu_gpu[j * G + i];
        if (p->n)
            return yread_fail(c, e, field, "the pair %d -> %d is given twice", i, j);
        if (read_path(c, route, field, m, ids, p))
            return c->err->code;
        back->n = p->n;
        for (int h = 0; h < p->n; h++) {
            back->hop[h].link = p->hop[p->n - 1 - h].link;
            back->hop[h].up = !p->hop[p->n - 1 - h].up;
        }
    }
    for (int i = 0; i < G; i++)
        for (int j = i + 1; j < G; j++)
            if (!m->gpu_gpu[i * G + j].n)
                return yread_fail(c, n, field, "no route from GPU %d to GPU %d", i, j);
    return 0;
}

/* One node model. */
static int read_model(yread_ctx *c, ynode *n, const char *path, node_model *m, src_loc *gpu_loc)
{
    static const char *const keys[] = {"name",        "gpu",        "tflops",    "links",
                                       "rail_of_gpu", "gpu_to_nic", "gpu_to_gpu"};
    ynode *v[7];
    char field[192];
    if (yread_expect_mapping(c, n, path) || yread_check_keys(c, n, path, keys, 7))
        return c->err->code;
    for (int k = 0; k < 7; k++)
        if (!(v[k] = yread_required(c, n, path, keys[k])))
            return c->err->code;
    yread_join_path(field, sizeof field, path, "name");
    if (read_name(c, v[0], field, 0, m->kind, sizeof m->kind))
        return c->err->code;
    yread_join_path(field, sizeof field, path, "gpu");
    if (read_name(c, v[1], field, 0, m->gpu, sizeof m->gpu))
        return c->err->code;
    *gpu_loc = yread_loc(v[1]);
    double tflops;
    yread_join_path(field, sizeof field, path, "tflops");
    if (yread_positive(c, v[2], field, &tflops))
        return c->err->code;
    m->flops = tflops * 1e12;
    if (!isfinite(m->flops))
        return yread_fail(c, v[2], field, "%g TFLOP/s is too large", tflops);
    yread_join_path(field, sizeof field, path, "links");
    int count;
    if (yread_list(c, v[3], field, &count))
        return c->err->code;
    if (count < 1 || count > PS_MAX_NODE_LINKS)
        return yread_fail(c, v[3], field, "a node has 1 to %d links, not %d", PS_MAX_NODE_LINKS,
                          count);
    m->links = xcalloc((size_t)count, sizeof *m->links);
    link_id *ids = xcalloc((size_t)count, sizeof *ids);
    int rc = 0;
    for (int l = 0; l < count && !rc; l++) {
        ids[l].link = l;
        rc = read_link(c, yread_list_item(c, v[3], l), field, m, &ids[l].node);
    }
    yread_join_path(field, sizeof field, path, "links.id");
    if (!rc)
        rc = sort_link_ids(c, m, ids, field);
    if (!rc)
        rc = read_rails(c, v[4], path, m) || read_nic_routes(c, v[5], path, m, ids) ||
                     read_gpu_routes(c, v[6], path, m, ids)
                 ? c->err->code
                 : 0;
    free(ids);
    return rc;
}

/* nodes: groups {model, count} of the models read; the totals are fabric_init's to check. */
static int read_groups(yread_ctx *c, ynode *n, cluster_desc *d)
{
    static const char *const keys[] = {"model", "count"};
    int count;
    if (yread_list(c, n, "nodes", &count))
        return c->err->code;
    if (count < 1)
        return yread_fail(c, n, "nodes", "the cluster needs at least one group of nodes");
    d->group_model = xcalloc((size_t)count, sizeof *d->group_model);
    d->group_nodes = xcalloc((size_t)count, sizeof *d->group_nodes);
    d->model_ptr = xcalloc((size_t)d->n_models, sizeof *d->model_ptr);
    for (int k = 0; k < d->n_models; k++)
        d->model_ptr[k] = &d->models[k];
    long long gpus = 0; /* a list of a million groups stops at the limit, not at its end */
    for (int i = 0; i < count && gpus <= PS_MAX_GPUS; i++) {
        ynode *e = yread_list_item(c, n, i), *model, *nodes;
        if (yread_expect_mapping(c, e, "nodes") || yread_check_keys(c, e, "nodes", keys, 2) ||
            !(model = yread_required(c, e, "nodes", "model")) ||
            !(nodes = yread_required(c, e, "nodes", "count")) ||
            yread_count(c, nodes, "nodes.count", 1, PS_MAX_GPUS, &d->group_nodes[i]))
            return c->err->code;
        const char *name = yread_scalar(model);
        d->group_model[i] = -1;
        for (int k = 0; name && k < d->n_models && d->group_model[i] < 0; k++)
            if (!strcmp(d->models[k].kind, name))
                d->group_model[i] = k;
        if (d->group_model[i] < 0)
            return yread_fail(c, model, "nodes.model", "no node model named %s%s%s",
                              name ? "'" : yread_kind(model), name ? name : "", name ? "'" : "");
        d->n_groups = i + 1;
        gpus += (long long)d->group_nodes[i] * d->models[d->group_model[i]].gpus;
    }
    if (gpus > PS_MAX_GPUS)
        return yread_fail(c, n, "nodes",
                          "the cluster would have more than %d GPUs (protosim's "
                          "limit)",
                          PS_MAX_GPUS);
    char *used = xcalloc((size_t)d->n_models, 1);
    for (int i = 0; i < d->n_groups; i++)
        used[d->group_model[i]] = 1;
    int unused = -1;
    for (int k = 0; k < d->n_models && unused < 0; k++)
        unused = used[k] ? -1 : k;
    free(used);
    if (unused >= 0)
        return yread_fail(c, n, "nodes",
                          "node model '%s' has no nodes here (remove it, or add a "
                          "group of it)",
                          d->models[unused].kind);
    return 0;
}

/* protosim_cluster, fabric, nodes_per_leaf, oversubscription. */
static int read_header(yread_ctx *c, ynode *root, cluster_desc *d)
{
    ynode *v;
    int version, kind;
    if (!(v = yread_required(c, root, "", "protosim_cluster")) ||
        yread_int(c, v, "protosim_cluster", DESC_VERSION, DESC_VERSION, &version) ||
        !(v = yread_required(c, root, "", "fabric")) ||
        yread_enum(c, v, "fabric", cluster_fabric_names, &kind) ||
        !(v = yread_required(c, root, "", "nodes_per_leaf")) ||
        yread_count(c, v, "nodes_per_leaf", 1, PS_MAX_GPUS, &d->opts.nodes_per_leaf) ||
        !(v = yread_required(c, root, "", "oversubscription")) ||
        yread_positive(c, v, "oversubscription", &d->opts.oversubscription))
        return c->err->code;
    d->opts.fabric = (cluster_fabric)kind;
    if (d->opts.oversubscription < 1)
        return yread_fail(c, v, "oversubscription", "must be at least 1 (1 = non-blocking), not %g",
                          d->opts.oversubscription);
    return 0;
}

static int read_models(yread_ctx *c, ynode *n, cluster_desc *d)
{
    int count;
    if (yread_list(c, n, "node_models", &count))
        return c->err->code;
    if (count < 1 || count > PS_MAX_NODE_MODELS)
        return yread_fail(c, n, "node_models", "a cluster has 1 to %d node models, not %d",
                          PS_MAX_NODE_MODELS, count);
    d->models = xcalloc((size_t)count, sizeof *d->models);
    d->gpu_loc = xcalloc((size_t)count, sizeof *d->gpu_loc);
    for (int i = 0; i < count; i++) {
        ynode *e = yread_list_item(c, n, i);
        d->n_models = i + 1;
        if (read_model(c, e, "node_models", &d->models[i], &d->gpu_loc[i]))
            return c->err->code;
        for (int k = 0; k < i; k++)
            if (!strcmp(d->models[k].kind, d->models[i].kind))
                return yread_fail(c, yread_map_get(c, e, "name"), "node_models.name",
                                  "two node models are named '%s'", d->models[i].kind);
    }
    return 0;
}

/* The fabric's uplinks and spine ports within cluster.h's link ranges: too fast past the
 * maximum (too many nodes per leaf), too slow below the minimum (oversubscribed too much). */
static int check_uplinks(yread_ctx *c, ynode *root, const fabric *f)
{
    for (int l = f->up0; l < f->n_links; l++) {
        double bw = fabric_link_GBps(f, l) * 1e9;
        if (!fabric_link_exists(f, l) || (bw >= CLUSTER_LINK_BW_MIN && bw <= CLUSTER_LINK_BW_MAX))
            continue;
        char name[64];
        fabric_link_name(f, l, name, sizeof name);
        int fast = bw > CLUSTER_LINK_BW_MAX;
        const char *key = fast && f->per_unit > 1 ? "nodes_per_leaf" : "oversubscription";
        return yread_fail(c, yread_map_get(c, root, key), key,
                          "the fabric's link %s would carry %g GB/s, outside [%g, %g] GB/s (1 MB/s "
                          "to 10 PB/s): %s",
                          name, bw / 1e9, CLUSTER_LINK_BW_MIN / 1e9, CLUSTER_LINK_BW_MAX / 1e9,
                          !fast             ? "a smaller oversubscription"
                          : f->per_unit > 1 ? "fewer nodes per leaf"
                                            : "slower NICs, or more oversubscription");
    }
    return 0;
}

/* slowdown (optional): {rank, factor} entries, ranks distinct and below the GPU count. */
static int read_slowdown(yread_ctx *c, ynode *n, cluster_desc *d)
{
    static const char *const keys[] = {"rank", "factor"};
    int count;
    if (yread_list(c, n, "slowdown", &count))
        return c->err->code;
    d->slow_rank = xcalloc(count ? (size_t)count : 1, sizeof *d->slow_rank);
    d->slow_factor = xcalloc(count ? (size_t)count : 1, sizeof *d->slow_factor);
    char *seen = xcalloc((size_t)d->layout.gpus, 1);
    int rc = 0;
    for (int i = 0; i < count && !rc; i++) {
        ynode *e = yread_list_item(c, n, i), *rank, *factor;
        if (yread_expect_mapping(c, e, "slowdown") || yread_check_keys(c, e, "slowdown", keys, 2) ||
            !(rank = yread_required(c, e, "slowdown", "rank")) ||
            !(factor = yread_required(c, e, "slowdown", "factor")) ||
            yread_int(c, rank, "slowdown.rank", 0, d->layout.gpus - 1, &d->slow_rank[i]) ||
            yread_positive(c, factor, "slowdown.factor", &d->slow_factor[i]))
            rc = c->err->code;
        else if (seen[d->slow_rank[i]]++)
            rc = yread_fail(c, rank, "slowdown.rank", "rank %d is given twice", d->slow_rank[i]);
        else
            d->n_slow = i + 1;
    }
    free(seen);
    return rc;
}

/* The fabric's layout; its errors (sizes, options) point at the key they name. */
static int build_layout(yread_ctx *c, ynode *root, cluster_desc *d)
{
    ps_error e;
    ps_error_clear(&e);
    if (!fabric_init(&d->layout, d->model_ptr, d->n_models, d->group_model, d->group_nodes,
                     d->n_groups, &d->opts, &e))
        return check_uplinks(c, root, &d->layout);
    const char *key = !strcmp(e.field, "oversubscription") ? "oversubscription" : "nodes";
    /* the generator's wording names its flags: say the keys (--nodes-per-leaf: nodes_per_leaf) */
    char msg[sizeof e.message];
    size_t n = 0;
    for (const char *s = e.message; *s && n + 1 < sizeof msg;) {
        if (s[0] == '-' && s[1] == '-' && isalpha((unsigned char)s[2]))
            for (s += 2; (isalpha((unsigned char)*s) || *s == '-') && n + 1 < sizeof msg; s++)
                msg[n++] = *s == '-' ? '_' : *s;
        else
            msg[n++] = *s++;
    }
    msg[n] = '\0';
    return yread_fail(c, yread_map_get(c, root, key), key, "%s", msg);
}

int cluster_desc_load(const char *path, cluster_desc **out, ps_error *err)
{
    static const char *const keys[] = {"protosim_cluster", "fabric",      "nodes_per_leaf",
                                       "oversubscription", "node_models", "nodes",
                                       "slowdown"};
    *out = NULL;
    ydoc *doc;
    if (yread_load_file(path, "cluster description", &doc, err))
        return err->code;
    cluster_desc *d = xcalloc(1, sizeof *d);
    snprintf(d->file, sizeof d->file, "%s", path);
    yread_ctx c = {doc, path, err};
    ynode *root = yread_root(doc), *v;
    int rc;
    if (!root)
        rc = ps_error_set(err, PS_EINPUT, path, 1, 1, "", "empty cluster description");
    else if (yread_expect_mapping(&c, root, "") || yread_check_keys(&c, root, "", keys, 7))
        rc = err->code;
    else if (read_header(&c, root, d))
        rc = err->code;
    else if (!(v = yread_required(&c, root, "", "node_models")) || read_models(&c, v, d))
        rc = err->code;
    else if (!(v = yread_required(&c, root, "", "nodes")) || read_groups(&c, v, d))
        rc = err->code;
    else if ((rc = build_layout(&c, root, d)) == 0 && (v = yread_map_get(&c, root, "slowdown")))
        rc = read_slowdown(&c, v, d);
    yread_doc_free(doc);
    if (rc)
        cluster_desc_free(d);
    else
        *out = d;
    return rc;
}

void cluster_desc_free(cluster_desc *d)
{
    if (!d)
        return;
    fabric_free(&d->layout);
    for (int i = 0; i < d->n_models; i++)
        node_model_free(&d->models[i]);
    free(d->models);
    free(d->gpu_loc);
    free(d->slow_rank);
    free(d->slow_factor);
    free(d->model_ptr);
    free(d->group_model);
    free(d->group_nodes);
    free(d);
}
