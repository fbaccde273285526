#include "gcluster/error.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "gcluster: not built yet\n");
    return GC_EXIT_RUNTIME;
}
