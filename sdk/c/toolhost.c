/*
 * toolhost.c — the helpers declared in toolhost.h (contract 0.2.0): the tool
 * list, a call's result as content blocks or its error, logging, and the
 * requests a running call may make. The JSON reader and the text buffer are
 * in toolhost_json.c, shared with the SDK of contract 0.1.0.
 */
#include "toolhost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Tool list ----------------------------------------------------------- */

static void dup_option(plugin_option_string_t *option, const char *text) {
    option->is_some = text != NULL;
    if (text) plugin_string_dup(&option->val, text);
}

void th_tools_init(exports_toolhost_plugin_tools_list_tool_t *ret, size_t count) {
    ret->ptr = th_alloc(count * sizeof *ret->ptr);
    /* Every option (title, output schema, hints) starts as none. */
    memset(ret->ptr, 0, count * sizeof *ret->ptr);
    ret->len = count;
}

void th_tools_set(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index,
                  const char *name, const char *description, const char *input_schema) {
    exports_toolhost_plugin_tools_tool_t *tool = &ret->ptr[index];
    plugin_string_dup(&tool->name, name);
    plugin_string_dup(&tool->description, description);
    plugin_string_dup(&tool->input_schema, input_schema);
}

void th_tools_title(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index, const char *title) {
    dup_option(&ret->ptr[index].title, title);
}

void th_tools_output_schema(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index, const char *schema) {
    dup_option(&ret->ptr[index].output_schema, schema);
}

