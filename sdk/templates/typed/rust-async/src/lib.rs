//! `__NAME__`: a toolhost plugin of typed functions, written as WASI 0.3
//! async functions. Build it with `./build.sh`, which writes `__NAME__.wasm`;
//! copy that file into toolhost's plugins folder.
//!
//! Each function `wit/world.wit` exports is a tool. `wit_bindgen` turns the
//! world into Rust: its records into structs, a `result` into `Result`, and
//! the exports into the `Guest` trait implemented below, whose functions are
//! `async`: they may await WASI 0.3's interfaces (the `wasip3` crate:
//! `wasip3::http::client::send(request).await`, `wasip3::clocks::monotonic_clock::wait_for(ns).await`),
//! each reaching only what toolhost's operator granted the plugin.

wit_bindgen::generate!({ path: "wit", world: "plugin" });

struct Plugin;

export!(Plugin);

impl Guest for Plugin {
    async fn __FUNC_SNAKE__(text: String) -> Result<Counts, String> {
        if text.is_empty() {
            // An `err` is the tool's error: the model reads it and can call again.
            return Err("`text` is empty: give the text to count".to_owned());
        }
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(Counts { words: count(text.split_whitespace().count()), characters: count(text.chars().count()) })
    }
}
