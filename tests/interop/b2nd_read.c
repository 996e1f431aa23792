/* Reads an array with c-blosc2's own b2nd code (not ours) for the interop
 * tests: prints its geometry and dtype and writes its C-order bytes.
 *
 *     b2nd_read PATH OUT.bin [OFFSET]
 *
 * (with OFFSET, the array whose frame starts there: b2nd_open_offset)
 * prints "ndim N shape S... dtype D itemsize I" and exits non-zero if
 * b2nd cannot open or read it. */
#include <stdio.h>
#include <stdlib.h>

#include <b2nd.h>
#include <blosc2.h>

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: b2nd_read PATH OUT.bin [OFFSET]\n");
        return 2;
    }
    blosc2_init();
    b2nd_array_t *arr = NULL;
    int rc = argc == 4 ? b2nd_open_offset(argv[1], &arr, strtoll(argv[3], NULL, 10)) : b2nd_open(argv[1], &arr);
    if (rc < 0 || arr == NULL) {
        fprintf(stderr, "b2nd_open(%s) failed: %d\n", argv[1], rc);
        return 1;
    }
    int64_t nbytes = arr->nitems * arr->sc->typesize;
    void *buf = malloc((size_t)(nbytes > 0 ? nbytes : 1));
    if (buf == NULL || b2nd_to_cbuffer(arr, buf, nbytes) < 0) {
        fprintf(stderr, "b2nd_to_cbuffer failed\n");
        return 1;
    }
    FILE *out = fopen(argv[2], "wb");
    if (out == NULL || fwrite(buf, 1, (size_t)nbytes, out) != (size_t)nbytes || fclose(out) != 0) {
        fprintf(stderr, "cannot write %s\n", argv[2]);
        return 1;
    }
    printf("ndim %d shape", arr->ndim);
    for (int i = 0; i < arr->ndim; i++) {
        printf(" %lld", (long long)arr->shape[i]);
    }
    printf(" dtype %s itemsize %d\n", arr->dtype != NULL ? arr->dtype : "-", (int)arr->sc->typesize);
    free(buf);
    b2nd_free(arr);
    blosc2_destroy();
    return 0;
}
