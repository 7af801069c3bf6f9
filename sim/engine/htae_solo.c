/* htae_solo.c: acts timed while alone on their links, turned into tasks when another comes
 * (htae_solo.h). */
#include "htae_solo.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
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
    sh->bfirst = xcalloc((size_t)sh->n + 2, sizeof *sh->bfirst);
    sh->bids = xmalloc((m + 1) * sizeof *sh->bids);
    for (size_t i = 0; i < m; i++)
        sh->bfirst[v[i].block + 2]++;
    for (int b = 0; b < sh->n; b++)
        sh->bfirst[b + 2] += sh->bfirst[b + 1];
    for (size_t i = 0; i < m; i++) /* by link within a block, as sorted */
        sh->bids[sh->bfirst[v[i].block + 1]++] = v[i].id;
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
    free(sh->bfirst);
    free(sh->bids);
    free(sh);
}

struct owner;

/* A hold on links: a timed act's block (its bytes moving over [bw, end)), or an act run as
 * tasks (end INFINITY, from bw until they have all ended). */
typedef struct hold_rec {
    double bw, end;
    int *ids; /* its links (a copy: the caller may free its shape once it has run) */
    int n_ids;
    size_t cap_ids;
    int turned;       /* a timed block whose owner must start its task */
    struct owner *by; /* a timed block's owner, NULL for tasks */
    int next_free;    /* index + 1, 0 none */
} hold_rec;

/* The holds on one link. */
typedef struct held {
    int *holds;
    size_t n, cap;
} held;

struct htae_solo {
    htae_links *L;
    double floor;
    hold_rec *holds;
    size_t n_holds, cap_holds;
    int free_hold;
    held *on; /* [n_on]: per link index */
    size_t n_on;
    int *stack; /* turn's work list */
    size_t cap_stack;
    sg_sem_t *sems; /* owners' semaphores, free for reuse */
    size_t n_sems, cap_sems;
    uint32_t timed, turned;
    uint64_t left_out;
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
    for (size_t i = 0; i < s->n_holds; i++)
        free(s->holds[i].ids);
    for (size_t i = 0; i < s->n_sems; i++)
        sg_sem_destroy(s->sems[i]);
    for (size_t i = 0; i < s->n_on; i++)
        free(s->on[i].holds);
    for (size_t i = 0; i < s->n_slots; i++)
        htae_solo_shape_free(s->shapes[i]);
    free(s->keys);
    free(s->shapes);
    free(s->holds);
    free(s->on);
    free(s->stack);
    free(s->sems);
    free(s);
}

void htae_solo_counts(const htae_solo *s, uint32_t *timed, uint32_t *turned, uint64_t *left_out)
{
    *timed = s ? s->timed : 0;
    *turned = s ? s->turned : 0;
    *left_out = s ? s->left_out : 0;
}

