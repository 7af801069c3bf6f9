/* yaml_read.c: the one user of libyaml: loading a file into a document, walking its nodes, and
 * reading values with their locations: typed getters and key checks that report
 * file:line:column and the field path on any mismatch. */
#include "yaml_read.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "limits.h"
#include "xalloc.h"

/* A document is libyaml's; a ynode * is a yaml_node_t * of it, cast (raw: back to libyaml's). */
struct ydoc {
    yaml_document_t doc;
};

static yaml_node_t *raw(const ynode *n)
{
    return (yaml_node_t *)n;
}

static ynode *wrap(yaml_node_t *n)
{
    return (ynode *)n;
}

/* ---- loading a file ---- */

static int parse_error(yaml_parser_t *p, const char *path, ps_error *err)
{
    return ps_error_set(err, PS_EINPUT, path, (int)p->problem_mark.line + 1,
                        (int)p->problem_mark.column + 1, "", "malformed YAML: %s%s%s",
                        p->problem ? p->problem : "parse error", p->context ? " " : "",
                        p->context ? p->context : "");
}

/* After the first document: anything but the end of the stream is an error. */
static int expect_single_document(yaml_parser_t *p, const char *path, const char *what,
                                  ps_error *err)
{
    yaml_document_t next;
    if (!yaml_parser_load(p, &next))
        return parse_error(p, path, err);
    yaml_node_t *root = yaml_document_get_root_node(&next);
    int rc = 0;
    if (root)
        rc = ps_error_set(err, PS_EINPUT, path, (int)next.start_mark.line + 1,
                          (int)next.start_mark.column + 1, "",
                          "a second YAML document: a %s holds one document (remove the '---' "
                          "and what follows, or merge them)",
                          what);
    yaml_document_delete(&next);
    return rc;
}

/* A first pass over the parser's events: nesting deeper than PS_MAX_YAML_DEPTH is an error at
 * the mapping or list that goes too deep (libyaml's loader has no limit, and 100,000 levels take
 * it a minute). Malformed YAML is reported here too. */
static int check_depth(const unsigned char *text, size_t len, const char *path, const char *what,
                       ps_error *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return ps_error_set(err, PS_EINTERNAL, path, 0, 0, "", "cannot start the YAML parser");
    yaml_parser_set_input_string(&p, text, len);
    int depth = 0, rc = 0, done = 0;
    while (!rc && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = parse_error(&p, path, err);
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
            if (++depth > PS_MAX_YAML_DEPTH)
                rc = ps_error_set(err, PS_EINPUT, path, (int)ev.start_mark.line + 1,
                                  (int)ev.start_mark.column + 1, "",
                                  "the %s nests mappings and lists more than %d deep (protosim's "
                                  "limit)",
                                  what, PS_MAX_YAML_DEPTH);
        } else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return rc;
}

/* The whole file into *text (caller frees), at most PS_MAX_YAML_BYTES: a directory, an unreadable
 * or a larger file is an error. */
static int read_yaml_text(const char *path, const char *what, unsigned char **text, size_t *len,
                          ps_error *err)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "", "cannot open %s: %s", what,
                            strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "", "cannot read %s: is a directory", what);
    }
    size_t cap = 0, n = 0, r;
    unsigned char *buf = NULL;
    do {
        xgrow(&buf, 1, n + 65536 + 1, &cap);
        r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
    } while (r > 0 && n <= PS_MAX_YAML_BYTES);
    int bad = ferror(f);
    fclose(f);
    int rc = 0;
    if (bad)
        rc =
            ps_error_set(err, PS_EINPUT, path, 0, 0, "", "cannot read %s: %s", what, strerror(EIO));
    else if (n > PS_MAX_YAML_BYTES)
        rc = ps_error_set(err, PS_EINPUT, path, 0, 0, "",
                          "the %s is larger than %d bytes (protosim's limit: 16 MiB)", what,
                          PS_MAX_YAML_BYTES);
    if (rc) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = n;
    return 0;
}

