/*
 * gcp: the forms of Google Cloud names gcluster stores, prints and passes to gcloud (or to a
 * registry), in one home below every room that needs them (catalog/, image/, deploy/, cli/).
 */
#ifndef GCLUSTER_GCP_H
#define GCLUSTER_GCP_H

#include <stdbool.h>
#include <stddef.h>

/* Lower-case letters, digits and hyphens, `min` to `max` characters, starting with a letter and
 * not ending with a hyphen: the form most Google Cloud resource names take. */
bool gc_gcp_is_name(const char *s, size_t min, size_t max);
/* Google Cloud name forms, checked before a value is stored, printed or passed to gcloud:
 * project IDs (6-30 of [a-z0-9-], a letter first, no trailing '-'; or DOMAIN:ID), GKE cluster
 * and node-pool names (the same, at most 40), regions and zones (us-central1, us-central1-a),
 * machine types ([a-z0-9-], a letter first, at most 63). Artifact Registry repository IDs
 * take gc_gcp_is_name(s, 1, 63). */
bool gc_gcp_is_project_id(const char *s);
bool gc_gcp_is_gke_name(const char *s);
bool gc_gcp_is_location(const char *s);
bool gc_gcp_is_machine_type(const char *s);

#endif
