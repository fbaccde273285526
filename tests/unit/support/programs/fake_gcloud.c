/*
 * Stands in for `gcloud auth print-access-token` in tests (linked into PATH as "gcloud").
 * FAKE_GCLOUD_FAIL=1 makes it fail the way gcloud does when nobody is logged in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "auth") != 0 || strcmp(argv[2], "print-access-token") != 0) {
        fprintf(stderr, "fake gcloud: unexpected arguments\n");
        return 2;
    }
    const char *fail = getenv("FAKE_GCLOUD_FAIL");
    if (fail && strcmp(fail, "1") == 0) {
        fprintf(stderr, "ERROR: (gcloud.auth.print-access-token) You do not currently have an "
                        "active account selected.\n");
        return 1;
    }
    printf("ya29.fake-access-token\n");
    return 0;
}
