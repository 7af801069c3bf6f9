/* suite_util.c: what every Check test program's main does. */
#include "suite_util.h"

#include <stdlib.h>

TCase *suite_add_tests(Suite *s, const char *name, int timeout_s, const TTest *const *tests)
{
    TCase *tc = tcase_create(name);
    if (timeout_s)
        tcase_set_timeout(tc, timeout_s);
    for (; tests && *tests; tests++)
        tcase_add_test(tc, *tests);
    suite_add_tcase(s, tc);
    return tc;
}

Suite *suite_of(const char *name, const char *tcase, int timeout_s, const TTest *const *tests)
{
    Suite *s = suite_create(name);
    suite_add_tests(s, tcase, timeout_s, tests);
    return s;
}

int suite_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
