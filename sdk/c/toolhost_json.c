/*
 * toolhost_json.c — the helpers declared in toolhost_json.h, shared by every
 * version of the C SDK: the allocator, the JSON reader and the text buffer.
 */
#include "toolhost_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting deeper than this is refused rather than risking the guest's stack. */
#define TH_JSON_MAX_DEPTH 128

void *th_alloc(size_t size) {
    void *ptr = malloc(size ? size : 1);
    if (!ptr) {
        /* Out of memory inside a sandbox: the host reports the memory limit. */
        abort();
    }
    return ptr;
}

void *th_grow(void *ptr, size_t size) {
    void *grown = realloc(ptr, size ? size : 1);
    if (!grown) {
        abort();
    }
    return grown;
}

/* ---- JSON --------------------------------------------------------------- */

typedef struct parser {
    const char *text;
    size_t len;
    size_t pos;
    char *error;
    size_t error_size;
    bool failed;
} parser;

static void fail(parser *p, const char *what) {
    if (!p->failed) {
        p->failed = true;
        if (p->error && p->error_size) {
            snprintf(p->error, p->error_size, "%s at byte %zu", what, p->pos);
        }
    }
}

static void skip_space(parser *p) {
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            break;
        }
        p->pos++;
    }
}

static bool literal(parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->len - p->pos >= n && memcmp(p->text + p->pos, word, n) == 0) {
        p->pos += n;
        return true;
    }
    return false;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(parser *p, unsigned *out) {
    if (p->len - p->pos < 4) {
        fail(p, "incomplete \\u escape");
        return false;
    }
    unsigned value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(p->text[p->pos + i]);
        if (digit < 0) {
            fail(p, "bad \\u escape");
            return false;
        }
        value = value * 16 + (unsigned)digit;
    }
    p->pos += 4;
    *out = value;
    return true;
}

static void put_utf8(th_buf *buf, unsigned cp) {
    char out[4];
    size_t n;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    th_buf_append(buf, out, n);
}

