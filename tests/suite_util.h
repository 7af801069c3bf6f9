/* suite_util.h: the main of every Check test program: run a suite, return the exit status. */
#ifndef PROTOSIM_TESTS_SUITE_UTIL_H
#define PROTOSIM_TESTS_SUITE_UTIL_H

#include <check.h>

/* Run every test of s, each in its own process (one SimGrid engine per test, and a crash fails
 * one test, not the program), print Check's summary, free s; EXIT_SUCCESS when all passed. */
int suite_run(Suite *s);

#endif
