/*
 * Gateways of storage-profile mounts: the PersistentVolume on a gcsfusecsi-* StorageClass and
 * the claim bound to it that a `profile=` mount goes through (gcluster/manifest.h says why).
 */
#include "manifest/pod.h"

#include "gcluster/buf.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* GKE's GCS FUSE CSI driver ignores the size; Kubernetes requires one on both objects. */
#define GATEWAY_CAPACITY "5Gi"
#define GATEWAY_PREFIX   "gcluster-gcsfuse-"
/* The volume is named <claim>-<namespace> and must fit 253 characters, so the claim keeps 63
 * for the namespace and the '-' between. */
#define GATEWAY_CLAIM_MAX 189

const char *gc_storage_profile_class(const char *profile)
{
    static const char *const classes[] = {"gcsfusecsi-training", "gcsfusecsi-checkpointing",
                                          "gcsfusecsi-serving"};
    for (size_t i = 0; i < sizeof(classes) / sizeof(*classes); i++) {
        const char *short_name = classes[i] + strlen("gcsfusecsi-");
        if (!strcasecmp(profile, short_name) || !strcasecmp(profile, classes[i]))
            return classes[i];
    }
    return NULL;
}

/* FNV-1a: a stable digest for names, not a security property. */
static uint64_t digest(const char *text)
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

/* Lower case; anything but a letter or digit becomes '-'; no "--"; no '-' at either end. */
static char *dns_name(const char *text)
{
    char *out = gc_xstrdup(text);
    size_t n = 0;
    for (const char *p = text; *p; p++) {
        char c = (char)tolower((unsigned char)*p);
        if (!isalnum((unsigned char)c))
            c = '-';
        if (c == '-' && (n == 0 || out[n - 1] == '-'))
            continue;
        out[n++] = c;
    }
    while (n && out[n - 1] == '-')
        n--;
    out[n] = '\0';
    return out;
}

static json_t *gateway_labels(void)
{
    return json_pack("{s:s, s:s}", GC_LABEL_MANAGED_BY, GC_MANAGED_BY_TOOLKIT,
                     GC_LABEL_STORAGE_TYPE, GC_STORAGE_GCSFUSE);
}

/* The volume's spec, with the claim it is reserved for (named `claim`, "" to digest). */
static json_t *volume_spec(const gc_mount *m, const char *ns, const char *claim)
{
    json_t *csi =
        json_pack("{s:s, s:s}", "driver", "gcsfuse.csi.storage.gke.io", "volumeHandle", m->source);
    if (m->attributes.count) {
        json_t *attributes = json_object();
        for (size_t i = 0; i < m->attributes.count; i++) {
            const char *kv = m->attributes.items[i];
            char *key = gc_xstrndup(kv, strcspn(kv, "="));
            attributes = manifest_jset(attributes, key, json_string(kv + strlen(key) + 1));
            free(key);
        }
        csi = manifest_jset(csi, "volumeAttributes", attributes);
    }
    json_t *spec = json_pack("{s:[s], s:{s:s}, s:s, s:s, s:{s:s, s:s}, s:o}", "accessModes",
                             "ReadWriteMany", "capacity", "storage", GATEWAY_CAPACITY,
                             "persistentVolumeReclaimPolicy", "Retain", "storageClassName",
                             m->profile, "claimRef", "namespace", ns, "name", claim, "csi", csi);
    if (m->options) {
        /* A PersistentVolume takes gcsfuse's options as a list, one per item. */
        json_t *options = json_array();
        for (const char *p = m->options; *p;) {
            size_t n = strcspn(p, ",");
            if (n)
                options = manifest_jappend(options, json_stringn(p, n));
            p += n + (p[n] == ',');
        }
        spec = manifest_jset(spec, "mountOptions", options);
    }
    return spec;
}

static char *claim_name(const gc_mount *m, const char *ns)
{
    json_t *spec = volume_spec(m, ns, "");
    char *text = spec ? json_dumps(spec, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(spec);
    if (!text)
        return NULL;
    char suffix[64];
    snprintf(suffix, sizeof(suffix), "%s-%06llx", m->profile + strlen("gcsfusecsi-"),
             (unsigned long long)(digest(text) & 0xffffff));
    free(text);
    char *bucket = dns_name(m->source);
    size_t budget = GATEWAY_CLAIM_MAX - strlen(GATEWAY_PREFIX) - strlen(suffix) - 1;
    /* A bucket whose name lost '.' or '_' or was cut short keeps a digest of its whole name, so
     * two buckets never share a gateway. */
    if (strcmp(bucket, m->source) != 0 || strlen(bucket) > budget) {
        char tail[16];
        snprintf(tail, sizeof(tail), "-%010llx",
                 (unsigned long long)(digest(m->source) & 0xffffffffffull));
        size_t keep = strlen(bucket);
        if (keep > budget - strlen(tail))
            keep = budget - strlen(tail);
        while (keep && bucket[keep - 1] == '-')
            keep--;
        bucket[keep] = '\0';
        char *shorter = gc_xasprintf("%s%s", bucket, tail);
        free(bucket);
        bucket = shorter;
    }
    char *name = gc_xasprintf(GATEWAY_PREFIX "%s-%s", bucket, suffix);
    free(bucket);
    return name;
}

static json_t *gateway_pair(const gc_mount *m, const char *ns)
{
    char *volume = gc_xasprintf("%s-%s", m->gateway, ns);
    json_t *pv = json_pack("{s:s, s:s, s:{s:s, s:o}, s:o}", "apiVersion", "v1", "kind",
                           "PersistentVolume", "metadata", "name", volume, "labels",
                           gateway_labels(), "spec", volume_spec(m, ns, m->gateway));
    json_t *pvc = json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:[s], s:{s:{s:s}}, s:s, s:s}}",
                            "apiVersion", "v1", "kind", "PersistentVolumeClaim", "metadata", "name",
                            m->gateway, "namespace", ns, "labels", gateway_labels(), "spec",
                            "accessModes", "ReadWriteMany", "resources", "requests", "storage",
                            GATEWAY_CAPACITY, "storageClassName", m->profile, "volumeName", volume);
    free(volume);
    return json_pack("[o, o]", pv, pvc);
}

int gc_workload_gateways(gc_workload *w, const char *ns, json_t **objects, gc_error *err)
{
    *objects = json_array();
    for (size_t i = 0; i < w->mount_count; i++) {
        gc_mount *m = &w->mounts[i];
        if (m->kind != GC_MOUNT_GCS || !m->profile)
            continue;
        free(m->gateway);
        m->gateway = claim_name(m, ns);
        bool seen = false;
        for (size_t j = 0; m->gateway && j < i; j++)
            seen = seen || (w->mounts[j].gateway && !strcmp(w->mounts[j].gateway, m->gateway));
        json_t *pair = m->gateway && !seen ? gateway_pair(m, ns) : NULL;
        if (!m->gateway || (!seen && (!pair || json_array_extend(*objects, pair) != 0))) {
            json_decref(pair);
            json_decref(*objects);
            *objects = NULL;
            return gc_fail(err, GC_EXIT_USAGE,
                           "--mount: the gateway for gs://%s cannot be built (a value that is "
                           "not UTF-8?)",
                           m->source);
        }
        json_decref(pair);
    }
    return 0;
}