/* Reads a string whose opening quote is at p->pos; the result is owned by the caller. */
static char *parse_string(parser *p, size_t *out_len) {
    p->pos++; /* the opening quote */
    th_buf buf = {0};
    th_buf_append(&buf, "", 0);
    while (true) {
        if (p->pos >= p->len) {
            fail(p, "unterminated string");
            th_buf_free(&buf);
            return NULL;
        }
        char c = p->text[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if ((unsigned char)c < 0x20) {
            fail(p, "control character in a string");
            th_buf_free(&buf);
            return NULL;
        }
        if (c != '\\') {
            size_t start = p->pos;
            while (p->pos < p->len && p->text[p->pos] != '"' && p->text[p->pos] != '\\' &&
                   (unsigned char)p->text[p->pos] >= 0x20) {
                p->pos++;
            }
            th_buf_append(&buf, p->text + start, p->pos - start);
            continue;
        }
        p->pos++;
        if (p->pos >= p->len) {
            fail(p, "unterminated escape");
            th_buf_free(&buf);
            return NULL;
        }
        char e = p->text[p->pos++];
        switch (e) {
        case '"': th_buf_append(&buf, "\"", 1); break;
        case '\\': th_buf_append(&buf, "\\", 1); break;
        case '/': th_buf_append(&buf, "/", 1); break;
        case 'b': th_buf_append(&buf, "\b", 1); break;
        case 'f': th_buf_append(&buf, "\f", 1); break;
        case 'n': th_buf_append(&buf, "\n", 1); break;
        case 'r': th_buf_append(&buf, "\r", 1); break;
        case 't': th_buf_append(&buf, "\t", 1); break;
        case 'u': {
            unsigned cp;
            if (!read_hex4(p, &cp)) {
                th_buf_free(&buf);
                return NULL;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned low;
                if (!literal(p, "\\u") || !read_hex4(p, &low) || low < 0xDC00 || low > 0xDFFF) {
                    fail(p, "unpaired surrogate in a \\u escape");
                    th_buf_free(&buf);
                    return NULL;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                fail(p, "unpaired surrogate in a \\u escape");
                th_buf_free(&buf);
                return NULL;
            }
            put_utf8(&buf, cp);
            break;
        }
        default:
            p->pos--;
            fail(p, "unknown escape");
            th_buf_free(&buf);
            return NULL;
        }
    }
    *out_len = buf.len;
    return buf.data;
}

static bool parse_number(parser *p, double *out) {
    size_t start = p->pos;
    const char *t = p->text;
    size_t i = p->pos;
    if (i < p->len && t[i] == '-') i++;
    if (i < p->len && t[i] == '0') {
        i++;
    } else if (i < p->len && t[i] >= '1' && t[i] <= '9') {
        while (i < p->len && t[i] >= '0' && t[i] <= '9') i++;
    } else {
        fail(p, "expected a value");
        return false;
    }
    if (i < p->len && t[i] == '.') {
        i++;
        if (i >= p->len || t[i] < '0' || t[i] > '9') {
            p->pos = i;
            fail(p, "expected a digit after the decimal point");
            return false;
        }
        while (i < p->len && t[i] >= '0' && t[i] <= '9') i++;
    }
    if (i < p->len && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < p->len && (t[i] == '+' || t[i] == '-')) i++;
        if (i >= p->len || t[i] < '0' || t[i] > '9') {
            p->pos = i;
            fail(p, "expected a digit in the exponent");
            return false;
        }
        while (i < p->len && t[i] >= '0' && t[i] <= '9') i++;
    }
    /* strtod needs a NUL-terminated copy: the text is not terminated. */
    size_t n = i - start;
    char small[64];
    char *copy = n < sizeof small ? small : th_alloc(n + 1);
    memcpy(copy, t + start, n);
    copy[n] = '\0';
    *out = strtod(copy, NULL);
    if (copy != small) free(copy);
    p->pos = i;
    return true;
}

static void free_members(th_json *value);

static bool parse_value(parser *p, th_json *out, int depth) {
    memset(out, 0, sizeof *out);
    skip_space(p);
    if (p->pos >= p->len) {
        fail(p, "unexpected end of input");
        return false;
    }
    char c = p->text[p->pos];
    if (c == '{' || c == '[') {
        if (depth >= TH_JSON_MAX_DEPTH) {
            fail(p, "nested too deeply");
            return false;
        }
        bool object = c == '{';
        char close = object ? '}' : ']';
        out->kind = object ? TH_JSON_OBJECT : TH_JSON_ARRAY;
        p->pos++;
        skip_space(p);
        if (p->pos < p->len && p->text[p->pos] == close) {
            p->pos++;
            return true;
        }
        size_t cap = 0;
        while (true) {
            char *key = NULL;
            if (object) {
                skip_space(p);
                if (p->pos >= p->len || p->text[p->pos] != '"') {
                    fail(p, "expected a member name in quotes");
                    free_members(out);
                    return false;
                }
                size_t key_len;
                key = parse_string(p, &key_len);
                if (!key) {
                    free_members(out);
                    return false;
                }
                skip_space(p);
                if (p->pos >= p->len || p->text[p->pos] != ':') {
                    fail(p, "expected `:` after a member name");
                    free(key);
                    free_members(out);
                    return false;
                }
                p->pos++;
            }
            if (out->len == cap) {
                cap = cap ? cap * 2 : 4;
                out->items = th_grow(out->items, cap * sizeof *out->items);
                if (object) out->keys = th_grow(out->keys, cap * sizeof *out->keys);
            }
            if (!parse_value(p, &out->items[out->len], depth + 1)) {
                free(key);
                free_members(out);
                return false;
            }
            if (object) out->keys[out->len] = key;
            out->len++;
            skip_space(p);
            if (p->pos < p->len && p->text[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < p->len && p->text[p->pos] == close) {
                p->pos++;
                return true;
            }
            fail(p, object ? "expected `,` or `}`" : "expected `,` or `]`");
            free_members(out);
            return false;
        }
    }
    if (c == '"') {
        out->kind = TH_JSON_STRING;
        out->string = parse_string(p, &out->string_len);
        return out->string != NULL;
    }
    if (literal(p, "true")) {
        out->kind = TH_JSON_BOOL;
        out->boolean = true;
        return true;
    }
    if (literal(p, "false")) {
        out->kind = TH_JSON_BOOL;
        return true;
    }
    if (literal(p, "null")) {
        out->kind = TH_JSON_NULL;
        return true;
    }
    out->kind = TH_JSON_NUMBER;
    return parse_number(p, &out->number);
}

static void free_members(th_json *value) {
    for (size_t i = 0; i < value->len; i++) {
        free_members(&value->items[i]);
        if (value->keys) free(value->keys[i]);
    }
    free(value->items);
    free(value->keys);
    free(value->string);
    value->items = NULL;
    value->keys = NULL;
    value->string = NULL;
    value->len = 0;
}

th_json *th_json_parse(const char *text, size_t len, char *error, size_t error_size) {
    parser p = {text, len, 0, error, error_size, false};
    th_json *value = th_alloc(sizeof *value);
    if (!parse_value(&p, value, 0)) {
        free(value);
        return NULL;
    }
    skip_space(&p);
    if (p.pos != p.len) {
        fail(&p, "unexpected text after the value");
        th_json_free(value);
        return NULL;
    }
    return value;
}

void th_json_free(th_json *value) {
    if (value) {
        free_members(value);
        free(value);
    }
}

const th_json *th_json_get(const th_json *object, const char *key) {
    if (!object || object->kind != TH_JSON_OBJECT) return NULL;
    /* The last member wins when a key repeats, as in most JSON readers. */
    for (size_t i = object->len; i-- > 0;) {
        if (strcmp(object->keys[i], key) == 0) return &object->items[i];
    }
    return NULL;
}

/* ---- Text buffer ------------------------------------------------------- */

void th_buf_append(th_buf *buf, const char *text, size_t len) {
    if (buf->len + len + 1 > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 64;
        while (cap < buf->len + len + 1) cap *= 2;
        buf->data = th_grow(buf->data, cap);
        buf->cap = cap;
    }
    memcpy(buf->data + buf->len, text, len);
    buf->len += len;
    buf->data[buf->len] = '\0';
}

void th_buf_puts(th_buf *buf, const char *text) {
    th_buf_append(buf, text, strlen(text));
}

void th_buf_vprintf(th_buf *buf, const char *format, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int n = vsnprintf(NULL, 0, format, copy);
    va_end(copy);
    if (n <= 0) return;
    th_buf_append(buf, "", 0);
    if (buf->len + (size_t)n + 1 > buf->cap) {
        size_t cap = buf->cap;
        while (cap < buf->len + (size_t)n + 1) cap *= 2;
        buf->data = th_grow(buf->data, cap);
        buf->cap = cap;
    }
    vsnprintf(buf->data + buf->len, (size_t)n + 1, format, args);
    buf->len += (size_t)n;
}

void th_buf_printf(th_buf *buf, const char *format, ...) {
    va_list args;
    va_start(args, format);
    th_buf_vprintf(buf, format, args);
    va_end(args);
}

void th_buf_json_string(th_buf *buf, const char *text) {
    th_buf_append(buf, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '"': th_buf_puts(buf, "\\\""); break;
        case '\\': th_buf_puts(buf, "\\\\"); break;
        case '\n': th_buf_puts(buf, "\\n"); break;
        case '\r': th_buf_puts(buf, "\\r"); break;
        case '\t': th_buf_puts(buf, "\\t"); break;
        default:
            if (*c < 0x20) {
                th_buf_printf(buf, "\\u%04x", *c);
            } else {
                th_buf_append(buf, (const char *)c, 1);
            }
        }
    }
    th_buf_append(buf, "\"", 1);
}

void th_buf_json_number(th_buf *buf, double number) {
    if (!isfinite(number)) {
        th_buf_puts(buf, "null");
    } else if (number == floor(number) && fabs(number) < 1e15) {
        th_buf_printf(buf, "%.0f", number);
    } else {
        /* The shortest of %.15g..%.17g that reads back as the same double. */
        char text[32];
        for (int precision = 15; precision <= 17; precision++) {
            snprintf(text, sizeof text, "%.*g", precision, number);
            if (strtod(text, NULL) == number) break;
        }
        th_buf_puts(buf, text);
    }
}

void th_buf_free(th_buf *buf) {
    free(buf->data);
    buf->data = NULL;
    buf->len = 0;
    buf->cap = 0;
}
