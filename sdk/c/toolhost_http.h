/*
 * toolhost_http.h: HTTP from a toolhost plugin written in C, over
 * `wasi:http/outgoing-handler`.
 *
 * Build the plugin against the world `toolhost:plugin-with-http/plugin@0.2.0`
 * (`wit-bindgen c wit --world toolhost:plugin-with-http/plugin@0.2.0`, as the
 * scaffold's build.sh does), which adds wasi:http to contract 0.2.0, and compile
 * toolhost_http.c with the plugin. A plugin that never calls th_http_get
 * imports no wasi:http: the linker drops what is not used.
 *
 * toolhost sends a request only to a scheme, host and port the operator
 * granted the plugin (`[plugins.NAME] http = [...]` in toolhost.toml); any
 * other request fails with TH_HTTP_DENIED before anything leaves the machine.
 *
 *     th_http_response response;
 *     char error[256];
 *     if (th_http_get("https://api.example.com/v1/status", 1 << 20, &response, error, sizeof error) != TH_HTTP_OK) {
 *         return th_failed(err, "could not fetch the status: %s", error);
 *     }
 *     ... response.status, response.body.data (NUL-terminated), response.body.len ...
 *     th_http_response_free(&response);
 *
 * Redirects are not followed: a 3xx comes back as it is, with its Location
 * header in th_http_header(&response, "location").
 */
#ifndef TOOLHOST_HTTP_H
#define TOOLHOST_HTTP_H

#include "toolhost.h"

typedef enum th_http_result {
    TH_HTTP_OK = 0,
    /* The URL is not an http:// or https:// URL. */
    TH_HTTP_INVALID,
    /* The host refused the request: not granted, or too many requests this call. */
    TH_HTTP_DENIED,
    /* The request was sent (or tried) and failed: refused connection, timeout, TLS, ... */
    TH_HTTP_FAILED,
} th_http_result;

typedef struct th_http_field {
    char *name;  /* lower-case */
    char *value;
} th_http_field;

typedef struct th_http_response {
    uint16_t status;
    th_http_field *headers;
    size_t header_count;
    th_buf body;     /* at most max_body bytes, NUL-terminated */
    bool truncated;  /* the body was longer than max_body */
} th_http_response;

/* GETs `url`, reading at most `max_body` bytes of the body into
 * `response->body`. On anything but TH_HTTP_OK, `error` (of `error_size`
 * bytes) says why, naming the origin, and `response` holds nothing to free. */
th_http_result th_http_get(const char *url, size_t max_body, th_http_response *response, char *error,
                           size_t error_size);

/* The first header called `name` (lower-case), or NULL. */
const char *th_http_header(const th_http_response *response, const char *name);

/* Frees what th_http_get filled in. */
void th_http_response_free(th_http_response *response);

#endif
