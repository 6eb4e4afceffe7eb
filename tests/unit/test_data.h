/* tests/unit/test_data.h - a file of tests/unit/data (where $TETHER_TEST_DATA points) read whole,
 * for the unit tests that run parsers on captured command output. */
#ifndef TETHER_TESTS_UNIT_TEST_DATA_H
#define TETHER_TESTS_UNIT_TEST_DATA_H

#include <stdio.h>
#include <stdlib.h>

/* The text of data/NAME, NUL-terminated (malloc'd); fails the test when it cannot be read. */
static char *test_data_read(const char *name)
{
    char path[1024];
    const char *dir = getenv("TETHER_TEST_DATA");
    FILE *f;
    long n;
    char *text;

    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

#endif