/* The single document of `len` bytes of `text` into *out (NULL after an error). */
static int load_text(const unsigned char *text, size_t len, const char *path, const char *what,
                     ydoc **out, ps_error *err)
{
    *out = NULL;
    int rc = check_depth(text, len, path, what, err);
    if (rc)
        return rc;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return ps_error_set(err, PS_EINTERNAL, path, 0, 0, "", "cannot start the YAML parser");
    yaml_parser_set_input_string(&parser, text, len);
    ydoc *d = xcalloc(1, sizeof *d);
    if (!yaml_parser_load(&parser, &d->doc)) {
        rc = parse_error(&parser, path, err);
        free(d);
    } else if (yaml_document_get_root_node(&d->doc) &&
               (rc = expect_single_document(&parser, path, what, err))) {
        yread_doc_free(d);
    } else {
        *out = d;
    }
    yaml_parser_delete(&parser);
    return rc;
}

int yread_load_text(const char *text, size_t len, const char *path, const char *what, ydoc **doc,
                    ps_error *err)
{
    return load_text((const unsigned char *)text, len, path, what, doc, err);
}

int yread_load_file(const char *path, const char *what, ydoc **doc, ps_error *err)
{
    *doc = NULL;
    unsigned char *text;
    size_t len;
    int rc = read_yaml_text(path, what, &text, &len, err);
    if (rc)
        return rc;
    rc = load_text(text, len, path, what, doc, err);
    free(text);
    return rc;
}

void yread_doc_free(ydoc *doc)
{
    if (!doc)
        return;
    yaml_document_delete(&doc->doc);
    free(doc);
}

ynode *yread_root(ydoc *doc)
{
    return wrap(yaml_document_get_root_node(&doc->doc));
}

/* ---- locations and errors ---- */

src_loc yread_loc(ynode *n)
{
    src_loc l = {0, 0};
    if (n) {
        l.line = (int)raw(n)->start_mark.line + 1; /* libyaml marks are 0-based */
        l.column = (int)raw(n)->start_mark.column + 1;
    }
    return l;
}

int yread_fail(yread_ctx *c, ynode *n, const char *field, const char *fmt, ...)
{
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    src_loc l = yread_loc(n);
    return ps_error_set(c->err, PS_EINPUT, c->file, l.line, l.column, field, "%s", msg);
}

void yread_join_path(char *out, size_t size, const char *parent, const char *key)
{
    if (parent && parent[0])
        snprintf(out, size, "%s.%s", parent, key);
    else
        snprintf(out, size, "%s", key);
}

/* ---- node kinds and scalars ---- */

const char *yread_kind(ynode *n)
{
    switch (raw(n)->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE: return raw(n)->data.scalar.length ? "a scalar" : "an empty value";
    default: return "nothing";
    }
}

/* The scalar's text, or NULL when the node is not a scalar or holds an embedded NUL. */
const char *yread_scalar(ynode *n)
{
    if (!n || raw(n)->type != YAML_SCALAR_NODE)
        return NULL;
    const char *s = (const char *)raw(n)->data.scalar.value;
    if (strlen(s) != raw(n)->data.scalar.length)
        return NULL;
    return s;
}

int yread_is_mapping(ynode *n)
{
    return raw(n)->type == YAML_MAPPING_NODE;
}

int yread_is_list(ynode *n)
{
    return raw(n)->type == YAML_SEQUENCE_NODE;
}

/* Quoted scalars are strings in YAML: "2" is not the integer 2. */
static int yread_is_plain(ynode *n)
{
    return raw(n)->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
           raw(n)->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

/* How to name a value that has the wrong type, for messages: 'abc', a quoted string, a list. */
static void yread_describe(ynode *n, char *out, size_t size)
{
    const char *s = yread_scalar(n);
    if (!s || (!s[0] && yread_is_plain(n)))
        snprintf(out, size, "%s", yread_kind(n));
    else if (!yread_is_plain(n))
        snprintf(out, size, "the quoted string '%s' (quotes make it a string)", s);
    else
        snprintf(out, size, "'%s'", s);
}

int yread_expect_mapping(yread_ctx *c, ynode *n, const char *field)
{
    if (yread_is_mapping(n))
        return 0;
    return yread_fail(c, n, field, "expected a mapping, got %s", yread_kind(n));
}

/* A plain decimal integer of int range into *v; else an error. */
static int yread_integer(yread_ctx *c, ynode *n, const char *field, long *v)
{
    const char *s = yread_scalar(n);
    char what[160];
    yread_describe(n, what, sizeof what);
    if (!s || !yread_is_plain(n) || !s[0])
        return yread_fail(c, n, field, "expected an integer, got %s", what);
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!*p || strspn(p, "0123456789") != strlen(p))
        return yread_fail(c, n, field, "expected an integer, got '%s'", s);
    errno = 0;
    *v = strtol(s, NULL, 10);
    if (errno == ERANGE || *v < INT_MIN || *v > INT_MAX)
        return yread_fail(c, n, field, "integer '%s' is out of range", s);
    return 0;
}

