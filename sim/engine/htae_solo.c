/* htae_solo.c: acts timed while alone on their links, turned into tasks when another comes
 * (htae_solo.h). */
#include "htae_solo.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/engine.h>
#include <simgrid/semaphore.h>

#include "../base/xalloc.h"
#include "htae_clock.h"
#include "htae_pattern.h"

/* One link's load from one block, per unit of scale. */
typedef struct block_load {
    int id, block;
    double w;
} block_load;

static int by_id_then_block(const void *pa, const void *pb)
{
    const block_load *a = pa, *b = pb;
    if (a->id != b->id)
        return (a->id > b->id) - (a->id < b->id);
    return (a->block > b->block) - (a->block < b->block);
}

/* Each block's unit time, whether the blocks fit together on every link, and the links once. */
static void shape_links(const htae_links *L, solo_shape *sh, block_load *v, size_t n)
{
    if (n)
        qsort(v, n, sizeof *v, by_id_then_block);
    size_t m = 0; /* one entry per (link, block), its load summed in flow order */
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double sum = 0.0;
        for (; j < n && v[j].id == v[i].id && v[j].block == v[i].block; j++)
            sum += v[j].w;
        v[m++] = (block_load){v[i].id, v[i].block, sum};
        i = j;
    }
    for (size_t i = 0; i < m; i++) {
        double u = v[i].w / htae_links_bandwidth(L, v[i].id);
        if (u > sh->unit[v[i].block])
            sh->unit[v[i].block] = u;
    }
    sh->ids = xmalloc((m + 1) * sizeof *sh->ids);
    sh->timeable = 1;
    for (size_t i = 0; i < m;) { /* every link: the bytes per second of the blocks' lone rates */
        size_t j = i;
        double rate = 0.0;
        for (; j < m && v[j].id == v[i].id; j++)
            rate += v[j].w / sh->unit[v[j].block];
        double bw = htae_links_bandwidth(L, v[i].id);
        sh->timeable = sh->timeable && htae_links_shared(L, v[i].id) && rate <= bw * (1.0 + 1e-9);
        sh->ids[sh->n_ids++] = v[i].id;
        i = j;
    }
}

solo_shape *htae_solo_shape(htae_links *L, int n_blocks, const int *first, const sg_host_t *src,
                            const sg_host_t *dst, const double *w)
{
    solo_shape *sh = xcalloc(1, sizeof *sh);
    sh->n = n_blocks;
    sh->lat = xcalloc((size_t)n_blocks + 1, sizeof *sh->lat);
    sh->unit = xcalloc((size_t)n_blocks + 1, sizeof *sh->unit);
    sh->min_lat = INFINITY;
    block_load *v = NULL;
    size_t n = 0, cap = 0;
    for (int b = 0; b < n_blocks; b++) {
        int flows = 0;
        for (int i = first[b]; i < first[b + 1]; i++) {
            if (!(w[i] > 0.0)) /* no flow: SimGrid starts none, charges no latency */
                continue;
            flows = 1;
            double lat = htae_route_latency(src[i], dst[i]);
            sh->lat[b] = lat > sh->lat[b] ? lat : sh->lat[b];
            int len;
            const int *r = htae_links_route(L, src[i], dst[i], &len);
            xgrow(&v, sizeof *v, n + (size_t)len, &cap);
            for (int k = 0; k < len; k++)
                v[n++] = (block_load){r[k], b, w[i]};
        }
        if (flows) {
            sh->min_lat = fmin(sh->min_lat, sh->lat[b]);
            sh->max_lat = fmax(sh->max_lat, sh->lat[b]);
        }
    }
    if (sh->min_lat == INFINITY)
        sh->min_lat = 0.0;
    shape_links(L, sh, v, n);
    free(v);
    return sh;
}

void htae_solo_shape_free(solo_shape *sh)
{
    if (!sh)
        return;
    if (sh->aux_free)
        sh->aux_free(sh->aux);
    free(sh->lat);
    free(sh->unit);
    free(sh->ids);
    free(sh);
}

/* An act held on its links: its bytes move over [bw, end); end INFINITY: it runs as tasks. */
typedef struct act {
    double bw, end;
    int *ids; /* its links (a copy: the caller may free its shape once it has run) */
    int n_ids;
    size_t cap_ids;
    int timed;   /* issued timed (it may have been turned since) */
    int turned;  /* a timed act whose owner must start its tasks */
    int waiting; /* its owner sleeps on sem until a date */
    sg_sem_t sem;
    int next_free; /* index + 1, 0 none */
} act;

