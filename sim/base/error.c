/* error.c: recording and printing protosim's error values.
 * See error.h; main prints the single error a run produced. */
#include "error.h"

#include <stdarg.h>
#include <string.h>

int ps_error_set(ps_error *e, int code, const char *file, int line, int column, const char *field,
                 const char *fmt, ...)
{
    if (!e)
        return code;
    if (e->code) /* keep the first, it is the cause */
        return e->code;
    e->code = code;
    snprintf(e->file, sizeof e->file, "%s", file ? file : "");
    e->line = line;
    e->column = column;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return code;
}

void ps_error_clear(ps_error *e)
{
    memset(e, 0, sizeof *e);
}

void ps_error_print(const ps_error *e, FILE *out)
{
    fputs("protosim: error: ", out);
    if (e->file[0]) {
        fputs(e->file, out);
        if (e->line > 0)
            fprintf(out, ":%d:%d", e->line, e->column);
        fputs(": ", out);
    }
    if (e->field[0])
        fprintf(out, "field '%s': ", e->field);
    fprintf(out, "%s\n", e->message);
}
