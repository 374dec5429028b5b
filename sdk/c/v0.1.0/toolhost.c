/*
 * toolhost.c — the helpers declared in toolhost.h: constructors for the tool
 * list and a call's result, and logging. The JSON reader and the text buffer
 * are the current SDK's (../toolhost_json.c), compiled beside this file.
 */
#include "toolhost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Tool list and results --------------------------------------------- */

void th_tools_init(exports_toolhost_plugin_tools_list_tool_t *ret, size_t count) {
    ret->ptr = th_alloc(count * sizeof *ret->ptr);
    ret->len = count;
}

void th_tools_set(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index,
                  const char *name, const char *description, const char *input_schema) {
    exports_toolhost_plugin_tools_tool_t *tool = &ret->ptr[index];
    plugin_string_dup(&tool->name, name);
    plugin_string_dup(&tool->description, description);
    plugin_string_dup(&tool->input_schema, input_schema);
}

bool th_utf8_valid(const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t extra;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            extra = 1, cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            extra = 2, cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            extra = 3, cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i <= extra) return false;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        /* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
        if ((extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += extra + 1;
    }
    return true;
}

bool th_ok_text(exports_toolhost_plugin_tools_tool_output_t *ret, const char *text) {
    ret->tag = TOOLHOST_PLUGIN_TYPES_TOOL_OUTPUT_TEXT;
    plugin_string_dup(&ret->val.text, text);
    return true;
}

bool th_ok_json_buf(exports_toolhost_plugin_tools_tool_output_t *ret, th_buf *json) {
    th_buf_append(json, "", 0);
    ret->tag = TOOLHOST_PLUGIN_TYPES_TOOL_OUTPUT_JSON;
    /* Hand the buffer over: the bindings free it after the call. */
    ret->val.json.ptr = (uint8_t *)json->data;
    ret->val.json.len = json->len;
    json->data = NULL;
    json->len = 0;
    json->cap = 0;
    return true;
}

static bool error_with(exports_toolhost_plugin_tools_call_error_t *err, uint8_t tag,
                       const char *format, va_list args) {
    th_buf text = {0};
    th_buf_vprintf(&text, format, args);
    th_buf_append(&text, "", 0);
    err->tag = tag;
    /* Both variants carry a string in the same place of the union. */
    err->val.failed.ptr = (uint8_t *)text.data;
    err->val.failed.len = text.len;
    return false;
}

bool th_invalid_arguments(exports_toolhost_plugin_tools_call_error_t *err, const char *format, ...) {
    va_list args;
    va_start(args, format);
    error_with(err, TOOLHOST_PLUGIN_TYPES_CALL_ERROR_INVALID_ARGUMENTS, format, args);
    va_end(args);
    return false;
}

bool th_failed(exports_toolhost_plugin_tools_call_error_t *err, const char *format, ...) {
    va_list args;
    va_start(args, format);
    error_with(err, TOOLHOST_PLUGIN_TYPES_CALL_ERROR_FAILED, format, args);
    va_end(args);
    return false;
}

char *th_string(const plugin_string_t *string) {
    char *copy = th_alloc(string->len + 1);
    memcpy(copy, string->ptr, string->len);
    copy[string->len] = '\0';
    return copy;
}

/* ---- Logging ------------------------------------------------------------- */

void th_log(th_level level, const char *message, ...) {
    toolhost_plugin_log_field_t fields[16];
    size_t count = 0;
    va_list args;
    va_start(args, message);
    while (count < sizeof fields / sizeof fields[0]) {
        const char *key = va_arg(args, const char *);
        if (!key) break;
        const char *value = va_arg(args, const char *);
        plugin_string_set(&fields[count].key, key);
        plugin_string_set(&fields[count].value, value ? value : "");
        count++;
    }
    va_end(args);
    plugin_string_t text;
    plugin_string_set(&text, message);
    toolhost_plugin_log_list_field_t list = {fields, count};
    toolhost_plugin_log_log((toolhost_plugin_log_level_t)level, &text, &list);
}
