/*
 * Reading Kubernetes objects: metadata, conditions, quantities, requests, containers, and the
 * node selection and taint rules the scheduler and Kueue apply to a pod.
 */
#include "gcluster/kube.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gc_kube_same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

const char *gc_kube_string(const json_t *object, const char *key)
{
    return json_string_value(json_object_get(object, key));
}

const char *gc_kube_string_or(const json_t *object, const char *key, const char *fallback)
{
    const char *s = gc_kube_string(object, key);
    return s ? s : fallback;
}

const char *gc_kube_field(const json_t *object, const char *section, const char *key)
{
    const json_t *metadata = json_object_get(object, "metadata");
    if (section)
        metadata = json_object_get(metadata, section);
    return gc_kube_string(metadata, key);
}

const json_t *gc_kube_condition(const json_t *object, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(object, "status"), "conditions"), i, c)
    {
        const char *t = gc_kube_string(c, "type");
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

bool gc_kube_condition_true(const json_t *object, const char *type)
{
    const char *s = gc_kube_string(gc_kube_condition(object, type), "status");
    return s && !strcmp(s, "True");
}

double gc_kube_quantity(const json_t *value)
{
    if (json_is_number(value))
        return json_number_value(value);
    return gc_quantity_value(json_string_value(value));
}

void gc_kube_format_quantity(double value, const char *resource, char *out, size_t size)
{
    bool bytes = resource && (!strcmp(resource, "memory") || strstr(resource, "storage"));
    if (bytes && value >= 1073741824.0)
        snprintf(out, size, "%gGi", round(value / 1073741824.0 * 100) / 100);
    else if (bytes && value >= 1048576.0)
        snprintf(out, size, "%gMi", round(value / 1048576.0 * 100) / 100);
    else
        snprintf(out, size, "%g", round(value * 1000) / 1000);
}

/* A container's requests after the API server's defaulting: a resource with a limit and no
 * request is requested at its limit. Added to `into`. */
static void add_container(json_t *into, const json_t *container)
{
    const json_t *resources = json_object_get(container, "resources");
    const json_t *requests = json_object_get(resources, "requests");
    const json_t *limits = json_object_get(resources, "limits");
    const json_t *sources[] = {requests, limits};
    for (size_t s = 0; s < 2; s++) {
        const char *resource;
        const json_t *value;
        json_object_foreach((json_t *)sources[s], resource, value)
        {
            if (s == 1 && json_object_get(requests, resource))
                continue;
            double amount = gc_kube_quantity(value);
            if (amount <= 0)
                continue;
            double before = json_real_value(json_object_get(into, resource));
            json_object_set_new(into, resource, json_real(before + amount));
        }
    }
}

/* An ordinary init container runs alone (beside the sidecars started before it: here all of
 * them, which can only overstate), so it raises a resource only where it alone asks for more. */
json_t *gc_kube_pod_requests(const json_t *spec)
{
    json_t *total = json_object();
    json_t *sidecars = json_object();
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        if (gc_kube_same(gc_kube_string(c, "restartPolicy"), "Always"))
            add_container(sidecars, c);
    }
    json_array_foreach(json_object_get(spec, "containers"), i, c) add_container(total, c);
    const char *resource;
    json_t *value;
    json_object_foreach(sidecars, resource, value)
    {
        double before = json_real_value(json_object_get(total, resource));
        json_object_set_new(total, resource, json_real(before + json_real_value(value)));
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        if (gc_kube_string(c, "restartPolicy"))
            continue;
        json_t *alone = json_deep_copy(sidecars);
        add_container(alone, c);
        json_object_foreach(alone, resource, value)
        {
            if (json_real_value(value) > json_real_value(json_object_get(total, resource)))
                json_object_set_new(total, resource, json_real(json_real_value(value)));
        }
        json_decref(alone);
    }
    json_decref(sidecars);
    return total;
}

const json_t *gc_kube_last_termination(const json_t *cs)
{
    const json_t *terminated = json_object_get(json_object_get(cs, "state"), "terminated");
    return terminated ? terminated
                      : json_object_get(json_object_get(cs, "lastState"), "terminated");
}

bool gc_kube_each_container(const json_t *pod, bool (*match)(const json_t *cs, void *ctx),
                            void *ctx, gc_kube_container_state *out)
{
    static const char *const lists[] = {"initContainerStatuses", "containerStatuses"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *cs;
        json_array_foreach(json_object_get(json_object_get(pod, "status"), lists[l]), i, cs)
        {
            if (!match(cs, ctx))
                continue;
            const json_t *state = json_object_get(cs, "state");
            const json_t *waiting = json_object_get(state, "waiting");
            const json_t *terminated = gc_kube_last_termination(cs);
            const json_t *detail = waiting ? waiting : terminated;
            *out = (gc_kube_container_state){
                .pod = pod,
                .status = cs,
                .name = gc_kube_string(cs, "name"),
                .reason = gc_kube_string(detail, "reason"),
                .message = gc_kube_string(detail, "message"),
                .exit_code = (int)json_integer_value(json_object_get(terminated, "exitCode")),
            };
            return true;
        }
    }
    return false;
}

