/* hostfile/addr.c - checking hosts and parsing "host:port" addresses ("[v6]:port" too). */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "hostfile/hf_json.h"
#include "hostfile/hostfile.h"

#define HF_LABEL_MAX 63 /* RFC 1035: one label of a host name */

/* Only digits and dots: meant as an IPv4 address, so it must be a valid one (not a name). */
static int looks_ipv4(const char *s)
{
    return strspn(s, "0123456789.") == strlen(s);
}

static int check_ipv4(const char *host, const char *where)
{
    struct in_addr a;

    /* inet_pton takes exactly four decimal parts 0..255 (no "1.2.3", no octal "010"). */
    if (inet_pton(AF_INET, host, &a) != 1)
        return tether__fail(TETHER_ECONFIG,
                            "%s: \"%.*s\" is not a valid IPv4 address; expected "
                            "four numbers 0-255 separated by dots",
                            where, HF_QUOTE_MAX, host);
    return TETHER_OK;
}

static int check_ipv6(const char *host, const char *where)
{
    struct in6_addr a;

    if (inet_pton(AF_INET6, host, &a) != 1)
        return tether__fail(TETHER_ECONFIG, "%s: \"%.*s\" is not a valid IPv6 address", where,
                            HF_QUOTE_MAX, host);
    return TETHER_OK;
}

/* Host names as resolvers take them: dot-separated labels of letters, digits, '-' and '_' (the
 * last is not RFC 1123 but getaddrinfo and /etc/hosts accept it), no label empty or over 63. */
static int check_name(const char *host, const char *where)
{
    size_t label = 0;

    for (const char *p = host;; p++) {
        if (*p == '.' || *p == '\0') {
            if (label == 0 || label > HF_LABEL_MAX)
                return tether__fail(TETHER_ECONFIG,
                                    "%s: \"%.*s\" is not a valid host name: "
                                    "%s label",
                                    where, HF_QUOTE_MAX, host,
                                    label ? "an over-long (> 63 characters)" : "an empty");
            if (*p == '\0')
                return TETHER_OK;
            label = 0;
        } else if (isalnum((unsigned char)*p) || *p == '-' || *p == '_') {
            label++;
        } else {
            return tether__fail(TETHER_ECONFIG,
                                "%s: \"%.*s\" is not a valid host name: "
                                "character '%c' (expected letters, digits, '-', '.')",
                                where, HF_QUOTE_MAX, host, isprint((unsigned char)*p) ? *p : '?');
        }
    }
}

int tether__hf_check_host(const char *host, int allow_v6, const char *where)
{
    if (host[0] == '\0')
        return tether__fail(TETHER_ECONFIG,
                            "%s: empty host; expected an IPv4 address or a host "
                            "name",
                            where);
    if (strlen(host) >= TETHER__HOST_MAX)
        return tether__fail(TETHER_ECONFIG, "%s: host \"%.*s...\" is longer than %d characters",
                            where, HF_QUOTE_MAX, host, TETHER__HOST_MAX - 1);
    if (strchr(host, ':')) {
        if (!allow_v6)
            return tether__fail(TETHER_ECONFIG,
                                "%s: \"%.*s\" looks like an IPv6 address; write "
                                "it in brackets with a port, e.g. \"[fe80::1]:5000\"",
                                where, HF_QUOTE_MAX, host);
        return check_ipv6(host, where);
    }
    return looks_ipv4(host) ? check_ipv4(host, where) : check_name(host, where);
}

/* Port text to 1..65535: decimal digits only (no sign, no spaces, no hex). */
static int parse_port(const char *text, const char *port, const char *where, int *out)
{
    long v;

    if (port[0] == '\0' || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5)
        return tether__fail(TETHER_ECONFIG,
                            "%s: \"%.*s\" has port \"%.*s\"; expected a number "
                            "1-65535",
                            where, HF_QUOTE_MAX, text, HF_QUOTE_MAX, port);
    v = strtol(port, NULL, 10);
    if (v < 1 || v > 65535)
        return tether__fail(TETHER_ECONFIG, "%s: \"%.*s\" has port %ld; expected 1-65535", where,
                            HF_QUOTE_MAX, text, v);
    *out = (int)v;
    return TETHER_OK;
}

/* Split text into host and port text: "[v6]:port" or "host:port" (the last colon). */
static int split_addr(const char *text, const char *where, char *host, const char **port,
                      int *bracketed)
{
    const char *colon, *end = text;
    size_t hlen;

    *bracketed = text[0] == '[';
    if (*bracketed) {
        end = strchr(text, ']');
        if (!end || end[1] != ':')
            return tether__fail(TETHER_ECONFIG, "%s: \"%.*s\" %s; expected \"[ipv6]:port\"", where,
                                HF_QUOTE_MAX, text, end ? "has no port" : "lacks the closing ']'");
        colon = end + 1;
        text++;
    } else {
        colon = strrchr(text, ':');
        if (!colon)
            return tether__fail(TETHER_ECONFIG, "%s: \"%.*s\" has no port; expected \"ip:port\"",
                                where, HF_QUOTE_MAX, text);
    }
    hlen = (size_t)((*bracketed ? end : colon) - text);
    if (hlen >= TETHER__HOST_MAX)
        return tether__fail(TETHER_ECONFIG,
                            "%s: host in \"%.*s...\" is longer than %d "
                            "characters",
                            where, HF_QUOTE_MAX, text, TETHER__HOST_MAX - 1);
    memcpy(host, text, hlen);
    host[hlen] = '\0';
    *port = colon + 1;
    return TETHER_OK;
}

int tether__hostaddr_parse(const char *text, const char *what, tether__hostaddr *out)
{
    char host[TETHER__HOST_MAX];
    const char *port = NULL;
    int bracketed;

    if (!what)
        what = "address";
    if (!text || !out)
        return tether__fail(TETHER_EINVAL, "%s: tether__hostaddr_parse given NULL", what);
    TRY(split_addr(text, what, host, &port, &bracketed));
    if (bracketed)
        TRY(check_ipv6(host, what));
    else
        TRY(tether__hf_check_host(host, 0, what));
    TRY(parse_port(text, port, what, &out->port));
    memcpy(out->host, host, sizeof host);
    return TETHER_OK;
}
