/* yaml_read.h: the one place that walks YAML. It loads a file into a document and reads its
 * nodes (kinds, scalars, mappings in document order, lists) and typed values that keep their
 * location; no other file sees libyaml. Shared by the strategy, sweep, model, cluster and device
 * parsers. Every failure is a PS_EINPUT naming file:line:column and field. */
#ifndef PROTOSIM_YAML_READ_H
#define PROTOSIM_YAML_READ_H

#include <stddef.h>

#include "error.h"
#include "vocab.h"

/* A loaded document, and one node of it (a mapping, a list or a scalar). Nodes live as long as
 * their document; nothing here changes them. */
typedef struct ydoc ydoc;
typedef struct ynode ynode;

/* Everything a reader needs to read one node and report an error at it. */
typedef struct yread_ctx {
    ydoc *doc;
    const char *file;
    ps_error *err;
} yread_ctx;

/* The one YAML file loader: the single document of file `path` into *doc (the caller frees it
 * with yread_doc_free; NULL after an error). `what` names the file's role in messages ("strategy
 * file"). PS_EINPUT errors: cannot open (with the system's reason), a directory, malformed YAML
 * (at the parser's line and column), a second document (`---`). An empty file loads as a
 * document without a root node: the caller says what was missing. */
int yread_load_file(const char *path, const char *what, ydoc **doc, ps_error *err);
/* The same for `len` bytes of YAML text already in memory, named `path` in messages. */
int yread_load_text(const char *text, size_t len, const char *path, const char *what, ydoc **doc,
                    ps_error *err);
void yread_doc_free(ydoc *doc);
/* The document's root node, or NULL when it is empty. */
ynode *yread_root(ydoc *doc);

/* Locations and errors. yread_loc(NULL) is {0, 0}; yread_fail returns the error code. */
src_loc yread_loc(ynode *n);
int yread_fail(yread_ctx *c, ynode *n, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void yread_join_path(char *out, size_t size, const char *parent, const char *key);

/* Node kinds and scalars: "a mapping", "a list", ...; the scalar's text, or NULL when n is not
 * a scalar (or holds a NUL). */
const char *yread_kind(ynode *n);
const char *yread_scalar(ynode *n);
int yread_is_mapping(ynode *n);
int yread_is_list(ynode *n);

/* Typed values: 0 on success, the error code otherwise. Quoted scalars are strings. */
int yread_expect_mapping(yread_ctx *c, ynode *n, const char *field);
int yread_int(yread_ctx *c, ynode *n, const char *field, int min, int max, int *out);
/* An integer >= min and at most `limit`, one of protosim's input limits (sim/base/limits.h):
 * "N is more than LIMIT (protosim's limit)" past it. */
int yread_count(yread_ctx *c, ynode *n, const char *field, int min, int limit, int *out);
/* Numbers are plain finite decimals: quoted, hex, inf and nan are refused everywhere. */
int yread_positive(yread_ctx *c, ynode *n, const char *field, double *out);
int yread_nonnegative(yread_ctx *c, ynode *n, const char *field, double *out);
int yread_bool(yread_ctx *c, ynode *n, const char *field, int *out);
int yread_enum(yread_ctx *c, ynode *n, const char *field, enum_names names, int *out);

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
int yread_fields(yread_ctx *c, ynode *m, const char *path, const yfield *fields, int n);

/* Mappings: every key a known plain name, once; the value of `key`, or NULL; the value of a
 * required key (NULL after a "missing key" error at m, field path.key). */
int yread_check_keys(yread_ctx *c, ynode *m, const char *path, const char *const *allowed,
                     int count);
ynode *yread_map_get(yread_ctx *c, ynode *m, const char *key);
ynode *yread_required(yread_ctx *c, ynode *m, const char *path, const char *key);

/* A mapping's pairs in document order, i in 0 .. yread_map_len(m) - 1 (0 when m is not a
 * mapping): the key's text (yread_scalar of its node: NULL when the key is not a scalar), the
 * key's node (for locations) and the value's node. */
typedef struct ypair {
    const char *key;
    ynode *key_node;
    ynode *value;
} ypair;
int yread_map_len(ynode *m);
ypair yread_map_pair(yread_ctx *c, ynode *m, int i);

/* Lists: their length (0 when n is not a list) and item i. yread_list checks that n is a list
 * ("expected a list" error otherwise) and gives its length. */
int yread_list_len(ynode *n);
ynode *yread_list_item(yread_ctx *c, ynode *n, int i);
int yread_list(yread_ctx *c, ynode *n, const char *field, int *count);

#endif
