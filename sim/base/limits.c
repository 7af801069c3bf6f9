/* limits.c: checked products of sizes computed from input (limits.h): an overflow or a product
 * beyond its limit is an input error at the field that caused it. */
#include "limits.h"

#include <assert.h>
#include <inttypes.h>

int ps_mul_exceeds(int64_t a, int64_t b, int64_t limit)
{
    assert(a >= 0 && b >= 0 && limit >= 0);
    return b != 0 && a > limit / b;
}

int ps_mul_checked(int64_t a, int64_t b, int64_t limit, ps_where w, const char *what, int64_t *out,
                   ps_error *err)
{
    int64_t f[2] = {a, b};
    return ps_product_checked(f, 2, limit, w, what, out, err);
}

int ps_product_checked(const int64_t *factors, int n, int64_t limit, ps_where w, const char *what,
                       int64_t *out, ps_error *err)
{
    int64_t p = 1;
    int over = 0;
    for (int i = 0; i < n; i++) {
        if (factors[i] < 0 || ps_mul_exceeds(p, factors[i], limit))
            over = 1;
        else
            p *= factors[i];
    }
    if (!over) {
        if (out)
            *out = p;
        return 0;
    }
    char terms[256] = "";
    int len = 0;
    for (int i = 0; i < n && len >= 0 && (size_t)len < sizeof terms; i++)
        len += snprintf(terms + len, sizeof terms - (size_t)len, "%s%" PRId64, i ? " x " : "",
                        factors[i]);
    return ps_error_set(err, PS_EINPUT, w.file, w.loc.line, w.loc.column, w.field,
                        "%s: %s is more than %" PRId64 " (protosim's limit)", what, terms, limit);
}
