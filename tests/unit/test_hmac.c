/* tests/unit/test_hmac.c - SHA-256 against FIPS 180-4's examples, HMAC-SHA256 against RFC 4231's
 * test cases, and the constant-time comparison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backends/net/hmac.h"

static void hex(const unsigned char *d, char out[2 * TETHER__SHA256_SIZE + 1])
{
    for (int i = 0; i < TETHER__SHA256_SIZE; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* The digest of msg fed in pieces of step bytes (0: at once). */
static void sha(const char *msg, size_t len, size_t step, char out[65])
{
    tether__sha256 s;
    unsigned char d[TETHER__SHA256_SIZE];
    tether__sha256_init(&s);
    for (size_t i = 0; i < len; i += step ? step : len)
        tether__sha256_update(&s, msg + i, step && len - i > step ? step : len - i);
    tether__sha256_final(&s, d);
    hex(d, out);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    char out[65];
    sha("", 0, 0, out);
    assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha("abc", 3, 0, out);
    assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    for (size_t step = 0; step < 9; step++) { /* 56 bytes: the length spills into a new block */
        sha(two, sizeof two - 1, step, out);
        assert_string_equal(out,
                            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    }
    static char million[1000000];
    memset(million, 'a', sizeof million);
    sha(million, sizeof million, 4099, out);
    assert_string_equal(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void hmac(const void *key, size_t klen, const void *msg, size_t mlen, char out[65])
{
    tether__hmac m;
    unsigned char d[TETHER__SHA256_SIZE];
    tether__hmac_init(&m, key, klen);
    tether__hmac_update(&m, msg, mlen);
    tether__hmac_final(&m, d);
    hex(d, out);
}

static void test_hmac_rfc4231(void **state)
{
    (void)state;
    char out[65];
    unsigned char k20[20], k131[131], d50[50];
    memset(k20, 0x0b, sizeof k20);
    hmac(k20, sizeof k20, "Hi There", 8, out); /* case 1 */
    assert_string_equal(out, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    hmac("Jefe", 4, "what do ya want for nothing?", 28, out); /* case 2 */
    assert_string_equal(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k20, 0xaa, sizeof k20);
    memset(d50, 0xdd, sizeof d50);
    hmac(k20, sizeof k20, d50, sizeof d50, out); /* case 3 */
    assert_string_equal(out, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    memset(k131, 0xaa, sizeof k131); /* case 6: a key longer than a block is hashed first */
    static const char big[] = "Test Using Larger Than Block-Size Key - Hash Key First";
    hmac(k131, sizeof k131, big, sizeof big - 1, out);
    assert_string_equal(out, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

static void test_equal_ct(void **state)
{
    (void)state;
    assert_true(tether__equal_ct("abcd", "abcd", 4));
    assert_false(tether__equal_ct("abcd", "abce", 4));
    assert_false(tether__equal_ct("xbcd", "abcd", 4));
    assert_true(tether__equal_ct("a", "b", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_equal_ct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