/* The acts held on one link. */
typedef struct held {
    int *acts;
    size_t n, cap;
} held;

struct htae_solo {
    htae_links *L;
    double floor;
    act *acts;
    size_t n_acts, cap_acts;
    int free_act;
    held *on; /* [n_on]: per link index */
    size_t n_on;
    int *stack; /* turn's work list */
    size_t cap_stack;
    uint32_t timed, turned;
    /* shapes by key, open addressing (n_slots a power of two, or 0) */
    uint64_t *keys;
    solo_shape **shapes;
    size_t n_slots, used;
};

htae_solo *htae_solo_create(htae_links *L, double floor_s)
{
    htae_solo *s = xcalloc(1, sizeof *s);
    s->L = L;
    s->floor = floor_s > 0.0 ? floor_s : 0.0;
    return s;
}

void htae_solo_free(htae_solo *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_acts; i++) {
        if (s->acts[i].sem)
            sg_sem_destroy(s->acts[i].sem);
        free(s->acts[i].ids);
    }
    for (size_t i = 0; i < s->n_on; i++)
        free(s->on[i].acts);
    for (size_t i = 0; i < s->n_slots; i++)
        htae_solo_shape_free(s->shapes[i]);
    free(s->keys);
    free(s->shapes);
    free(s->acts);
    free(s->on);
    free(s->stack);
    free(s);
}

void htae_solo_counts(const htae_solo *s, uint32_t *timed, uint32_t *turned)
{
    *timed = s ? s->timed : 0;
    *turned = s ? s->turned : 0;
}

static size_t slot_of(const htae_solo *s, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h ^ h >> 29) & (s->n_slots - 1);
    while (s->shapes[i] && s->keys[i] != key)
        i = (i + 1) & (s->n_slots - 1);
    return i;
}

solo_shape *htae_solo_cached(const htae_solo *s, uint64_t key)
{
    return s->n_slots ? s->shapes[slot_of(s, key)] : NULL;
}

void htae_solo_cache(htae_solo *s, uint64_t key, solo_shape *sh)
{
    if (2 * (s->used + 1) > s->n_slots) {
        size_t n_old = s->n_slots;
        uint64_t *keys = s->keys;
        solo_shape **shapes = s->shapes;
        s->n_slots = n_old ? 2 * n_old : 64;
        s->keys = xcalloc(s->n_slots, sizeof *s->keys);
        s->shapes = xcalloc(s->n_slots, sizeof *s->shapes);
        for (size_t i = 0; i < n_old; i++)
            if (shapes[i]) {
                size_t j = slot_of(s, keys[i]);
                s->keys[j] = keys[i];
                s->shapes[j] = shapes[i];
            }
        free(keys);
        free(shapes);
    }
    size_t i = slot_of(s, key);
    assert(!s->shapes[i]);
    s->keys[i] = key;
    s->shapes[i] = sh;
    s->used++;
}

static held *held_on(htae_solo *s, int id)
{
    if ((size_t)id >= s->n_on) {
        size_t n = s->n_on ? s->n_on : 64;
        while (n <= (size_t)id)
            n *= 2;
        s->on = xreallocarray(s->on, n, sizeof *s->on);
        memset(s->on + s->n_on, 0, (n - s->n_on) * sizeof *s->on);
        s->n_on = n;
    }
    return &s->on[id];
}

/* A new act held on sh's links over [bw, end). */
static int hold(htae_solo *s, const solo_shape *sh, double bw, double end, int timed)
{
    int a;
    if (s->free_act) {
        a = s->free_act - 1;
        s->free_act = s->acts[a].next_free;
    } else {
        xgrow(&s->acts, sizeof *s->acts, s->n_acts + 1, &s->cap_acts);
        a = (int)s->n_acts++;
        memset(&s->acts[a], 0, sizeof s->acts[a]);
    }
    act *x = &s->acts[a];
    xgrow(&x->ids, sizeof *x->ids, (size_t)sh->n_ids + 1, &x->cap_ids);
    memcpy(x->ids, sh->ids, (size_t)sh->n_ids * sizeof *x->ids);
    x->n_ids = sh->n_ids;
    x->bw = bw;
    x->end = end;
    x->timed = timed;
    x->turned = x->waiting = x->next_free = 0;
    for (int k = 0; k < sh->n_ids; k++) {
        held *h = held_on(s, sh->ids[k]);
        xgrow(&h->acts, sizeof *h->acts, h->n + 1, &h->cap);
        h->acts[h->n++] = a;
    }
    return a;
}