int yread_int(yread_ctx *c, ynode *n, const char *field, int min, int max, int *out)
{
    long v;
    if (yread_integer(c, n, field, &v))
        return c->err->code;
    if (v < min || v > max) {
        if (max == INT_MAX)
            return yread_fail(c, n, field, "must be at least %d, got %ld", min, v);
        return yread_fail(c, n, field, "must be between %d and %d, got %ld", min, max, v);
    }
    *out = (int)v;
    return 0;
}

int yread_count(yread_ctx *c, ynode *n, const char *field, int min, int limit, int *out)
{
    long v;
    if (yread_integer(c, n, field, &v))
        return c->err->code;
    if (v < min)
        return yread_fail(c, n, field, "must be at least %d, got %ld", min, v);
    if (v > limit)
        return yread_fail(c, n, field, "%ld is more than %d (protosim's limit)", v, limit);
    *out = (int)v;
    return 0;
}

/* The one reader of decimal numbers: a plain (unquoted) finite decimal, > 0 or >= 0. */
static int yread_decimal(yread_ctx *c, ynode *n, const char *field, int allow_zero, double *out)
{
    const char *s = yread_scalar(n);
    char what[160];
    yread_describe(n, what, sizeof what);
    if (!s || !yread_is_plain(n) || !s[0])
        return yread_fail(c, n, field, "expected a number, got %s", what);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* strtod also takes "inf", "nan" and hex floats; YAML numbers here are plain decimals */
    if (*end || errno == ERANGE || !isfinite(v) || strpbrk(s, "xXnNiI"))
        return yread_fail(c, n, field, "expected a number, got '%s'", s);
    if (allow_zero ? v < 0 : v <= 0)
        return yread_fail(c, n, field, "must be %s 0, got %s",
                          allow_zero ? "at least" : "greater than", s);
    *out = v;
    return 0;
}

/* A number that must be finite and > 0 (bucket sizes). */
int yread_positive(yread_ctx *c, ynode *n, const char *field, double *out)
{
    return yread_decimal(c, n, field, 0, out);
}

int yread_nonnegative(yread_ctx *c, ynode *n, const char *field, double *out)
{
    return yread_decimal(c, n, field, 1, out);
}

int yread_bool(yread_ctx *c, ynode *n, const char *field, int *out)
{
    const char *s = yread_scalar(n);
    if (s && yread_is_plain(n)) {
        if (!strcasecmp(s, "true") || !strcasecmp(s, "yes")) {
            *out = 1;
            return 0;
        }
        if (!strcasecmp(s, "false") || !strcasecmp(s, "no")) {
            *out = 0;
            return 0;
        }
    }
    char what[160];
    yread_describe(n, what, sizeof what);
    return yread_fail(c, n, field, "expected a boolean (true/false/yes/no), got %s", what);
}

/* One of `names` (the YAML spelling); *out is its index. */
int yread_enum(yread_ctx *c, ynode *n, const char *field, enum_names names, int *out)
{
    const char *s = yread_scalar(n);
    int v = enum_parse(names, s);
    if (v >= 0) {
        *out = v;
        return 0;
    }
    char allowed[128] = "";
    for (int i = 0; i < names.count; i++) {
        size_t used = strlen(allowed);
        snprintf(allowed + used, sizeof allowed - used, "%s%s", i ? ", " : "", names.names[i]);
    }
    return yread_fail(c, n, field, "expected one of %s, got %s%s%s", allowed,
                      s ? "'" : yread_kind(n), s ? s : "", s ? "'" : "");
}

/* ---- mappings ---- */

