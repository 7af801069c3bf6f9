/* suite_util.h: what every Check test program's main does: gather its tests into a suite, run
 * it, return the exit status. */
#ifndef PROTOSIM_TESTS_SUITE_UTIL_H
#define PROTOSIM_TESTS_SUITE_UTIL_H

#include <check.h>

/* Add a test case `name` holding tests[] (NULL-terminated; NULL for none) to s, each test
 * given timeout_s seconds (0: Check's default, CK_DEFAULT_TIMEOUT or 4 s); returns the case, for
 * loop tests. */
TCase *suite_add_tests(Suite *s, const char *name, int timeout_s, const TTest *const *tests);
/* A suite `name` of the one test case suite_add_tests makes. */
Suite *suite_of(const char *name, const char *tcase, int timeout_s, const TTest *const *tests);
/* Run every test of s, each in its own process (one SimGrid engine per test, and a crash fails
 * one test, not the program), print Check's summary, free s; EXIT_SUCCESS when all passed. */
int suite_run(Suite *s);

#endif
