/*
 * toolhost_json.h — what every version of toolhost's C SDK shares: a small
 * JSON reader for a tool's arguments (th_json_*), a growable text buffer for
 * its output (th_buf_*), and the allocator that aborts when memory runs out
 * (inside the sandbox, the host then reports the memory limit). toolhost.h
 * (contract 0.2.0) and v0.1.0/toolhost.h include it; toolhost_json.c is
 * compiled beside either SDK.
 */
#ifndef TOOLHOST_JSON_H
#define TOOLHOST_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- JSON arguments ----------------------------------------------------- */

typedef enum th_json_kind {
    TH_JSON_NULL,
    TH_JSON_BOOL,
    TH_JSON_NUMBER,
    TH_JSON_STRING,
    TH_JSON_ARRAY,
    TH_JSON_OBJECT,
} th_json_kind;

/* One parsed JSON value. Arrays keep their elements in `items`; objects keep
 * their values in `items` and the matching keys in `keys`. */
typedef struct th_json {
    th_json_kind kind;
    bool boolean;             /* TH_JSON_BOOL */
    double number;            /* TH_JSON_NUMBER */
    char *string;             /* TH_JSON_STRING: decoded UTF-8, NUL-terminated */
    size_t string_len;        /* TH_JSON_STRING: bytes, without the NUL */
    struct th_json *items;    /* TH_JSON_ARRAY and TH_JSON_OBJECT */
    char **keys;              /* TH_JSON_OBJECT */
    size_t len;               /* number of items */
} th_json;

/* Parses `len` bytes of JSON text. On failure returns NULL and writes a
 * message naming the byte offset into `error` (of `error_size` bytes). */
th_json *th_json_parse(const char *text, size_t len, char *error, size_t error_size);

/* Frees a value returned by th_json_parse. NULL is fine. */
void th_json_free(th_json *value);

/* The member `key` of an object, or NULL when absent or not an object. */
const th_json *th_json_get(const th_json *object, const char *key);

/* ---- Output text ------------------------------------------------------- */

/* A growable, NUL-terminated text buffer. Zero-initialise it: th_buf b = {0}; */
typedef struct th_buf {
    char *data;
    size_t len;
    size_t cap;
} th_buf;

void th_buf_append(th_buf *buf, const char *text, size_t len);
void th_buf_puts(th_buf *buf, const char *text);
void th_buf_printf(th_buf *buf, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* th_buf_printf with the arguments as a va_list. */
void th_buf_vprintf(th_buf *buf, const char *format, va_list args);
/* Appends `text` as a quoted, escaped JSON string. */
void th_buf_json_string(th_buf *buf, const char *text);
/* Appends a number as JSON: integers without a fraction, others with up to 17
 * significant digits; NaN and infinities (not JSON) become null. */
void th_buf_json_number(th_buf *buf, double number);
void th_buf_free(th_buf *buf);

/* ---- Memory --------------------------------------------------------------- */

/* malloc and realloc that never return NULL: out of memory, they abort. */
void *th_alloc(size_t size);
void *th_grow(void *ptr, size_t size);

#ifdef __cplusplus
}
#endif

#endif