static void release(htae_solo *s, int a)
{
    act *x = &s->acts[a];
    for (int k = 0; k < x->n_ids; k++) {
        held *h = &s->on[x->ids[k]];
        for (size_t i = 0; i < h->n; i++)
            if (h->acts[i] == a) {
                h->acts[i] = h->acts[--h->n];
                break;
            }
    }
    if (x->sem) /* a release left on it at the instant its date came */
        while (!sg_sem_would_block(x->sem))
            sg_sem_acquire(x->sem);
    x->n_ids = 0;
    x->next_free = s->free_act;
    s->free_act = a + 1;
}

/* Whether an act held on any of ids[0 .. n) moves bytes during [lo, hi). */
static int contended(const htae_solo *s, const int *ids, int n, double lo, double hi)
{
    for (int k = 0; k < n; k++) {
        if ((size_t)ids[k] >= s->n_on)
            continue;
        const held *h = &s->on[ids[k]];
        for (size_t i = 0; i < h->n; i++) {
            const act *x = &s->acts[h->acts[i]];
            if (x->bw < hi && x->end > lo)
                return 1;
        }
    }
    return 0;
}

static void push(htae_solo *s, size_t *n, int a)
{
    xgrow(&s->stack, sizeof *s->stack, *n + 1, &s->cap_stack);
    s->stack[(*n)++] = a;
}

/* Turn every timed act on ids[0 .. n) whose bytes still move at `from` or later, and every
 * timed act on the links of one turned, now: each is held as tasks from now on. */
static void turn_from(htae_solo *s, const int *ids, int n, double from)
{
    size_t top = 0;
    for (int k = 0; k < n; k++) {
        if ((size_t)ids[k] >= s->n_on)
            continue;
        const held *h = &s->on[ids[k]];
        for (size_t i = 0; i < h->n; i++) {
            const act *x = &s->acts[h->acts[i]];
            if (x->timed && !x->turned && x->end > from)
                push(s, &top, h->acts[i]);
        }
    }
    double now = simgrid_get_clock();
    while (top) {
        int a = s->stack[--top];
        act *x = &s->acts[a];
        if (x->turned)
            continue;
        x->turned = 1;
        x->bw = now;
        x->end = INFINITY;
        s->turned++;
        if (x->waiting) {
            x->waiting = 0;
            sg_sem_release(x->sem);
        }
        for (int k = 0; k < x->n_ids; k++) {
            const held *h = &s->on[x->ids[k]];
            for (size_t i = 0; i < h->n; i++) {
                const act *y = &s->acts[h->acts[i]];
                if (y->timed && !y->turned && y->end > now)
                    push(s, &top, h->acts[i]);
            }
        }
    }
}

enum { B_TIMED, B_DUE, B_TASK, B_DONE };

/* A timed act's blocks, from its owner's side. */
typedef struct owner {
    int n, done, begun;
    double create;
    int *state;
    double *end, *date, *share; /* B_TIMED: end; B_DUE: when its task starts, over share */
    sg_exec_t *exec;            /* B_TASK */
    int *of;                    /* exec index -> block */
} owner;

/* Turned at `now`: each block whose bytes still move from now + its latency on (the earliest
 * its task could move them) starts its task then, over what is left. */
static void on_turn(owner *o, const solo_shape *sh, double scale, double now)
{
    for (int b = 0; b < o->n; b++) {
        if (o->state[b] != B_TIMED)
            continue;
        double bw = o->create + sh->lat[b], from = fmax(bw, now + sh->lat[b]);
        double span = scale * sh->unit[b];
        if (o->end[b] <= from || !(span > 0.0))
            continue; /* ends alone first */
        o->state[b] = B_DUE;
        o->date[b] = from - sh->lat[b];
        o->share[b] = from == bw ? 1.0 : (o->end[b] - from) / span;
    }
}