int yread_fields(yread_ctx *c, ynode *m, const char *path, const yfield *fields, int n)
{
    for (int i = 0; i < n; i++) {
        const yfield *f = &fields[i];
        ynode *v = yread_map_get(c, m, f->key);
        if (!v)
            continue;
        char field[160];
        yread_join_path(field, sizeof field, path, f->key);
        int rc = 0;
        switch (f->kind) {
        case YFIELD_INT: rc = yread_int(c, v, field, f->min, f->max, f->out); break;
        case YFIELD_COUNT: rc = yread_count(c, v, field, f->min, f->max, f->out); break;
        case YFIELD_POSITIVE: rc = yread_positive(c, v, field, f->out); break;
        case YFIELD_BOOL: rc = yread_bool(c, v, field, f->out); break;
        case YFIELD_ENUM: rc = yread_enum(c, v, field, f->names, f->out); break;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* Check that every key of mapping `m` is a scalar in `allowed` and appears once. */
int yread_check_keys(yread_ctx *c, ynode *m, const char *path, const char *const *allowed,
                     int count)
{
    int pairs = yread_map_len(m);
    for (int i = 0; i < pairs; i++) {
        ypair p = yread_map_pair(c, m, i);
        ynode *k = p.key_node;
        const char *ks = p.key;
        if (!ks)
            return yread_fail(c, k, path, "keys must be plain names, got %s", yread_kind(k));
        char field[128];
        yread_join_path(field, sizeof field, path, ks);
        int known = 0;
        for (int a = 0; a < count && !known; a++)
            known = !strcmp(ks, allowed[a]);
        if (!known) {
            char list[512] = "";
            for (int a = 0; a < count; a++) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s", a ? ", " : "", allowed[a]);
            }
            return yread_fail(c, k, field, "unknown key '%s'%s%s (expected %s)", ks,
                              path[0] ? " in " : "", path, list);
        }
        for (int j = 0; j < i; j++) {
            const char *qs = yread_map_pair(c, m, j).key;
            if (qs && !strcmp(qs, ks))
                return yread_fail(c, k, field, "duplicate key '%s'", ks);
        }
    }
    return 0;
}

/* The value of `key` in mapping `m`, or NULL when absent. */
ynode *yread_map_get(yread_ctx *c, ynode *m, const char *key)
{
    int pairs = yread_map_len(m);
    for (int i = 0; i < pairs; i++) {
        ypair p = yread_map_pair(c, m, i);
        if (p.key && !strcmp(p.key, key))
            return p.value;
    }
    return NULL;
}

ynode *yread_required(yread_ctx *c, ynode *m, const char *path, const char *key)
{
    ynode *v = yread_map_get(c, m, key);
    if (!v) {
        char field[160];
        yread_join_path(field, sizeof field, path, key);
        yread_fail(c, m, field, "missing key '%s'", key);
    }
    return v;
}

/* ---- walking mappings and lists ---- */

int yread_map_len(ynode *m)
{
    if (raw(m)->type != YAML_MAPPING_NODE)
        return 0;
    return (int)(raw(m)->data.mapping.pairs.top - raw(m)->data.mapping.pairs.start);
}

ypair yread_map_pair(yread_ctx *c, ynode *m, int i)
{
    assert(i >= 0 && i < yread_map_len(m));
    const yaml_node_pair_t *p = &raw(m)->data.mapping.pairs.start[i];
    ypair out;
    out.key_node = wrap(yaml_document_get_node(&c->doc->doc, p->key));
    out.key = yread_scalar(out.key_node);
    out.value = wrap(yaml_document_get_node(&c->doc->doc, p->value));
    return out;
}

int yread_list_len(ynode *n)
{
    if (raw(n)->type != YAML_SEQUENCE_NODE)
        return 0;
    return (int)(raw(n)->data.sequence.items.top - raw(n)->data.sequence.items.start);
}

ynode *yread_list_item(yread_ctx *c, ynode *n, int i)
{
    assert(i >= 0 && i < yread_list_len(n));
    return wrap(yaml_document_get_node(&c->doc->doc, raw(n)->data.sequence.items.start[i]));
}

int yread_list(yread_ctx *c, ynode *n, const char *field, int *count)
{
    if (!yread_is_list(n))
        return yread_fail(c, n, field, "expected a list, got %s", yread_kind(n));
    *count = yread_list_len(n);
    return 0;
}
