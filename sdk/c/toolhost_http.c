/*
 * toolhost_http.c: th_http_get over the bindings wit-bindgen writes for the
 * world toolhost:plugin-with-http/plugin@0.2.0. See toolhost_http.h.
 */
#include "toolhost_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static th_http_result describe(th_http_result result, char *error, size_t error_size, const char *format,
                               const char *origin) {
    snprintf(error, error_size, format, origin);
    return result;
}

/* What an error-code means, for a person. */
static th_http_result from_code(const wasi_http_types_error_code_t *code, const char *origin, char *error,
                                size_t error_size) {
    switch (code->tag) {
    case WASI_HTTP_TYPES_ERROR_CODE_HTTP_REQUEST_DENIED:
        return describe(TH_HTTP_DENIED, error, error_size, "request refused by the host: %s is not granted to this plugin",
                        origin);
    case WASI_HTTP_TYPES_ERROR_CODE_DESTINATION_IP_PROHIBITED:
        return describe(TH_HTTP_DENIED, error, error_size,
                        "request refused by the host: %s resolves to an address this plugin may not reach", origin);
    case WASI_HTTP_TYPES_ERROR_CODE_CONNECTION_LIMIT_REACHED:
        return describe(TH_HTTP_DENIED, error, error_size,
                        "request refused by the host: this call sent as many requests as it may (%s)", origin);
    case WASI_HTTP_TYPES_ERROR_CODE_CONNECTION_REFUSED:
        return describe(TH_HTTP_FAILED, error, error_size, "request failed: %s refused the connection", origin);
    case WASI_HTTP_TYPES_ERROR_CODE_CONNECTION_TIMEOUT:
    case WASI_HTTP_TYPES_ERROR_CODE_CONNECTION_READ_TIMEOUT:
    case WASI_HTTP_TYPES_ERROR_CODE_HTTP_RESPONSE_TIMEOUT:
        return describe(TH_HTTP_FAILED, error, error_size, "request failed: %s did not answer in time", origin);
    case WASI_HTTP_TYPES_ERROR_CODE_DNS_ERROR:
        return describe(TH_HTTP_FAILED, error, error_size, "request failed: %s: the host name could not be resolved",
                        origin);
    default:
        snprintf(error, error_size, "request failed: %s: wasi:http error-code %u", origin, (unsigned)code->tag);
        return TH_HTTP_FAILED;
    }
}