/* Everything due at `now`: the flows' start, timed ends, turned blocks' tasks. */
static void run_due(owner *o, const solo_ops *ops, double now, uint64_t *tasks)
{
    if (!o->begun && now >= o->create) {
        for (int b = 0; b < o->n; b++)
            ops->begin(ops->ctx, b, o->create);
        o->begun = 1;
    }
    if (!o->begun)
        return;
    for (int b = 0; b < o->n; b++)
        if (o->state[b] == B_TIMED && o->end[b] <= now) {
            ops->end(ops->ctx, b, now);
            o->state[b] = B_DONE;
            o->done++;
        } else if (o->state[b] == B_DUE && o->date[b] <= now) {
            o->exec[b] = ops->task(ops->ctx, b, o->share[b]);
            o->state[b] = B_TASK;
            (*tasks)++;
        }
}

static double next_date(const owner *o)
{
    double d = o->begun ? INFINITY : o->create;
    for (int b = 0; b < o->n; b++)
        if (o->state[b] == B_TIMED)
            d = fmin(d, o->end[b]);
        else if (o->state[b] == B_DUE)
            d = fmin(d, o->date[b]);
    return d;
}

/* Wait for the next date, a task's end or (all blocks timed) a turn. */
static void wait_next(htae_solo *s, int a, owner *o, const solo_ops *ops)
{
    double date = next_date(o);
    size_t m = 0;
    for (int b = 0; b < o->n; b++)
        if (o->state[b] == B_TASK) {
            o->of[m] = b;
            o->exec[o->n + (int)m++] = o->exec[b];
        }
    if (m == 0) {
        act *x = &s->acts[a];
        if (!x->sem)
            x->sem = sg_sem_init(0);
        x->waiting = !x->turned;
        htae_sem_acquire_until(x->sem, date);
        s->acts[a].waiting = 0;
        return;
    }
    /* turned: no turn to come, the dates are fixed */
    ssize_t i = htae_exec_wait_any_until(o->exec + o->n, m, date);
    if (i >= 0) {
        int b = o->of[i];
        ops->end(ops->ctx, b, simgrid_get_clock());
        o->state[b] = B_DONE;
        o->done++;
    }
}

static void run_timed(htae_solo *s, int a, const solo_shape *sh, double create, double scale,
                      const solo_ops *ops, uint64_t *tasks)
{
    int n = sh->n;
    owner o = {n, 0, 0, create, NULL, NULL, NULL, NULL, NULL, NULL};
    o.state = xmalloc(((size_t)n + 1) * sizeof *o.state);
    o.end = xmalloc(((size_t)n + 1) * 3 * sizeof *o.end);
    o.date = o.end + n;
    o.share = o.date + n;
    o.exec = xmalloc(((size_t)n + 1) * 2 * sizeof *o.exec);
    o.of = xmalloc(((size_t)n + 1) * sizeof *o.of);
    for (int b = 0; b < n; b++) {
        o.state[b] = B_TIMED;
        o.end[b] = create + sh->lat[b] + scale * sh->unit[b];
    }
    int handled = 0;
    while (o.done < n) {
        double now = simgrid_get_clock();
        if (s->acts[a].turned && !handled) {
            on_turn(&o, sh, scale, now);
            handled = 1;
        }
        run_due(&o, ops, now, tasks);
        if (o.done < n)
            wait_next(s, a, &o, ops);
    }
    free(o.state);
    free(o.end);
    free(o.exec);
    free(o.of);
}

int htae_solo_run(htae_solo *s, const solo_shape *sh, double wait, double scale,
                  const solo_ops *ops, int *real)
{
    double now = simgrid_get_clock(), create = now + (wait > 0.0 ? wait : 0.0);
    double lo = create + sh->min_lat, hi = lo;
    for (int b = 0; b < sh->n; b++)
        hi = fmax(hi, create + sh->lat[b] + scale * sh->unit[b]);
    int timeable = s && s->floor > 0.0 && sh->timeable && sh->max_lat <= s->floor && scale > 0.0 &&
                   isfinite(hi);
    if (timeable && !contended(s, sh->ids, sh->n_ids, lo, hi)) {
        int a = hold(s, sh, lo, hi, 1);
        s->timed++;
        uint64_t tasks = 0;
        run_timed(s, a, sh, create, scale, ops, &tasks);
        release(s, a);
        return 1;
    }
    if (!s) {
        *real = -1;
        return 0;
    }
    turn_from(s, sh->ids, sh->n_ids, lo);
    *real = hold(s, sh, lo, INFINITY, 0);
    return 0;
}

void htae_solo_real_end(htae_solo *s, int real)
{
    if (s && real >= 0)
        release(s, real);
}
