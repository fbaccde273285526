/*
 * After `job cancel`: the storage-profile gateways of the namespace that no job mounts any more
 * go too (internal to job/).
 */
#ifndef GCLUSTER_JOB_GATEWAY_CLEANUP_H
#define GCLUSTER_JOB_GATEWAY_CLEANUP_H

#include "gcluster/events.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"

/* Deletes every gateway claim of the namespace (labels gcluster.google.com/managed-by=
 * cluster-toolkit, storage-type=gcsfuse) that no JobSet or Job other than `cancelled` mounts,
 * and the PersistentVolume bound to it, as Google's `job cancel` does. A claim made in the last
 * two minutes stays (a job being submitted at the same time may be about to mount it;
 * GCLUSTER_GATEWAY_MIN_AGE=SECONDS changes the two minutes). The claims deleted are appended to
 * `removed`; what could not be read or deleted is a warning on `ev`, never a failed cancel. */
void job_gateways_cleanup(gc_kube *kube, const char *cancelled, const gc_events *ev,
                          gc_strings *removed);

#endif