void th_tools_hint(exports_toolhost_plugin_tools_list_tool_t *ret, size_t index, th_hint hint, bool value) {
    toolhost_plugin_types_tool_hints_t *hints = &ret->ptr[index].hints;
    plugin_option_bool_t *slot = hint == TH_HINT_READ_ONLY     ? &hints->read_only
                                 : hint == TH_HINT_DESTRUCTIVE ? &hints->destructive
                                 : hint == TH_HINT_IDEMPOTENT  ? &hints->idempotent
                                                               : &hints->open_world;
    slot->is_some = true;
    slot->val = value;
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

/* ---- Content blocks ------------------------------------------------------ */

/* The list the adders last saw: the bindings hand call_tool an uninitialised
 * one, so a list not seen before starts empty. An instance lives for one call. */
static th_blocks *current_blocks;

void th_blocks_init(th_blocks *ret) {
    ret->ptr = NULL;
    ret->len = 0;
    current_blocks = ret;
}

static th_block *add_block(th_blocks *ret, uint8_t tag) {
    if (ret != current_blocks) th_blocks_init(ret);
    ret->ptr = th_grow(ret->ptr, (ret->len + 1) * sizeof *ret->ptr);
    th_block *block = &ret->ptr[ret->len++];
    memset(block, 0, sizeof *block);
    block->content.tag = tag;
    return block;
}

static void dup_bytes(plugin_list_u8_t *list, const void *data, size_t len) {
    list->ptr = th_alloc(len);
    if (len) memcpy(list->ptr, data, len);
    list->len = len;
}

th_block *th_text(th_blocks *ret, const char *text) {
    th_block *block = add_block(ret, TOOLHOST_PLUGIN_TYPES_CONTENT_TEXT);
    plugin_string_dup(&block->content.val.text, text);
    return block;
}

th_block *th_json_text(th_blocks *ret, const char *json) {
    th_block *block = add_block(ret, TOOLHOST_PLUGIN_TYPES_CONTENT_JSON);
    plugin_string_dup(&block->content.val.json, json);
    return block;
}

th_block *th_json_buf(th_blocks *ret, th_buf *json) {
    th_buf_append(json, "", 0);
    th_block *block = add_block(ret, TOOLHOST_PLUGIN_TYPES_CONTENT_JSON);
    /* Hand the buffer over: the bindings free it after the call. */
    block->content.val.json.ptr = (uint8_t *)json->data;
    block->content.val.json.len = json->len;
    json->data = NULL;
    json->len = 0;
    json->cap = 0;
    return block;
}

static th_block *media(th_blocks *ret, uint8_t tag, const void *data, size_t len, const char *mime_type) {
    th_block *block = add_block(ret, tag);
    toolhost_plugin_types_media_t *media = tag == TOOLHOST_PLUGIN_TYPES_CONTENT_IMAGE ? &block->content.val.image
                                                                                      : &block->content.val.audio;
    plugin_string_dup(&media->mime_type, mime_type);
    dup_bytes(&media->data, data, len);
    return block;
}

th_block *th_image(th_blocks *ret, const void *data, size_t len, const char *mime_type) {
    return media(ret, TOOLHOST_PLUGIN_TYPES_CONTENT_IMAGE, data, len, mime_type);
}

th_block *th_audio(th_blocks *ret, const void *data, size_t len, const char *mime_type) {
    return media(ret, TOOLHOST_PLUGIN_TYPES_CONTENT_AUDIO, data, len, mime_type);
}

th_block *th_link(th_blocks *ret, const char *uri, const char *name, const char *title,
                  const char *description, const char *mime_type, long long size) {
    th_block *block = add_block(ret, TOOLHOST_PLUGIN_TYPES_CONTENT_RESOURCE_LINK);
    toolhost_plugin_types_resource_link_t *link = &block->content.val.resource_link;
    plugin_string_dup(&link->uri, uri);
    plugin_string_dup(&link->name, name);
    dup_option(&link->title, title);
    dup_option(&link->description, description);
    dup_option(&link->mime_type, mime_type);
    link->size.is_some = size >= 0;
    link->size.val = size >= 0 ? (uint64_t)size : 0;
    return block;
}

static th_block *embedded(th_blocks *ret, const char *uri, const char *mime_type) {
    th_block *block = add_block(ret, TOOLHOST_PLUGIN_TYPES_CONTENT_EMBEDDED);
    plugin_string_dup(&block->content.val.embedded.uri, uri);
    dup_option(&block->content.val.embedded.mime_type, mime_type);
    return block;
}

th_block *th_embedded_text(th_blocks *ret, const char *uri, const char *mime_type, const char *text) {
    th_block *block = embedded(ret, uri, mime_type);
    block->content.val.embedded.body.tag = TOOLHOST_PLUGIN_TYPES_RESOURCE_BODY_TEXT;
    plugin_string_dup(&block->content.val.embedded.body.val.text, text);
    return block;
}

th_block *th_embedded_blob(th_blocks *ret, const char *uri, const char *mime_type, const void *data, size_t len) {
    th_block *block = embedded(ret, uri, mime_type);
    block->content.val.embedded.body.tag = TOOLHOST_PLUGIN_TYPES_RESOURCE_BODY_BLOB;
    dup_bytes(&block->content.val.embedded.body.val.blob, data, len);
    return block;
}

void th_annotate(th_block *block, unsigned audience, double priority, const char *last_modified) {
    toolhost_plugin_types_annotations_t *hints = &block->annotations.val;
    if (block->annotations.is_some) {
        /* Annotated again: the new hints replace the old. */
        free(hints->audience.ptr);
        if (hints->last_modified.is_some) plugin_string_free(&hints->last_modified.val);
    }
    memset(hints, 0, sizeof *hints);
    block->annotations.is_some = true;
    size_t count = ((audience & TH_FOR_USER) ? 1 : 0) + ((audience & TH_FOR_ASSISTANT) ? 1 : 0);
    hints->audience.ptr = th_alloc(count * sizeof *hints->audience.ptr);
    hints->audience.len = 0;
    if (audience & TH_FOR_USER) hints->audience.ptr[hints->audience.len++] = TOOLHOST_PLUGIN_TYPES_ROLE_USER;
    if (audience & TH_FOR_ASSISTANT) {
        hints->audience.ptr[hints->audience.len++] = TOOLHOST_PLUGIN_TYPES_ROLE_ASSISTANT;
    }
    hints->priority.is_some = priority >= 0;
    hints->priority.val = priority;
    dup_option(&hints->last_modified, last_modified);
}

bool th_ok_text(th_blocks *ret, const char *text) {
    th_text(ret, text);
    return true;
}

bool th_ok_json_buf(th_blocks *ret, th_buf *json) {
    th_json_buf(ret, json);
    return true;
}

/* ---- Errors ------------------------------------------------------------- */

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

/* ---- Requests ------------------------------------------------------------ */

void th_progress(double done, double total, const char *message) {
    plugin_string_t text;
    if (message) plugin_string_set(&text, message);
    toolhost_plugin_call_progress(done, total >= 0 ? &total : NULL, message ? &text : NULL);
}

const char *th_request_kind(th_request result) {
    switch (result) {
    case TH_REQUEST_OK: return "ok";
    case TH_REQUEST_DENIED: return "denied";
    case TH_REQUEST_UNSUPPORTED: return "unsupported";
    case TH_REQUEST_LIMIT: return "limit";
    default: return "failed";
    }
}

/* The kind of a request error. */
static th_request refusal_kind(const toolhost_plugin_call_request_error_t *refusal) {
    return refusal->tag == TOOLHOST_PLUGIN_CALL_REQUEST_ERROR_DENIED        ? TH_REQUEST_DENIED
           : refusal->tag == TOOLHOST_PLUGIN_CALL_REQUEST_ERROR_UNSUPPORTED ? TH_REQUEST_UNSUPPORTED
           : refusal->tag == TOOLHOST_PLUGIN_CALL_REQUEST_ERROR_LIMIT       ? TH_REQUEST_LIMIT
                                                                            : TH_REQUEST_FAILED;
}

/* The request error as a th_request, its text into `error`; frees it. */
static th_request refused(toolhost_plugin_call_request_error_t *refusal, char *error, size_t error_size) {
    /* Every case carries a string in the same place of the union. */
    plugin_string_t *text = &refusal->val.denied;
    if (error && error_size) {
        size_t n = text->len < error_size - 1 ? text->len : error_size - 1;
        memcpy(error, text->ptr, n);
        error[n] = '\0';
    }
    th_request result = refusal_kind(refusal);
    toolhost_plugin_call_request_error_free(refusal);
    return result;
}

static void say(char *error, size_t error_size, const char *text) {
    if (error && error_size) snprintf(error, error_size, "%s", text);
}

/* The user's answer `got` into `answer` (and, for an accepted form, the
 * object into `answers` when not NULL). */
static th_request elicited(const toolhost_plugin_call_elicit_answer_t *got, th_elicited *answer, th_json **answers,
                           char *error, size_t error_size) {
    th_request result = TH_REQUEST_OK;
    if (answers) *answers = NULL;
    switch (got->tag) {
    case TOOLHOST_PLUGIN_CALL_ELICIT_ANSWER_ACCEPTED:
        *answer = TH_ACCEPTED;
        if (answers) {
            char why[128];
            th_json *parsed = th_json_parse((const char *)got->val.accepted.ptr, got->val.accepted.len, why, sizeof why);
            if (!parsed || parsed->kind != TH_JSON_OBJECT) {
                th_json_free(parsed);
                say(error, error_size, "the host sent answers that are not a JSON object");
                result = TH_REQUEST_FAILED;
            } else {
                *answers = parsed;
            }
        }
        break;
    case TOOLHOST_PLUGIN_CALL_ELICIT_ANSWER_DECLINED: *answer = TH_DECLINED; break;
    default: *answer = TH_CANCELLED; break;
    }
    return result;
}

static th_request elicit(toolhost_plugin_call_elicitation_t *request, th_elicited *answer, th_json **answers,
                         char *error, size_t error_size) {
    toolhost_plugin_call_elicit_answer_t got;
    toolhost_plugin_call_request_error_t refusal;
    if (answers) *answers = NULL;
    if (!toolhost_plugin_call_elicit(request, &got, &refusal)) return refused(&refusal, error, error_size);
    th_request result = elicited(&got, answer, answers, error, error_size);
    toolhost_plugin_call_elicit_answer_free(&got);
    return result;
}

th_request th_elicit(const char *message, const char *schema, th_elicited *answer, th_json **answers,
                     char *error, size_t error_size) {
    toolhost_plugin_call_elicitation_t request = {.tag = TOOLHOST_PLUGIN_CALL_ELICITATION_FORM};
    plugin_string_set(&request.val.form.f0, message);
    plugin_string_set(&request.val.form.f1, schema);
    return elicit(&request, answer, answers, error, error_size);
}

th_request th_elicit_url(const char *message, const char *url, th_elicited *answer, char *error,
                         size_t error_size) {
    toolhost_plugin_call_elicitation_t request = {.tag = TOOLHOST_PLUGIN_CALL_ELICITATION_URL};
    plugin_string_set(&request.val.url.f0, message);
    plugin_string_set(&request.val.url.f1, url);
    return elicit(&request, answer, NULL, error, error_size);
}

static char *option_string(const plugin_option_string_t *option) {
    return option->is_some ? th_string(&option->val) : NULL;
}

/* What a sampling request allocated (it borrows the rest). */
typedef struct sampling_scratch {
    toolhost_plugin_call_message_t *messages;
    plugin_string_t *stop;
    plugin_string_t *hints;
} sampling_scratch;

/* The WIT sampling request for `messages` and `options` (NULL: defaults);
 * free `scratch` with sampling_done once the host has it. */
static void sampling_request(const th_message *messages, size_t count, const th_sampling *options,
                             toolhost_plugin_call_sampling_request_t *request, sampling_scratch *scratch) {
    static const th_sampling defaults = {0};
    if (!options) options = &defaults;
    /* Borrowed: the host copies what it is given during the call. */
    scratch->messages = th_alloc(count * sizeof *scratch->messages);
    for (size_t i = 0; i < count; i++) {
        scratch->messages[i].role = (toolhost_plugin_call_role_t)messages[i].role;
        scratch->messages[i].content.tag = TOOLHOST_PLUGIN_TYPES_CONTENT_TEXT;
        plugin_string_set(&scratch->messages[i].content.val.text, messages[i].text);
    }
    scratch->stop = th_alloc(options->stop_len * sizeof *scratch->stop);
    for (size_t i = 0; i < options->stop_len; i++) plugin_string_set(&scratch->stop[i], options->stop[i]);
    scratch->hints = th_alloc(options->model_hints_len * sizeof *scratch->hints);
    for (size_t i = 0; i < options->model_hints_len; i++) plugin_string_set(&scratch->hints[i], options->model_hints[i]);

    memset(request, 0, sizeof *request);
    request->messages = (toolhost_plugin_call_list_message_t){scratch->messages, count};
    request->system_prompt.is_some = options->system_prompt != NULL;
    if (options->system_prompt) plugin_string_set(&request->system_prompt.val, options->system_prompt);
    request->max_tokens = options->max_tokens ? options->max_tokens : 1000;
    request->temperature.is_some = options->has_temperature;
    request->temperature.val = options->temperature;
    request->stop_sequences = (plugin_list_string_t){scratch->stop, options->stop_len};
    request->preferences.is_some = options->model_hints_len > 0;
    request->preferences.val.hints = (plugin_list_string_t){scratch->hints, options->model_hints_len};
}

static void sampling_done(sampling_scratch *scratch) {
    free(scratch->messages);
    free(scratch->stop);
    free(scratch->hints);
}

/* The model's reply `got` as a th_sampled (copied). */
static void sampled(const toolhost_plugin_call_sampling_reply_t *got, th_sampled *reply) {
    memset(reply, 0, sizeof *reply);
    if (got->content.tag == TOOLHOST_PLUGIN_TYPES_CONTENT_TEXT) reply->text = th_string(&got->content.val.text);
    reply->model = th_string(&got->model);
    reply->stop_reason = option_string(&got->stop_reason);
}

th_request th_sample_messages(const th_message *messages, size_t count, const th_sampling *options,
                              th_sampled *reply, char *error, size_t error_size) {
    memset(reply, 0, sizeof *reply);
    toolhost_plugin_call_sampling_request_t request;
    sampling_scratch scratch;
    sampling_request(messages, count, options, &request, &scratch);
    toolhost_plugin_call_sampling_reply_t got;
    toolhost_plugin_call_request_error_t refusal;
    bool ok = toolhost_plugin_call_sample(&request, &got, &refusal);
    sampling_done(&scratch);
    if (!ok) return refused(&refusal, error, error_size);
    sampled(&got, reply);
    toolhost_plugin_call_sampling_reply_free(&got);
    return TH_REQUEST_OK;
}

th_request th_sample(const char *prompt, const th_sampling *options, th_sampled *reply, char *error,
                     size_t error_size) {
    th_message message = {TH_USER, prompt};
    return th_sample_messages(&message, 1, options, reply, error, error_size);
}

void th_sampled_free(th_sampled *reply) {
    free(reply->text);
    free(reply->model);
    free(reply->stop_reason);
    memset(reply, 0, sizeof *reply);
}

/* The client's roots `got` as th_roots (copied). */
static void rooted(const toolhost_plugin_call_list_root_t *got, th_root **roots, size_t *count) {
    *roots = th_alloc(got->len * sizeof **roots);
    for (size_t i = 0; i < got->len; i++) {
        (*roots)[i].uri = th_string(&got->ptr[i].uri);
        (*roots)[i].name = option_string(&got->ptr[i].name);
    }
    *count = got->len;
}

th_request th_roots(th_root **roots, size_t *count, char *error, size_t error_size) {
    toolhost_plugin_call_list_root_t got;
    toolhost_plugin_call_request_error_t refusal;
    *roots = NULL;
    *count = 0;
    if (!toolhost_plugin_call_roots(&got, &refusal)) return refused(&refusal, error, error_size);
    rooted(&got, roots, count);
    toolhost_plugin_call_list_root_free(&got);
    return TH_REQUEST_OK;
}

void th_roots_free(th_root *roots, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free(roots[i].uri);
        free(roots[i].name);
    }
    free(roots);
}

