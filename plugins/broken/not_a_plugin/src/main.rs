//! Test plugin `not_a_plugin`: a valid WASI component, but a command with a
//! `main` rather than a toolhost plugin; the host must refuse it by name.

fn main() {
    println!("hello from a command, not a plugin");
}
