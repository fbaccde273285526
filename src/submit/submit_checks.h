/*
 * The checks a connected `job submit` makes of its JobSet before creating it (internal to submit/),
 * which submit_live.c's table of checks runs on what the first round trip read: whether the
 * ClusterQueue can ever admit it (queue_fit.c), what multi-tier checkpointing and dynamic
 * slicing need of the cluster (submit_needs.c); and the Jobs its controller will create, for a
 * server-side dry run (child_jobs.c).
 */
#ifndef GCLUSTER_SUBMIT_SUBMIT_CHECKS_H
#define GCLUSTER_SUBMIT_SUBMIT_CHECKS_H

#include "gcluster/buf.h"
#include "gcluster/submit.h"
#include "submit/cluster_facts.h"

#include <jansson.h>
#include <stdbool.h>

/* Whether the ClusterQueue keeps cpu and memory out of the resource group that covers
 * google.com/tpu (as xpk and earlier Cluster Toolkit releases configure it). When it does, `why`
 * receives the reason for TPU pods to request google.com/tpu alone: the ClusterQueue keeps cpu
 * and memory apart, in flavors that would pin the pods to their nodes (named with their node
 * labels). */
bool submit_queue_splits_tpu(const cluster_facts *f, gc_buf *why);

/* Whether Kueue could ever admit `jobset` from the ClusterQueue of `f`: the Kueue model
 * (kueue_model.h) with the queue empty (each pod set a flavor per resource group it requests,
 * whose node labels and taints suit its pods, with quota for all its pods: nominal, plus what the
 * cohort may lend); then that the flavors' node labels together still name nodes the cluster
 * has. 0 when it can, or when the ClusterQueue or its flavors could not be read (a node pool a
 * flavor pins pods to is read when `f` has not seen it); GC_EXIT_USAGE with a one-line error
 * naming the pod set, the flavors (or the taint) and the fix when it never can. */
int submit_queue_fit(cluster_facts *f, const json_t *jobset, const gc_workload *w, gc_error *err);

/* The first Job of each replicated job of `jobset` (index 0: the others differ only in the
 * numbers of their index labels), as the JobSet controller will create it in namespace `ns`. */
json_t *submit_child_jobs(const json_t *jobset, const char *ns);

/* The flags that set the fields a Job rejection's `message` names (the API server's
 * "spec.template.spec.volumes[1].hostPath.path: ..." causes), looked up in the rejected `job`
 * and the user's variables of `w`: "--mount", "--env-file team.env:3", ...; empty when the
 * fields are gcluster's own. */
void submit_rejected_flags(const char *message, const json_t *job, const gc_workload *w,
                           gc_buf *out);

/* What the cluster must have for the features the plan's workload asks for beyond JobSet and
 * Kueue, from what the first round trip read (SUBMIT_READ_MTC, SUBMIT_READ_SLICING):
 * multi-tier checkpointing's CRD, CheckpointConfiguration and CSI driver; TPU7x dynamic
 * slicing's Kueue Topology and the slice controller's AdmissionCheck on the job's ClusterQueue.
 * GC_EXIT_USAGE with the fix when something is missing; what could not be read is appended to
 * `warnings`. */
int submit_check_mtc(const gc_submit_plan *plan, const cluster_facts *f, gc_strings *warnings,
                     gc_error *err);
int submit_check_slicing(const gc_submit_plan *plan, const cluster_facts *f, gc_strings *warnings,
                         gc_error *err);

/* Names the gateways of the workload's profile= mounts for the namespace of `kube` (the
 * JobSet's claims and plan->gateways follow; gateways.c). */
int submit_gateways_name(gc_kube *kube, gc_submit_plan *plan, gc_error *err);
/* GC_EXIT_USAGE with the fix when the cluster has not the gcsfusecsi-* StorageClass a gateway
 * needs, as the first round trip read it (SUBMIT_READ_STORAGE_CLASSES; one that may not be read
 * is taken to be there). */
int submit_gateways_check(const gc_submit_plan *plan, const cluster_facts *f, gc_error *err);
/* The gateway objects as the first round read them (SUBMIT_READ_GATEWAYS): appends those that
 * are not there to `missing` (the last round creates them with the JobSet), reuses those that
 * are, makes a Released volume of ours anew (not with `dry_run`); notices on `ev` say which.
 * An error names the object and the fix; a read that failed other than 404 is the error. */
int submit_gateways_settle(gc_kube *kube, const gc_submit_plan *plan, const cluster_facts *f,
                           bool dry_run, const gc_events *ev, json_t *missing, gc_error *err);
/* A gateway's server-side dry run that failed (`err`): 0 when another submit made it meanwhile,
 * else the error naming it. */
int submit_gateway_dry_run_failure(const json_t *gateway, gc_error *err);
/* The creates of the `missing` gateways (creates[i] for missing[i]), sent with JobSet `job`'s:
 * a notice for each created, and the first failure as an error naming the object and the fix
 * (whether `job_created` says what the fix is). */
int submit_gateways_created(const json_t *missing, gc_kube_create_request *creates, const char *job,
                            bool job_created, const gc_events *ev, gc_error *err);

/* GCLUSTER_DISABLE_JOBSET=1: submit runs a job that fits as an Indexed Job (indexed_job.c). */
bool submit_jobset_disabled(void);
/* Creates `w` without JobSet: its headless Service, then its Indexed Job (server-side dry runs
 * with `dry_run`). GC_EXIT_USAGE when `w` needs JobSet (several slices, Pathways). */
int submit_indexed_job(gc_kube *kube, const gc_submit_plan *plan, bool dry_run, const gc_events *ev,
                       gc_error *err);

/* Overlays (overlay.c): merges `patch` onto `target` as RFC 7386 says (a mapping key by key, null
 * removes, any other value replaces); and the overlay of `file` (GC_TEMPLATE_*) of `overlays`,
 * if there is one, onto `object`. */
void submit_merge_patch(json_t *target, const json_t *patch);
void submit_overlay_apply(const json_t *overlays, const char *file, json_t *object);

#endif
