//! Logging into the host's log. Records are attributed to the plugin and the
//! call; the host bounds their size and number.

use crate::__private::bindings::toolhost::plugin::log::{self as wit, Field, Level};

fn emit(level: Level, message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<Field> =
        fields.iter().map(|(key, value)| Field { key: (*key).to_owned(), value: (*value).to_owned() }).collect();
    wit::log(level, message, &fields);
}

/// Logs `message` with key/value `fields` at debug level.
pub fn debug_with(message: &str, fields: &[(&str, &str)]) {
    emit(Level::Debug, message, fields);
}

/// Logs `message` with key/value `fields` at info level.
pub fn info_with(message: &str, fields: &[(&str, &str)]) {
    emit(Level::Info, message, fields);
}

/// Logs `message` at trace level.
pub fn trace(message: &str) {
    emit(Level::Trace, message, &[]);
}

/// Logs `message` at debug level.
pub fn debug(message: &str) {
    emit(Level::Debug, message, &[]);
}

/// Logs `message` at info level.
pub fn info(message: &str) {
    emit(Level::Info, message, &[]);
}

/// Logs `message` at warn level.
pub fn warn(message: &str) {
    emit(Level::Warn, message, &[]);
}

/// Logs `message` at error level.
pub fn error(message: &str) {
    emit(Level::Error, message, &[]);
}