void htae_solo_left_out(htae_solo *s, uint32_t flows)
{
    s->left_out += flows;
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

/* A new hold on ids[0 .. n) over [bw, end), owned by `by` (a timed block) or NULL (tasks). */
static int hold(htae_solo *s, const int *ids, int n, double bw, double end, struct owner *by)
{
    int a;
    if (s->free_hold) {
        a = s->free_hold - 1;
        s->free_hold = s->holds[a].next_free;
    } else {
        xgrow(&s->holds, sizeof *s->holds, s->n_holds + 1, &s->cap_holds);
        a = (int)s->n_holds++;
        memset(&s->holds[a], 0, sizeof s->holds[a]);
    }
    hold_rec *x = &s->holds[a];
    xgrow(&x->ids, sizeof *x->ids, (size_t)n + 1, &x->cap_ids);
    memcpy(x->ids, ids, (size_t)n * sizeof *x->ids);
    x->n_ids = n;
    x->bw = bw;
    x->end = end;
    x->by = by;
    x->turned = x->next_free = 0;
    for (int k = 0; k < n; k++) {
        held *h = held_on(s, ids[k]);
        xgrow(&h->holds, sizeof *h->holds, h->n + 1, &h->cap);
        h->holds[h->n++] = a;
    }
    return a;
}

static void release(htae_solo *s, int a)
{
    hold_rec *x = &s->holds[a];
    for (int k = 0; k < x->n_ids; k++) {
        held *h = &s->on[x->ids[k]];
        for (size_t i = 0; i < h->n; i++)
            if (h->holds[i] == a) {
                h->holds[i] = h->holds[--h->n];
                break;
            }
    }
    x->n_ids = 0;
    x->by = NULL;
    x->next_free = s->free_hold;
    s->free_hold = a + 1;
}

/* Whether a hold on any of ids[0 .. n) moves bytes during [lo, hi). */
static int contended(const htae_solo *s, const int *ids, int n, double lo, double hi)
{
    for (int k = 0; k < n; k++) {
        if ((size_t)ids[k] >= s->n_on)
            continue;
        const held *h = &s->on[ids[k]];
        for (size_t i = 0; i < h->n; i++) {
            const hold_rec *x = &s->holds[h->holds[i]];
            if (x->bw < hi && x->end > lo)
                return 1;
        }
    }
    return 0;
}

/* A timed act's blocks, from its owner's side (on its actor's stack while it runs). */
enum { B_TIMED, B_DUE, B_TASK, B_ENDED, B_DONE };

typedef struct owner {
    htae_solo *s;
    const solo_shape *sh;
    const solo_ops *ops;
    double create, scale;
    int n, done, begun, turned;
    int *state, *hold;
    double *end, *date, *share; /* B_TIMED: end; B_DUE: when its task starts, over share;
                                   B_ENDED: when its task ended (end) */
    sg_sem_t sem;
} owner;

/* A token on the owner's semaphore: it may be between two of its own SimGrid calls (starting a
 * helper yields), so the change is seen by its next wait at the latest, never slept through;
 * extra tokens only make it look again (drained at its end). */
static void wake(owner *o)
{
    sg_sem_release(o->sem);
}

static void push(htae_solo *s, size_t *n, int a)
{
    xgrow(&s->stack, sizeof *s->stack, *n + 1, &s->cap_stack);
    s->stack[(*n)++] = a;
}

/* Push every timed block on ids[0 .. n) whose bytes still move after `from`. */
static void push_timed(htae_solo *s, size_t *top, const int *ids, int n, double from)
{
    for (int k = 0; k < n; k++) {
        if ((size_t)ids[k] >= s->n_on)
            continue;
        const held *h = &s->on[ids[k]];
        for (size_t i = 0; i < h->n; i++) {
            const hold_rec *x = &s->holds[h->holds[i]];
            if (x->by && !x->turned && x->end > from)
                push(s, top, h->holds[i]);
        }
    }
}

/* Turn every timed block on ids[0 .. n) whose bytes still move after `from`, and every timed
 * block on the links of one turned, now: each is held as a task from now on. Their owners are
 * woken once every turn is made: a release yields to other actors, which may hold, release or
 * turn meanwhile (s->holds may move, s->stack be reused), and an owner may even end (its
 * semaphore stays, pooled). */
static void turn_from(htae_solo *s, const int *ids, int n, double from)
{
    size_t top = 0, n_wake = 0, cap_wake = 0;
    sg_sem_t *woken = NULL;
    push_timed(s, &top, ids, n, from);
    double now = simgrid_get_clock();
    while (top) {
        int a = s->stack[--top];
        hold_rec *x = &s->holds[a];
        if (x->turned)
            continue;
        x->turned = 1;
        x->bw = now;
        x->end = INFINITY;
        xgrow(&woken, sizeof *woken, n_wake + 1, &cap_wake);
        woken[n_wake++] = x->by->sem;
        push_timed(s, &top, x->ids, x->n_ids, now);
    }
    for (size_t i = 0; i < n_wake; i++)
        sg_sem_release(woken[i]);
    free(woken);
}

/* Block b, turned at `now`: if its bytes still move from now + its latency on (the earliest a
 * task started now moves them), its task starts then, over what is left. */
static void on_turn(owner *o, int b, double now)
{
    const solo_shape *sh = o->sh;
    double bw = o->create + sh->lat[b], from = fmax(bw, now + sh->lat[b]);
    double span = o->scale * sh->unit[b];
    if (!o->turned) {
        o->turned = 1;
        o->s->turned++;
    }
    if (o->end[b] <= from || !(span > 0.0))
        return; /* ends alone first */
    o->state[b] = B_DUE;
    o->date[b] = from - sh->lat[b];
    o->share[b] = from == bw ? 1.0 : (o->end[b] - from) / span;
}

typedef struct helper_arg {
    owner *o;
    int b;
} helper_arg;

/* A turned block's task, run and waited for by an actor of its own, so that the owner stays
 * woken by turns of its other blocks: its end is handed back to the owner, which ends the
 * flows (link statistics pair every start and end in one actor). */
static void block_helper(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    helper_arg *h = sg_actor_self_get_data();
    owner *o = h->o;
    int b = h->b;
    free(h);
    sg_exec_t task = o->ops->task(o->ops->ctx, b, o->share[b]);
    sg_exec_wait(task);
    o->end[b] = simgrid_get_clock();
    o->state[b] = B_ENDED;
    wake(o);
}

static void start_helper(owner *o, int b)
{
    helper_arg *h = xmalloc(sizeof *h);
    *h = (helper_arg){o, b};
    sg_actor_t a = sg_actor_init("solo", sg_host_self());
    sg_actor_set_stacksize(a, 256); /* KiB, as htae.c's actors (HTAE_ACTOR_STACK_KIB) */
    sg_actor_set_data(a, h);
    sg_actor_start_(a, block_helper, 0, NULL);
}

static void block_done(owner *o, int b, double now)
{
    o->ops->end(o->ops->ctx, b, now);
    o->state[b] = B_DONE;
    o->done++;
    release(o->s, o->hold[b]);
}

/* Everything due at `now`: turns, the flows' start, timed ends, tasks to start, tasks ended. */
static void run_due(owner *o, double now)
{
    for (int b = 0; b < o->n; b++)
        if (o->state[b] == B_TIMED && o->s->holds[o->hold[b]].turned)
            on_turn(o, b, now);
    if (!o->begun && now >= o->create) {
        for (int b = 0; b < o->n; b++)
            o->ops->begin(o->ops->ctx, b, o->create);
        o->begun = 1;
    }
    if (!o->begun)
        return;
    for (int b = 0; b < o->n; b++)
        if ((o->state[b] == B_TIMED && o->end[b] <= now) || o->state[b] == B_ENDED)
            block_done(o, b, now);
        else if (o->state[b] == B_DUE && o->date[b] <= now) {
            o->state[b] = B_TASK;
            start_helper(o, b);
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

static void run_timed(htae_solo *s, const solo_shape *sh, double create, double scale,
                      const solo_ops *ops)
{
    int n = sh->n;
    owner o = {s, sh, ops, create, scale, n, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    o.state = xmalloc(((size_t)n + 1) * 2 * sizeof *o.state);
    o.hold = o.state + n;
    o.end = xmalloc(((size_t)n + 1) * 3 * sizeof *o.end);
    o.date = o.end + n;
    o.share = o.date + n;
    for (int b = 0; b < n; b++) { /* held at once: contended() just said they may be */
        o.state[b] = B_TIMED;
        o.end[b] = create + sh->lat[b] + scale * sh->unit[b];
        o.hold[b] = hold(s, sh->bids + sh->bfirst[b], sh->bfirst[b + 1] - sh->bfirst[b],
                         create + sh->lat[b], o.end[b], &o);
    }
    o.sem = s->n_sems ? s->sems[--s->n_sems] : sg_sem_init(0);
    for (;;) {
        run_due(&o, simgrid_get_clock());
        if (o.done == n)
            break;
        double date = next_date(&o);
        if (isfinite(date))
            htae_sem_acquire_until(o.sem, date);
        else
            sg_sem_acquire(o.sem);
    }
    while (!sg_sem_would_block(o.sem)) /* a wake at the instant its date came */
        sg_sem_acquire(o.sem);
    xgrow(&s->sems, sizeof *s->sems, s->n_sems + 1, &s->cap_sems);
    s->sems[s->n_sems++] = o.sem;
    free(o.state);
    free(o.end);
}

int htae_solo_run(htae_solo *s, const solo_shape *sh, double wait, double scale,
                  const solo_ops *ops, int *real)
{
    *real = -1;
    if (!s)
        return 0;
    double now = simgrid_get_clock(), create = now + (wait > 0.0 ? wait : 0.0);
    double lo = create + sh->min_lat, hi = lo;
    for (int b = 0; b < sh->n; b++)
        hi = fmax(hi, create + sh->lat[b] + scale * sh->unit[b]);
    int timeable =
        s->floor > 0.0 && sh->timeable && sh->max_lat <= s->floor && scale > 0.0 && isfinite(hi);
    if (timeable && !contended(s, sh->ids, sh->n_ids, lo, hi)) {
        s->timed++;
        run_timed(s, sh, create, scale, ops);
        return 1;
    }
    *real = hold(s, sh->ids, sh->n_ids, lo, INFINITY, NULL); /* before turn_from yields */
    turn_from(s, sh->ids, sh->n_ids, lo);
    return 0;
}

void htae_solo_real_end(htae_solo *s, int real)
{
    if (s && real >= 0)
        release(s, real);
}
