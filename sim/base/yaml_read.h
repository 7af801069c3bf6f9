/* yaml_read.h: typed reads from a libyaml document that keep each value's location, shared by
 * the strategy and sweep parsers. Every failure is a PS_EINPUT naming file:line:column and field. */
#ifndef PROTOSIM_YAML_READ_H
#define PROTOSIM_YAML_READ_H

#include <stddef.h>

#include <yaml.h>

#include "error.h"
#include "vocab.h"

/* Everything a reader needs to read one node and report an error at it. */
typedef struct yread_ctx {
    yaml_document_t *doc;
    const char *file;
    ps_error *err;
} yread_ctx;

/* The one YAML file loader: the single document of file `path` into *doc (the caller deletes
 * it with yaml_document_delete). `what` names the file's role in messages ("strategy file").
 * PS_EINPUT errors: cannot open (with the system's reason), a directory, malformed YAML (at the
 * parser's line and column), a second document (`---`). An empty file loads as a document
 * without a root node: the caller says what was missing. */
int yread_load_file(const char *path, const char *what, yaml_document_t *doc, ps_error *err);

/* Locations and errors. yread_loc(NULL) is {0, 0}; yread_fail returns the error code. */
src_loc yread_loc(const yaml_node_t *n);
int yread_fail(yread_ctx *c, const yaml_node_t *n, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void yread_join_path(char *out, size_t size, const char *parent, const char *key);

/* Node kinds and scalars: "a mapping", "a list", ...; the scalar's text or NULL. */
const char *yread_kind(const yaml_node_t *n);
const char *yread_scalar(const yaml_node_t *n);

/* Typed values: 0 on success, the error code otherwise. Quoted scalars are strings. */
int yread_expect_mapping(yread_ctx *c, const yaml_node_t *n, const char *field);
int yread_int(yread_ctx *c, const yaml_node_t *n, const char *field, int min, int max, int *out);
/* An integer >= min and at most `limit`, one of protosim's input limits (sim/base/limits.h):
 * "N is more than LIMIT (protosim's limit)" past it. */
int yread_count(yread_ctx *c, const yaml_node_t *n, const char *field, int min, int limit,
                int *out);
/* Numbers are plain finite decimals: quoted, hex, inf and nan are refused everywhere. */
int yread_positive(yread_ctx *c, const yaml_node_t *n, const char *field, double *out);
int yread_nonnegative(yread_ctx *c, const yaml_node_t *n, const char *field, double *out);
int yread_bool(yread_ctx *c, const yaml_node_t *n, const char *field, int *out);
int yread_enum(yread_ctx *c, const yaml_node_t *n, const char *field, enum_names names, int *out);

/* Optional keys of one mapping, read by a table: each present key into its field, in table
 * order; an absent key leaves its field as it is (the default). */
typedef enum { YFIELD_INT, YFIELD_COUNT, YFIELD_POSITIVE, YFIELD_BOOL, YFIELD_ENUM } yfield_kind;
typedef struct yfield {
    const char *key;
    yfield_kind kind;
    void *out;        /* int * (INT, COUNT, BOOL, ENUM) or double * (POSITIVE) */
    int min, max;     /* YFIELD_INT's range; YFIELD_COUNT's minimum and limit */
    enum_names names; /* YFIELD_ENUM */
} yfield;
int yread_fields(yread_ctx *c, yaml_node_t *m, const char *path, const yfield *fields, int n);

/* Mappings: every key a known plain name, once; the value of `key`, or NULL; the value of a
 * required key (NULL after a "missing key" error at m, field path.key). */
int yread_check_keys(yread_ctx *c, yaml_node_t *m, const char *path, const char *const *allowed,
                     int count);
yaml_node_t *yread_map_get(yread_ctx *c, yaml_node_t *m, const char *key);
yaml_node_t *yread_required(yread_ctx *c, yaml_node_t *m, const char *path, const char *key);

/* Lists: the items of n and their number (NULL after an "expected a list" error when n is not
 * one); an item's node is yaml_document_get_node(c->doc, items[i]). */
yaml_node_item_t *yread_list(yread_ctx *c, yaml_node_t *n, const char *field, int *count);

#endif
