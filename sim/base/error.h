/* error.h: the one error type of protosim, carrying file:line:column, field and message.
 * Errors are values returned up the call chain and printed once by main. */
#ifndef PROTOSIM_ERROR_H
#define PROTOSIM_ERROR_H

#include <stdio.h>

enum { PS_OK = 0, PS_EINPUT = 1, PS_ENOMEM_PLAN = 2, PS_EINTERNAL = 3 };

typedef struct ps_error {
    int code;         /* PS_EINPUT, PS_EINTERNAL; 0 when no error */
    char file[512];   /* input file the error is in, "" if none */
    int line, column; /* 1-based; 0 when unknown */
    char field[128];  /* dotted path of the offending field, "" if none */
    char message[768];
} ps_error;

/* Record an error (first one wins: later calls do not overwrite). Returns e->code. */
int ps_error_set(ps_error *e, int code, const char *file, int line, int column, const char *field,
                 const char *fmt, ...) __attribute__((format(printf, 7, 8)));
void ps_error_clear(ps_error *e);
/* "file:line:column: field 'x': message" on one line. */
void ps_error_print(const ps_error *e, FILE *out);

#endif
