/* What the original caterva.h defined besides the API: the version macros,
 * CATERVA_ATTRIBUTE_UNUSED, and print_error(), which names caterva's return
 * codes and still names c-blosc2's (blosc2.h has a print_error of its own,
 * which caterva.h's delegates to), also through blosc2.h's BLOSC_ERROR and
 * caterva.h's CATERVA_ERROR and CATERVA_ERROR_NULL. */
#include <ctype.h>
#include <stdlib.h>

#include "harness.h"

/* Never called: with -Werror, this compiles only if CATERVA_ATTRIBUTE_UNUSED
 * silences -Wunused-function. */
static int never_called(void) CATERVA_ATTRIBUTE_UNUSED;
static int never_called(void) { return 0; }

/* blosc2.h's and caterva.h's early-return macros, which both call print_error. */
static int through_blosc_error(int rc) {
    BLOSC_ERROR(rc);
    return 0;
}

static int through_caterva_error(int rc) {
    CATERVA_ERROR(rc);
    return 0;
}

static int through_caterva_error_null(const void *p) {
    CATERVA_ERROR_NULL(p);
    return 0;
}

static int test_version_macros(const test_case_t *tc) {
    (void) tc;
    char buf[64];
    /* The original's idiom compiles: a string literal. */
    int n = snprintf(buf, sizeof buf, "%s", CATERVA_VERSION_STRING);
    CHECK(n > 0 && (size_t) n == strlen(CATERVA_VERSION_STRING) && (size_t) n == sizeof(CATERVA_VERSION_STRING) - 1);
    /* MAJOR.MINOR.PATCH, digits (Cargo.toml's version; tests/header.rs checks the value). */
    int dots = 0;
    for (const char *p = buf; *p != '\0' && *p != '-' && *p != '+'; p++) {
        if (*p == '.') {
            CHECK(p != buf && isdigit((unsigned char) p[-1]) && isdigit((unsigned char) p[1]));
            dots++;
        } else {
            CHECK(isdigit((unsigned char) *p));
        }
    }
    CHECK(dots == 2);
    /* YYYY-MM-DD. */
    const char *date = CATERVA_VERSION_DATE;
    CHECK(strlen(date) == 10 && date[4] == '-' && date[7] == '-');
    for (int i = 0; i < 10; i++) {
        CHECK(i == 4 || i == 7 || isdigit((unsigned char) date[i]));
    }
    /* The caterva API numbers stay usable in #if. */
#if CATERVA_VERSION_MAJOR != 0 || CATERVA_VERSION_MINOR != 5
    CHECK(!"CATERVA_VERSION_MAJOR.MINOR is not 0.5 in #if");
#endif
    return 0;
}

#define CHECK_STR(got, want)                                                         \
    do {                                                                             \
        const char *g_ = (got);                                                      \
        if (g_ == NULL || strcmp(g_, (want)) != 0) {                                 \
            fprintf(stderr, "    %s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__,   \
                    __LINE__, #got, g_ == NULL ? "(NULL)" : g_, (want));             \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static int test_print_error(const test_case_t *tc) {
    (void) tc;
    /* The original's signature: char *. */
    char *msg = print_error(CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_STR(msg, "Invalid argument");
    CHECK_STR(print_error(CATERVA_SUCCEED), "Success");
    CHECK_STR(print_error(CATERVA_ERR_BLOSC_FAILED), "Blosc failed");
    CHECK_STR(print_error(CATERVA_ERR_CONTAINER_FILLED), "Container filled");
    CHECK_STR(print_error(CATERVA_ERR_INVALID_STORAGE), "Invalid storage");
    CHECK_STR(print_error(CATERVA_ERR_NULL_POINTER), "Pointer is null");
    CHECK_STR(print_error(CATERVA_ERR_INVALID_INDEX), "Pointer is null");
    /* c-blosc2's codes get c-blosc2's messages. */
    CHECK_STR(print_error(BLOSC2_ERROR_DATA), "Invalid data");
    CHECK_STR(print_error(BLOSC2_ERROR_NULL_POINTER), "Pointer is null");
    CHECK_STR(print_error(BLOSC2_ERROR_FILE_OPEN), "File open failure");
    CHECK_STR(print_error(1000), "Unknown error");
    /* A pointer to it, as to any function. */
    char *(*fn)(int) = print_error;
    CHECK_STR(fn(CATERVA_ERR_INVALID_STORAGE), "Invalid storage");
    /* A code the library returns. */
    caterva_ctx_t *ctx = NULL;
    int rc = caterva_ctx_new(NULL, &ctx);
    CHECK_RC(rc, CATERVA_ERR_NULL_POINTER);
    CHECK_STR(print_error(rc), "Pointer is null");
    /* The macros that call print_error (tracing too, when CATERVA_TRACE or
     * BLOSC_TRACE is set) return the code they were given. */
    CHECK_RC(through_blosc_error(BLOSC2_ERROR_DATA), BLOSC2_ERROR_DATA);
    CHECK_RC(through_blosc_error(0), 0);
    CHECK_RC(through_caterva_error(CATERVA_ERR_INVALID_STORAGE), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(through_caterva_error(CATERVA_SUCCEED), 0);
    CHECK_RC(through_caterva_error_null(NULL), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(through_caterva_error_null(&rc), 0);
    return 0;
}

void suite_header(void) {
    RUN_CASE(test_version_macros);
    RUN_CASE(test_print_error);
}
