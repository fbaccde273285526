/*
 * gcluster job connect NAME [--local-port 29000] [--port [LOCAL:]REMOTE]... [--address 127.0.0.1]
 *                          [--wait DURATION] [--env] [-- CMD [ARGS...]]
 */
#include "cli/cli.h"

#include <stddef.h>

typedef struct connect_args {
    cli_globals g;
    const char *name;
    bool env;
    cli_list ports;
    gc_connect_request r;
    char *command[CLI_POSITIONAL_MAX + 1]; /* after --: CMD [ARGS...] */
} connect_args;

static const cli_option connect_options[] = {
    CLI_VALUES('n', "name", connect_args, name, "NAME", &cli_job_names,
               "the job (or give it as an argument)"),
    CLI_INT(0, "local-port", connect_args, r.local_port, "PORT",
            "local port to listen on (default 29000; 0: any free port)"),
    CLI_LIST(0, "port", connect_args, ports, "[LOCAL:]REMOTE",
             "also forward this port of the head pod (Jupyter, a VS Code server), repeatable; "
             "LOCAL defaults to REMOTE, 0 or :REMOTE picks a free one"),
    CLI_STRING(0, "address", connect_args, r.address, "ADDRESS",
               "local address to listen on (default 127.0.0.1)"),
    CLI_STRING(0, "wait", connect_args, r.wait, "DURATION",
               "how long the head pod may take to be ready (default " GC_CONNECT_DEFAULT_WAIT ")"),
    CLI_BOOL(0, "env", connect_args, env, "print the variables as export lines, for eval"),
    CLI_JOB_GLOBALS,
    CLI_END,
};

static void connect_defaults(void *args)
{
    connect_args *a = args;
    a->r.local_port = GC_CONNECT_PROXY_PORT;
}

static int connect_with(gc_kube *kube, void *ctx, gc_error *err)
{
    connect_args *a = ctx;
    return cli_connect(kube, &a->r, a->env, err);
}

/* The job name came through the opening; what follows `--` is the command line to run. */
static int connect_check(void *args, const cli_parsed *parsed, gc_error *err)
{
    connect_args *a = args;
    if (parsed->dashdash) {
        for (size_t i = parsed->dashdash_at; i < parsed->positional_count; i++)
            a->command[i - parsed->dashdash_at] = (char *)parsed->positional[i];
        a->r.command = a->command;
    }
    a->r.stop_fd = -1;
    a->r.ports = a->ports.items;
    a->r.port_count = a->ports.count;
    if (a->env && a->r.command)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--env prints the variables for a shell; with -- CMD they are set for CMD "
                       "itself: use one or the other");
    return gc_job_connect_check(&a->r, err);
}

static const cli_opening connect_opening = {
    .names = CLI_JOB_ONE,
    .name_flag = offsetof(connect_args, name),
    .name = offsetof(connect_args, r.name),
    .check = connect_check,
    .with = connect_with,
};

const cli_command cmd_job_connect = {
    .name = "connect",
    .summary = "reach a headless job's IFRT proxy from here (a self-healing tunnel)",
    .usage = "job connect NAME [--local-port 29000] [--port [LOCAL:]REMOTE]... "
             "[--address 127.0.0.1] [--wait DURATION] [--env] [-- CMD [ARGS...]]",
    .description =
        "Waits until the job's head pod is running and its IFRT proxy ready, then forwards every\n"
        "connection to the local port through the API server to port 29000 of the head pod.\n"
        "Prints JAX_PLATFORMS=proxy and JAX_BACKEND_TARGET=grpc://127.0.0.1:PORT, or runs CMD\n"
        "with them set and exits with its status. A broken connection to the API server or a\n"
        "replaced head pod is healed: the local port stays, new connections go to the new pod.\n"
        "Ends with Ctrl-C, with CMD, or when the job ends (exit 1, saying why).\n"
        "\n"
        "--port forwards more ports of the same pod the same way, each on its own local port,\n"
        "in kubectl port-forward's form: --port 8888 (local 8888 to the pod's 8888), --port\n"
        "8080:8888, --port :8888 (any free local port; the line \"forwarding ...\" says which).\n"
        "Jupyter in a sidecar of the head pod: --port 8888. They heal like the proxy's port.\n"
        "\n"
        "A JAX program (jax, jaxlib and pathwaysutils from PyPI) must call\n"
        "pathwaysutils.initialize() before it uses JAX: that registers the proxy backend, which\n"
        "jax alone does not know (\"Backend 'proxy' is not in the list of known backends\").\n"
        "jaxlib's client speaks ALTS gRPC unless IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS=true;\n"
        "ALTS only works on Google Cloud machines (elsewhere: \"Invalid credentials\"). When the\n"
        "head pod's pathways-proxy container has that variable \"true\" (plaintext gRPC: submit\n"
        "with --pathways-proxy-env IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS=true), connect sets\n"
        "it for CMD too, and prints it with the others; otherwise it says so.",
    .options = connect_options,
    .args_size = sizeof(connect_args),
    .init_args = connect_defaults,
    .opening = &connect_opening,
};