static char *copy_text(const char *text) {
    plugin_string_t string = {(uint8_t *)text, strlen(text)};
    return th_string(&string);
}

void th_ask(const th_question *questions, size_t count, th_answer *answers) {
    toolhost_plugin_call_tuple2_string_question_t *asked = th_alloc(count * sizeof *asked);
    sampling_scratch *scratch = th_alloc(count * sizeof *scratch);
    memset(asked, 0, count * sizeof *asked);
    memset(scratch, 0, count * sizeof *scratch);
    /* Borrowed: the host copies what it is given during the call. */
    for (size_t i = 0; i < count; i++) {
        const th_question *question = &questions[i];
        toolhost_plugin_call_question_t *wit = &asked[i].f1;
        plugin_string_set(&asked[i].f0, question->key ? question->key : "");
        switch (question->kind) {
        case TH_ASK_FORM:
        case TH_ASK_URL: {
            bool form = question->kind == TH_ASK_FORM;
            wit->tag = TOOLHOST_PLUGIN_CALL_QUESTION_ELICIT;
            wit->val.elicit.tag = form ? TOOLHOST_PLUGIN_CALL_ELICITATION_FORM : TOOLHOST_PLUGIN_CALL_ELICITATION_URL;
            /* Form and URL hold (message, text) alike. */
            plugin_string_set(&wit->val.elicit.val.form.f0, question->message ? question->message : "");
            const char *text = form ? question->schema : question->url;
            plugin_string_set(&wit->val.elicit.val.form.f1, text ? text : "");
            break;
        }
        case TH_ASK_SAMPLE:
            wit->tag = TOOLHOST_PLUGIN_CALL_QUESTION_SAMPLE;
            sampling_request(question->messages, question->messages_len, question->options, &wit->val.sample,
                             &scratch[i]);
            break;
        default: wit->tag = TOOLHOST_PLUGIN_CALL_QUESTION_ROOTS; break;
        }
    }
    toolhost_plugin_call_list_tuple2_string_question_t list = {asked, count};
    toolhost_plugin_call_list_result_answer_request_error_t got;
    toolhost_plugin_call_ask(&list, &got);
    for (size_t i = 0; i < count; i++) sampling_done(&scratch[i]);
    free(scratch);
    free(asked);

    memset(answers, 0, count * sizeof *answers);
    for (size_t i = 0; i < count; i++) {
        th_answer *answer = &answers[i];
        if (i >= got.len) {
            answer->result = TH_REQUEST_FAILED;
            answer->error = copy_text("the host gave no answer to this question");
            continue;
        }
        toolhost_plugin_call_result_answer_request_error_t *one = &got.ptr[i];
        if (one->is_err) {
            answer->result = refusal_kind(&one->val.err);
            answer->error = th_string(&one->val.err.val.denied); /* every case holds a string */
            continue;
        }
        char error[128] = "";
        switch (one->val.ok.tag) {
        case TOOLHOST_PLUGIN_CALL_ANSWER_ELICITED:
            answer->result = elicited(&one->val.ok.val.elicited, &answer->elicited,
                                      questions[i].kind == TH_ASK_FORM ? &answer->answers : NULL, error, sizeof error);
            break;
        case TOOLHOST_PLUGIN_CALL_ANSWER_SAMPLED: sampled(&one->val.ok.val.sampled, &answer->sampled); break;
        default: rooted(&one->val.ok.val.roots, &answer->roots, &answer->roots_len); break;
        }
        if (answer->result != TH_REQUEST_OK) answer->error = copy_text(error);
    }
    toolhost_plugin_call_list_result_answer_request_error_free(&got);
}

void th_answers_free(th_answer *answers, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free(answers[i].error);
        th_json_free(answers[i].answers);
        th_sampled_free(&answers[i].sampled);
        th_roots_free(answers[i].roots, answers[i].roots_len);
    }
    memset(answers, 0, count * sizeof *answers);
}
