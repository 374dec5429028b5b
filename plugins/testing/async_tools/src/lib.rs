//! Test plugin `async_tools`: a WASI 0.3 component written the way outside
//! authors write one today, with wit-bindgen's async exports
//! (`wit/tools.wit`, every function an `async func`) and the `wasip3`
//! crate's clocks, HTTP, environment and filesystem. Its standard library
//! still imports WASI 0.2, so the component mixes both. `count` says
//! whether its instance is fresh. `hold-memory`, `big`,
//! `never-resolves`, `sleep-forever`, `spin-task` and `spawn-forever`
//! misbehave on purpose (or can be made to).

wit_bindgen::generate!({ path: "wit", world: "clock-shop" });

use exports::acme::clock_shop::tools::Guest;
use wasip3::clocks::monotonic_clock;
use wasip3::http::types::{ErrorCode, Fields, Method, Request, Response, Scheme};
use wasip3::wit_future;

struct Tools;

export!(Tools);

impl Guest for Tools {
    async fn sum(a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }

    async fn nap(ms: u32) -> u32 {
        let before = monotonic_clock::now();
        monotonic_clock::wait_for(u64::from(ms) * 1_000_000).await;
        let slept = monotonic_clock::now().saturating_sub(before) / 1_000_000;
        u32::try_from(slept).unwrap_or(u32::MAX)
    }

    async fn get_url(url: String) -> Result<String, String> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| format!("not a URL: {url}"))?;
        let scheme = match scheme {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => return Err(format!("unsupported scheme {other}")),
        };
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let (trailers_writer, trailers) = wit_future::new(|| Ok(None));
        drop(trailers_writer);
        let (request, _sent) = Request::new(Fields::new(), None, trailers, None);
        let set = request
            .set_method(&Method::Get)
            .and_then(|()| request.set_scheme(Some(&scheme)))
            .and_then(|()| request.set_authority(Some(authority)))
            .and_then(|()| request.set_path_with_query(Some(path)));
        set.map_err(|()| format!("cannot request {url}"))?;
        let response = wasip3::http::client::send(request).await.map_err(|err| describe(&err))?;
        let status = response.get_status_code();
        let (done_writer, done) = wit_future::new(|| Ok(()));
        drop(done_writer);
        let (body, _trailers) = Response::consume_body(response, done);
        let body = body.collect().await;
        Ok(format!("{status} {}", String::from_utf8_lossy(&body)))
    }

    async fn env_var(name: String) -> Option<String> {
        wasip3::cli::environment::get_environment().into_iter().find(|(key, _)| *key == name).map(|(_, value)| value)
    }

    async fn read_text(path: String) -> Result<String, String> {
        use wasip3::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
        let (folder, at) = wasip3::filesystem::preopens::get_directories()
            .into_iter()
            .next()
            .ok_or_else(|| "no folder is granted".to_owned())?;
        let relative = path.strip_prefix(&at).unwrap_or(&path).trim_start_matches('/');
        let file = folder
            .open_at(PathFlags::empty(), relative.to_owned(), OpenFlags::empty(), DescriptorFlags::READ)
            .await
            .map_err(|err| format!("cannot open {path}: {err:?}"))?;
        let (contents, _done) = file.read_via_stream(0);
        let bytes = contents.collect().await;
        String::from_utf8(bytes).map_err(|_| format!("{path} is not UTF-8 text"))
    }

    async fn make_link(target: String, name: String) -> Result<(), String> {
        let (folder, _) = wasip3::filesystem::preopens::get_directories()
            .into_iter()
            .next()
            .ok_or_else(|| "no folder is granted".to_owned())?;
        folder.symlink_at(target, name).await.map_err(|err| format!("{err:?}"))
    }

    async fn hold_memory(mib: u32) -> u32 {
        let mut held: Vec<Vec<u8>> = Vec::new();
        for _ in 0..mib {
            held.push(vec![7; 1 << 20]);
            wit_bindgen::yield_async().await;
        }
        u32::try_from(held.len()).unwrap_or(u32::MAX)
    }

    async fn count(mib: u32) -> u32 {
        static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let written: Vec<Vec<u8>> = (0..mib).map(|_| vec![7; 1 << 20]).collect();
        std::hint::black_box(written);
        COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }

    async fn big(bytes: u32) -> String {
        "x".repeat(usize::try_from(bytes).unwrap_or(usize::MAX))
    }

    async fn never_resolves() -> String {
        let (writer, reader) = wit_future::new::<Result<(), ErrorCode>>(|| Ok(()));
        // Kept and never written: the read below can never complete.
        std::mem::forget(writer);
        let _ = reader.await;
        "resolved".to_owned()
    }

    async fn sleep_forever() -> String {
        monotonic_clock::wait_for(86_400 * 1_000_000_000).await;
        "woke up".to_owned()
    }

    async fn spin_task() -> String {
        let task = wit_bindgen::spawn_local(async {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
                if n == u64::MAX {
                    break n;
                }
            }
        });
        format!("{:?}", task.await)
    }

    async fn spawn_forever() -> String {
        let mut spawned: u64 = 0;
        loop {
            let task = wit_bindgen::spawn_local(monotonic_clock::wait_for(86_400 * 1_000_000_000));
            // Detached: each goes on waiting on the host.
            drop(task);
            spawned += 1;
            if spawned.is_multiple_of(64) {
                wit_bindgen::yield_async().await;
            }
        }
    }
}

/// An HTTP error code in a sentence.
fn describe(err: &ErrorCode) -> String {
    match err {
        ErrorCode::HttpRequestDenied => "the request was denied".to_owned(),
        other => format!("the request failed: {other:?}"),
    }
}
