/*
 * toolhost.h — helpers for toolhost plugins written in C, on contract 0.1.0.
 *
 * Frozen with that contract: plugins/c/build.sh builds the bundled C plugins
 * that stay on 0.1.0 with it, to prove they still build and load. New plugins
 * use the SDK for contract 0.2.0 in sdk/c/ (what `toolhost new --lang c` writes).
 *
 * A C plugin implements the two exports that `wit-bindgen c` declares in the
 * generated `plugin.h` (world `toolhost:plugin/plugin@0.1.0`):
 *
 *   void exports_toolhost_plugin_tools_list_tools(exports_toolhost_plugin_tools_list_tool_t *ret);
 *   bool exports_toolhost_plugin_tools_call_tool(plugin_string_t *name, plugin_string_t *arguments,
 *       exports_toolhost_plugin_tools_tool_output_t *ret, exports_toolhost_plugin_tools_call_error_t *err);
 *
 * This file adds what every plugin needs on top of the raw bindings: a small
 * JSON reader for the arguments (th_json_*), a growable text buffer for the
 * output (th_buf_*), one-line constructors for the tool list and the call's
 * result or error (th_tools_*, th_ok_*, th_invalid_arguments, th_failed), and
 * logging through the host's `log` import (th_log).
 *
 * Memory: strings handed to the host (tool list, output, error text) are
 * allocated with malloc and freed by the generated bindings after the call.
 * Everything else is freed with the matching *_free function. An instance
 * lives for one call only, so a leak cannot accumulate, but the helpers do
 * not leak.
 */
#ifndef TOOLHOST_H
#define TOOLHOST_H

#include "plugin.h"

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
/* Appends `text` as a quoted, escaped JSON string. */
void th_buf_json_string(th_buf *buf, const char *text);
/* Appends a number as JSON: integers without a fraction, others with up to 17
 * significant digits; NaN and infinities (not JSON) become null. */
void th_buf_json_number(th_buf *buf, double number);
void th_buf_free(th_buf *buf);

/* ---- The tool list ----------------------------------------------------- */

/* Makes room for `count` tools in the list the host asked for. */
void th_tools_init(exports_toolhost_plugin_tools_list_tool_t *ret, size_t count);
/* Fills entry `index`: its name, a description for the model, and the JSON
 * Schema of its arguments object (as JSON text). */
void th_tools_set(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index,
                  const char *name, const char *description, const char *input_schema);

/* ---- A call's result ---------------------------------------------------- */

/* Each returns the value call-tool must return: true for output, false for an error. */
bool th_ok_text(exports_toolhost_plugin_tools_tool_output_t *ret, const char *text);
/* Takes the buffer's text as JSON output and resets the buffer. */
bool th_ok_json_buf(exports_toolhost_plugin_tools_tool_output_t *ret, th_buf *json);
/* The arguments were malformed or out of range: say which and why, so the model can fix them. */
bool th_invalid_arguments(exports_toolhost_plugin_tools_call_error_t *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* The arguments were fine but the tool could not do its job: say why. */
bool th_failed(exports_toolhost_plugin_tools_call_error_t *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Whether `len` bytes of `text` are valid UTF-8. Every string handed to the
 * host (output, error messages, tool descriptions) must be: the canonical ABI
 * traps the call on a string that is not. Check text from outside (an HTTP
 * body, a file) before passing it on. */
bool th_utf8_valid(const char *text, size_t len);

/* A plugin_string_t (not NUL-terminated) as a new NUL-terminated string; free() it. */
char *th_string(const plugin_string_t *string);

/* ---- Logging ------------------------------------------------------------- */

typedef enum th_level {
    TH_TRACE = TOOLHOST_PLUGIN_LOG_LEVEL_TRACE,
    TH_DEBUG = TOOLHOST_PLUGIN_LOG_LEVEL_DEBUG,
    TH_INFO = TOOLHOST_PLUGIN_LOG_LEVEL_INFO,
    TH_WARN = TOOLHOST_PLUGIN_LOG_LEVEL_WARN,
    TH_ERROR = TOOLHOST_PLUGIN_LOG_LEVEL_ERROR,
} th_level;

/* Logs `message` into the host's log, attributed to this plugin, with
 * key/value pairs given as alternating strings and ended by NULL:
 *   th_log(TH_DEBUG, "summarised", "count", "12", NULL); */
void th_log(th_level level, const char *message, ...);

#ifdef __cplusplus
}
#endif

#endif /* TOOLHOST_H */
