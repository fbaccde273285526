/*
 * A gc_events that records what the library reports, for tests to assert on: every event is one
 * line "<kind>: <text>" in `lines` (kind: trace, notice, warning, progress, progress-end).
 */
#ifndef GCLUSTER_TEST_EVENTS_H
#define GCLUSTER_TEST_EVENTS_H

#include "gcluster/buf.h"
#include "gcluster/events.h"

#include <stddef.h>

typedef struct test_events {
    gc_events events; /* pass &t.events to the library */
    gc_buf lines;
} test_events;

void test_events_init(test_events *t);
void test_events_free(test_events *t);
/* How many recorded lines contain `needle`. */
size_t test_events_count(const test_events *t, const char *needle);

#endif
