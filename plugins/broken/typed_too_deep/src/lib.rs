//! Test plugin `typed_too_deep`: a component of typed functions whose only
//! function takes a type nested 40 levels deep, past what toolhost describes
//! in a JSON Schema; the host must refuse it with that reason.

wit_bindgen::generate!({ path: "wit", world: "too-deep" });

use exports::acme::deep::nesting::{Guest, L40};

struct Deep;

export!(Deep);

impl Guest for Deep {
    fn deep(x: L40) -> u32 {
        x.len() as u32
    }
}
