// __NAME__: a toolhost plugin of typed functions. Build it with ./build.sh,
// which writes __NAME__.wasm; copy that file into toolhost's plugins folder.
//
// Each function wit/world.wit exports is a tool. wit-bindgen writes
// gen/plugin.h from the world: a record is a struct, strings are
// `plugin_string_t` (UTF-8, not NUL-terminated), and an export returning
// `result<T, E>` returns true with `*ret` set, or false with `*err` set.

#include "plugin.h"

#include <ctype.h>
#include <stdbool.h>

bool exports_plugin___FUNC_SNAKE__(plugin_string_t *text, plugin_counts_t *ret, plugin_string_t *err) {
    if (text->len == 0) {
        // An `err` is the tool's error: the model reads it and can call again.
        plugin_string_dup(err, "`text` is empty: give the text to count");
        plugin_string_free(text);
        return false;
    }
    uint32_t words = 0, characters = 0;
    bool in_word = false;
    for (size_t i = 0; i < text->len; i++) {
        uint8_t byte = text->ptr[i];
        if ((byte & 0xC0) != 0x80) {
            characters++; // not a UTF-8 continuation byte
        }
        bool space = byte < 0x80 && isspace(byte);
        if (!space && !in_word) {
            words++;
        }
        in_word = !space;
    }
    plugin_string_free(text);
    ret->words = words;
    ret->characters = characters;
    return true;
}
