/* platform_scan.h: a SimGrid platform file read with libxml2 before SimGrid sees it: XML errors
 * with their line and column, source lines of hosts and links, and the platform mistakes that
 * SimGrid answers with an abort, a crash or a hang instead of an error. */
#ifndef PROTOSIM_PLATFORM_SCAN_H
#define PROTOSIM_PLATFORM_SCAN_H

#include "../sim/base/error.h"

typedef struct platform_scan platform_scan;

/* Read the platform at path and check what SimGrid would abort, crash or hang on (the rules head
 * platform_scan.c): a path that is not a regular file, XML that is not well formed, <include>,
 * a link or netpoint (host, router, zone) id given twice, a route given twice in a zone, a zone
 * routing other than Full, Floyd, Dijkstra, DijkstraCache and None, and a graph zone that does
 * not join its vertices both ways. 0 and *out (free it with platform_scan_free), or a PS_EINPUT
 * error naming the file, line and column. */
int platform_scan_file(const char *path, platform_scan **out, ps_error *err);

/* Two GPU-bearing members of a Full or None zone (hosts, or zones holding GPUs; or one of them
 * and a gateway of the zone) without a route between them, which SimGrid would route over no
 * link at all: a PS_EINPUT error naming the zone and both members. With the graph zones checked
 * by platform_scan_file, every pair of GPUs is then joined by a route. */
int platform_scan_check_pairs(platform_scan *s, ps_error *err);

/* Source line of `<host id="name"`, `<link id="name"` (kind "host" or "link"); 0 if none. */
int platform_scan_line(const platform_scan *s, const char *kind, const char *name);

void platform_scan_free(platform_scan *s);

#endif
