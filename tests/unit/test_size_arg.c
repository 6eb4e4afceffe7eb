/* tests/unit/test_size_arg.c - the one rule for byte sizes given as arguments (core/size_arg.c):
 * what it takes, and that what it refuses gets a message naming the argument and quoting it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/size_arg.h"

static size_t parsed(const char *text)
{
    size_t v = 12345;
    char err[TETHER__SIZE_ERR_MAX] = "";
    if (tether__size_parse("-b", text, &v, err, sizeof err) != 0)
        fail_msg("'%s' refused: %s", text, err);
    assert_string_equal(err, "");
    return v;
}

/* text is refused, *out is left alone, and the message names -e, then says `says`. */
static void refused(const char *text, const char *says)
{
    size_t v = 12345;
    char err[TETHER__SIZE_ERR_MAX] = "";
    assert_int_equal(tether__size_parse("-e", text, &v, err, sizeof err), -1);
    assert_int_equal(v, 12345);
    assert_true(strncmp(err, "-e: ", 4) == 0);
    if (!strstr(err, says))
        fail_msg("'%s': message '%s' does not say '%s'", text ? text : "(null)", err, says);
}

static void test_plain_bytes(void **state)
{
    (void)state;
    assert_int_equal(parsed("0"), 0);
    assert_int_equal(parsed("8"), 8);
    assert_int_equal(parsed("8B"), 8);
    assert_int_equal(parsed("8b"), 8);
    assert_int_equal(parsed("007"), 7);
    assert_int_equal(parsed("4194304"), 4194304);
}

static void test_units_are_powers_of_1024(void **state)
{
    (void)state;
    assert_int_equal(parsed("64K"), 65536);
    assert_int_equal(parsed("64k"), 65536);
    assert_int_equal(parsed("64KB"), 65536);
    assert_int_equal(parsed("1M"), 1048576);
    assert_int_equal(parsed("1mb"), 1048576);
    assert_int_equal(parsed("3M"), 3 * 1048576);
    assert_int_equal(parsed("2G"), (size_t)2 << 30);
#if SIZE_MAX > UINT32_MAX
    assert_true(parsed("1T") == (size_t)1 << 40);
#else
    refused("1T", "is too large");
#endif
    assert_int_equal(parsed("0K"), 0);
}

static void test_not_sizes(void **state)
{
    (void)state;
    refused("12Q", "'12Q' is not a size; expected a whole number of bytes");
    refused("K", "'K' is not a size");
    refused("B", "'B' is not a size");
    refused("1.5M", "'1.5M' is not a size");
    refused(" 8", "' 8' is not a size");
    refused("+8", "'+8' is not a size");
    refused("8 ", "'8 ' is not a size");
    refused("8KK", "'8KK' is not a size");
    refused("8BK", "'8BK' is not a size");
    refused("8KiB", "'8KiB' is not a size");
    refused("0x10", "'0x10' is not a size");
}

static void test_empty_and_negative(void **state)
{
    (void)state;
    refused("", "empty size");
    refused(NULL, "empty size");
    refused("-1", "'-1' is negative");
    refused("-8K", "'-8K' is negative");
}

static void test_too_large(void **state)
{
    (void)state;
    char max[32], over[32];
    snprintf(max, sizeof max, "%zu", (size_t)SIZE_MAX);
    assert_true(parsed(max) == SIZE_MAX);
    /* SIZE_MAX + 1: the last digit of SIZE_MAX (2^n - 1) is never 9, so adding 1 to it carries
     * nowhere. */
    snprintf(over, sizeof over, "%s", max);
    over[strlen(over) - 1]++;
    refused(over, "is too large (at most");
    refused("99999999999999999999999999", "is too large");
    char units[32];
    snprintf(units, sizeof units, "%zuK", (size_t)SIZE_MAX >> 10);
    assert_true(parsed(units) == (SIZE_MAX >> 10) << 10);
    snprintf(units, sizeof units, "%zuK", ((size_t)SIZE_MAX >> 10) + 1);
    refused(units, "is too large");
    snprintf(units, sizeof units, "%zuG", ((size_t)SIZE_MAX >> 30) + 1);
    refused(units, "is too large");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_bytes), cmocka_unit_test(test_units_are_powers_of_1024),
        cmocka_unit_test(test_not_sizes),   cmocka_unit_test(test_empty_and_negative),
        cmocka_unit_test(test_too_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