th_http_result th_http_get(const char *url, size_t max_body, th_http_response *response, char *error,
                           size_t error_size) {
    memset(response, 0, sizeof *response);
    wasi_http_types_scheme_t scheme = {0};
    const char *rest;
    if (strncmp(url, "https://", 8) == 0) {
        scheme.tag = WASI_HTTP_TYPES_SCHEME_HTTPS;
        rest = url + 8;
    } else if (strncmp(url, "http://", 7) == 0) {
        scheme.tag = WASI_HTTP_TYPES_SCHEME_HTTP;
        rest = url + 7;
    } else {
        snprintf(error, error_size, "`%s` is not an http:// or https:// URL (e.g. `https://example.com/path`)", url);
        return TH_HTTP_INVALID;
    }
    size_t authority_len = strcspn(rest, "/?#");
    if (authority_len == 0) {
        snprintf(error, error_size, "`%s` names no host", url);
        return TH_HTTP_INVALID;
    }
    size_t path_len = strcspn(rest + authority_len, "#");
    char origin[300];
    snprintf(origin, sizeof origin, "%.*s%.*s", (int)(rest - url), url, (int)authority_len, rest);

    wasi_http_types_own_outgoing_request_t request =
        wasi_http_types_constructor_outgoing_request(wasi_http_types_constructor_fields());
    wasi_http_types_borrow_outgoing_request_t borrowed = wasi_http_types_borrow_outgoing_request(request);
    wasi_http_types_method_t method = {.tag = WASI_HTTP_TYPES_METHOD_GET};
    plugin_string_t authority = {(uint8_t *)rest, authority_len};
    char *path = path_len ? strndup(rest + authority_len, path_len) : strdup("/");
    /* A path must start with `/`: `http://host?q` asks for `/?q`. */
    th_buf full_path = {0};
    if (path[0] != '/') th_buf_puts(&full_path, "/");
    th_buf_puts(&full_path, path);
    free(path);
    plugin_string_t path_with_query = {(uint8_t *)full_path.data, full_path.len};
    bool set = wasi_http_types_method_outgoing_request_set_method(borrowed, &method) &&
               wasi_http_types_method_outgoing_request_set_scheme(borrowed, &scheme) &&
               wasi_http_types_method_outgoing_request_set_authority(borrowed, &authority) &&
               wasi_http_types_method_outgoing_request_set_path_with_query(borrowed, &path_with_query);
    th_buf_free(&full_path);
    if (!set) {
        wasi_http_types_outgoing_request_drop_own(request);
        snprintf(error, error_size, "`%s` is not a valid URL", url);
        return TH_HTTP_INVALID;
    }
    wasi_http_types_own_outgoing_body_t body;
    wasi_http_types_method_outgoing_request_body(borrowed, &body);

    wasi_http_outgoing_handler_own_future_incoming_response_t pending;
    wasi_http_types_error_code_t code;
    if (!wasi_http_outgoing_handler_handle(request, NULL, &pending, &code)) {
        wasi_http_types_outgoing_body_drop_own(body);
        th_http_result result = from_code(&code, origin, error, error_size);
        wasi_http_types_error_code_free(&code);
        return result;
    }
    if (!wasi_http_types_static_outgoing_body_finish(body, NULL, &code)) {
        wasi_http_types_future_incoming_response_drop_own(pending);
        th_http_result result = from_code(&code, origin, error, error_size);
        wasi_http_types_error_code_free(&code);
        return result;
    }

    wasi_http_types_borrow_future_incoming_response_t waiting = wasi_http_types_borrow_future_incoming_response(pending);
    wasi_http_types_result_result_own_incoming_response_error_code_void_t answer;
    while (!wasi_http_types_method_future_incoming_response_get(waiting, &answer)) {
        wasi_http_types_own_pollable_t ready = wasi_http_types_method_future_incoming_response_subscribe(waiting);
        wasi_io_poll_method_pollable_block(wasi_io_poll_borrow_pollable(ready));
        wasi_io_poll_pollable_drop_own(ready);
    }
    wasi_http_types_future_incoming_response_drop_own(pending);
    if (answer.is_err) {
        snprintf(error, error_size, "request failed: %s: the response was already taken", origin);
        return TH_HTTP_FAILED;
    }
    if (answer.val.ok.is_err) {
        th_http_result result = from_code(&answer.val.ok.val.err, origin, error, error_size);
        wasi_http_types_error_code_free(&answer.val.ok.val.err);
        return result;
    }
    wasi_http_types_own_incoming_response_t incoming = answer.val.ok.val.ok;
    wasi_http_types_borrow_incoming_response_t got = wasi_http_types_borrow_incoming_response(incoming);
    response->status = wasi_http_types_method_incoming_response_status(got);

    wasi_http_types_own_headers_t headers = wasi_http_types_method_incoming_response_headers(got);
    wasi_http_types_list_tuple2_field_name_field_value_t entries;
    wasi_http_types_method_fields_entries(wasi_http_types_borrow_fields(headers), &entries);
    response->headers = calloc(entries.len ? entries.len : 1, sizeof *response->headers);
    if (!response->headers) abort();
    for (size_t i = 0; i < entries.len; i++) {
        char *name = strndup((const char *)entries.ptr[i].f0.ptr, entries.ptr[i].f0.len);
        char *value = strndup((const char *)entries.ptr[i].f1.ptr, entries.ptr[i].f1.len);
        if (!name || !value) abort();
        for (char *c = name; *c; c++) {
            if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
        }
        response->headers[i] = (th_http_field){name, value};
    }
    response->header_count = entries.len;
    wasi_http_types_list_tuple2_field_name_field_value_free(&entries);
    wasi_http_types_fields_drop_own(headers);

    th_buf_append(&response->body, "", 0);
    wasi_http_types_own_incoming_body_t incoming_body;
    wasi_http_types_own_input_stream_t stream;
    bool ok = true;
    if (wasi_http_types_method_incoming_response_consume(got, &incoming_body)) {
        if (wasi_http_types_method_incoming_body_stream(wasi_http_types_borrow_incoming_body(incoming_body), &stream)) {
            wasi_io_streams_borrow_input_stream_t reading = wasi_io_streams_borrow_input_stream(stream);
            while (true) {
                size_t room = max_body - response->body.len;
                plugin_list_u8_t chunk;
                wasi_io_streams_stream_error_t failed;
                if (!wasi_io_streams_method_input_stream_blocking_read(reading, room ? (room < 65536 ? room : 65536) : 1,
                                                                      &chunk, &failed)) {
                    if (failed.tag != WASI_IO_STREAMS_STREAM_ERROR_CLOSED) {
                        wasi_io_error_error_drop_own(failed.val.last_operation_failed);
                        snprintf(error, error_size, "request failed: %s: reading the response failed", origin);
                        ok = false;
                    }
                    break;
                }
                size_t take = chunk.len > room ? room : chunk.len;
                th_buf_append(&response->body, (const char *)chunk.ptr, take);
                bool over = chunk.len > room;
                plugin_list_u8_free(&chunk);
                if (over) {
                    response->truncated = true;
                    break;
                }
            }
            wasi_io_streams_input_stream_drop_own(stream);
        }
        wasi_http_types_incoming_body_drop_own(incoming_body);
    }
    wasi_http_types_incoming_response_drop_own(incoming);
    if (!ok) {
        th_http_response_free(response);
        return TH_HTTP_FAILED;
    }
    return TH_HTTP_OK;
}

const char *th_http_header(const th_http_response *response, const char *name) {
    for (size_t i = 0; i < response->header_count; i++) {
        if (strcmp(response->headers[i].name, name) == 0) return response->headers[i].value;
    }
    return NULL;
}

void th_http_response_free(th_http_response *response) {
    for (size_t i = 0; i < response->header_count; i++) {
        free(response->headers[i].name);
        free(response->headers[i].value);
    }
    free(response->headers);
    th_buf_free(&response->body);
    memset(response, 0, sizeof *response);
}
