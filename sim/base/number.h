/* number.h: the one parser of numbers typed on the command line (options, --what-if specs):
 * strict decimal counts, decimals and byte sizes; sign, spaces, hex, nan, inf and junk refused. */
#ifndef PROTOSIM_NUMBER_H
#define PROTOSIM_NUMBER_H

/* Each returns 0, or -1 when the whole string is not one such number.
 * ps_parse_count: decimal digits, at most 1e9. ps_parse_decimal: digits, optional fraction and
 * exponent, finite. ps_parse_size: digits then an optional K, M, G, T (powers of 1000; also k)
 * or Ki, Mi, Gi, Ti (powers of 1024): "1M" = 1000000, "1Gi" = 1073741824; at most PS_MAX_BYTES. */
int ps_parse_count(const char *s, int *out);
int ps_parse_decimal(const char *s, double *out);
int ps_parse_size(const char *s, double *out);

#endif
