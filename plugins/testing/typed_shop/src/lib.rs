//! Test plugin `typed_shop`: a component written as plain typed functions
//! (`wit/shop.wit`) rather than toolhost's contract, the way other runtimes'
//! users write tools. Every function answers from its arguments alone, so
//! the tests can check each WIT type's round trip; `spin`, `hog` and `crash`
//! misbehave on purpose, `read-counter` takes a resource, which JSON
//! cannot carry, and `fetch` makes an HTTP request through wasi:http.

#[cfg(not(feature = "plain"))]
wit_bindgen::generate!({ path: "wit", world: "shop", generate_all });
// Without wasi:config, for runtimes that lack it (the benchmarks beside Wassette).
#[cfg(feature = "plain")]
wit_bindgen::generate!({ path: "wit", world: "shop-plain", generate_all });

use exports::acme::shop::handles::{CounterBorrow, Guest as Handles, GuestCounter};
use exports::acme::shop::inventory::{Guest as Inventory, Item, LookupError};
use exports::acme::shop::kinds::{Color, Guest as Kinds, Permissions, Shape};
use exports::acme::shop::web::{Guest as Web, Reply};
use std::cell::Cell;

struct Shop;

export!(Shop);

impl Guest for Shop {
    fn ping() -> String {
        "pong".to_owned()
    }

    #[cfg(not(feature = "plain"))]
    fn setting(key: String) -> Option<String> {
        wasi::config::store::get(&key).ok().flatten()
    }
}

impl Inventory for Shop {
    fn get_item(sku: String) -> Result<Item, LookupError> {
        match sku.as_str() {
            "A-1" => Ok(Item {
                sku,
                name: "Anvil".to_owned(),
                price_cents: 129_900,
                tags: vec!["heavy".to_owned(), "iron".to_owned()],
                discount: Some(10),
            }),
            "B-2" => Err(LookupError::OutOfStock),
            _ => Err(LookupError::NotFound(format!("no article {sku}"))),
        }
    }
}

impl Kinds for Shop {
    fn hello(name: String, excited: Option<bool>) -> String {
        if excited == Some(true) { format!("Hello, {name}!") } else { format!("Hello, {name}.") }
    }

    fn add(a: i32, b: i32) -> i64 {
        i64::from(a) + i64::from(b)
    }

    fn wide(u: u64, s: i64) -> (u64, i64) {
        (u, s)
    }

    #[allow(clippy::type_complexity)]
    fn echo_all(
        c: Color,
        p: Permissions,
        s: Shape,
        t: (u8, char),
        bytes: Vec<u8>,
        x: f32,
        r: Result<String, u16>,
    ) -> (Color, Permissions, Shape, (u8, char), Vec<u8>, f32, Result<String, u16>) {
        (c, p, s, t, bytes, x, r)
    }

    fn nothing() {}

    fn spin() -> u32 {
        let mut n: u32 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn hog() -> u32 {
        let mut held: Vec<Vec<u8>> = Vec::new();
        loop {
            held.push(vec![1; 1 << 20]);
            std::hint::black_box(&held);
        }
    }

    fn crash() -> u32 {
        panic!("the shop is closed")
    }
}

/// A counter held by the caller (through a handle).
struct Count(Cell<u32>);

impl GuestCounter for Count {
    fn new() -> Count {
        Count(Cell::new(0))
    }

    fn bump(&self) -> u32 {
        self.0.set(self.0.get() + 1);
        self.0.get()
    }
}

impl Handles for Shop {
    type Counter = Count;

    fn read_counter(c: CounterBorrow<'_>) -> u32 {
        c.get::<Count>().0.get()
    }
}

impl Web for Shop {
    fn fetch(url: String) -> Result<Reply, String> {
        use wasip2::http::outgoing_handler;
        use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
        let rest = url.strip_prefix("http://").ok_or("only http:// URLs")?;
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let request = OutgoingRequest::new(Fields::new());
        request.set_method(&Method::Get).map_err(|()| "bad method")?;
        request.set_scheme(Some(&Scheme::Http)).map_err(|()| "bad scheme")?;
        request.set_authority(Some(authority)).map_err(|()| "bad host")?;
        request.set_path_with_query(Some(path)).map_err(|()| "bad path")?;
        let body = request.body().map_err(|()| "no request body")?;
        let pending = outgoing_handler::handle(request, None).map_err(|code| format!("refused: {code:?}"))?;
        OutgoingBody::finish(body, None).map_err(|code| format!("failed: {code:?}"))?;
        let response = loop {
            match pending.get() {
                Some(Ok(Ok(response))) => break response,
                Some(Ok(Err(code))) => return Err(format!("failed: {code:?}")),
                Some(Err(())) => return Err("the response was taken".to_owned()),
                None => pending.subscribe().block(),
            }
        };
        let status = response.status();
        let incoming = response.consume().map_err(|()| "no response body")?;
        let stream = incoming.stream().map_err(|()| "no response stream")?;
        let mut bytes = Vec::new();
        while let Ok(chunk) = stream.blocking_read(64 << 10) {
            bytes.extend_from_slice(&chunk);
        }
        Ok(Reply { status, body: String::from_utf8_lossy(&bytes).into_owned() })
    }
}