/* One node selector requirement against `labels`. Gt and Lt compare integers; an operator this
 * does not know holds (the API server rejects it before any pod has it). */
static bool requirement_holds(const json_t *req, const json_t *labels)
{
    const char *op = gc_kube_string_or(req, "operator", "");
    const char *have = gc_kube_string(labels, gc_kube_string_or(req, "key", ""));
    if (!strcmp(op, "Exists"))
        return have != NULL;
    if (!strcmp(op, "DoesNotExist"))
        return have == NULL;
    const json_t *values = json_object_get(req, "values");
    if (!strcmp(op, "Gt") || !strcmp(op, "Lt")) {
        const char *bound = json_string_value(json_array_get(values, 0));
        if (!have || !bound)
            return false;
        long long a = strtoll(have, NULL, 10), b = strtoll(bound, NULL, 10);
        return !strcmp(op, "Gt") ? a > b : a < b;
    }
    bool listed = false;
    size_t i;
    const json_t *v;
    json_array_foreach(values, i, v) listed |= gc_kube_same(have, json_string_value(v));
    if (!strcmp(op, "In"))
        return listed;
    if (!strcmp(op, "NotIn"))
        return !listed;
    return true;
}

static bool key_counts(const json_t *keys, const char *key)
{
    return !keys || (key && json_object_get(keys, key));
}

/* Required node affinity. A term whose requirements all fall outside `keys` matches everything
 * (Kueue drops them); with every key counted, an empty term matches nothing (Kubernetes). */
static bool affinity_matches(const json_t *spec, const json_t *labels, const json_t *keys)
{
    const json_t *terms = json_object_get(
        json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    if (!json_array_size(terms))
        return true;
    size_t i, j;
    const json_t *term, *req;
    json_array_foreach(terms, i, term)
    {
        bool holds = true;
        size_t counted = 0;
        json_array_foreach(json_object_get(term, "matchExpressions"), j, req)
        {
            if (!key_counts(keys, gc_kube_string(req, "key")))
                continue;
            counted++;
            holds &= requirement_holds(req, labels);
        }
        if (counted ? holds : keys != NULL)
            return true;
    }
    return false;
}

bool gc_kube_selection_matches(const json_t *spec, const json_t *labels, const json_t *keys)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)json_object_get(spec, "nodeSelector"), key, value)
    {
        if (key_counts(keys, key) &&
            !gc_kube_same(gc_kube_string(labels, key), json_string_value(value)))
            return false;
    }
    return affinity_matches(spec, labels, keys);
}

static bool tolerates(const json_t *toleration, const json_t *taint)
{
    const char *effect = gc_kube_string_or(toleration, "effect", "");
    const char *key = gc_kube_string_or(toleration, "key", "");
    if (*effect && strcmp(effect, gc_kube_string_or(taint, "effect", "")) != 0)
        return false;
    if (*key && strcmp(key, gc_kube_string_or(taint, "key", "")) != 0)
        return false;
    if (gc_kube_same(gc_kube_string(toleration, "operator"), "Exists"))
        return true;
    return !strcmp(gc_kube_string_or(toleration, "value", ""),
                   gc_kube_string_or(taint, "value", ""));
}

static bool tolerated_by(const json_t *tolerations, const json_t *taint)
{
    size_t i;
    const json_t *t;
    json_array_foreach(tolerations, i, t)
    {
        if (tolerates(t, taint))
            return true;
    }
    return false;
}

const json_t *gc_kube_untolerated_taint(const json_t *taints, const json_t *tolerations,
                                        const json_t *more)
{
    size_t i;
    const json_t *taint;
    json_array_foreach(taints, i, taint)
    {
        const char *effect = gc_kube_string_or(taint, "effect", "");
        if (strcmp(effect, "NoSchedule") != 0 && strcmp(effect, "NoExecute") != 0)
            continue;
        if (!tolerated_by(tolerations, taint) && !tolerated_by(more, taint))
            return taint;
    }
    return NULL;
}

void gc_kube_taint_words(const json_t *taint, char *out, size_t size)
{
    const char *value = gc_kube_string_or(taint, "value", "");
    snprintf(out, size, "%s%s%s:%s", gc_kube_string_or(taint, "key", "?"), *value ? "=" : "", value,
             gc_kube_string_or(taint, "effect", "?"));
}
