//! Test plugin `wassette_tools`: a component written the way Wassette's
//! users write one: plain WIT interfaces exported (`wit/world.wit`), no
//! toolhost contract or SDK, and the permissions it needs in a
//! `policy.yaml` beside it. Its functions take host paths as arguments, so
//! a granted folder must keep its path inside the sandbox. The tests in
//! `tests/all/wassette.rs` import its policy and call it through the CLI
//! and `serve`.

wit_bindgen::generate!({ path: "wit", world: "tools", generate_all });

use exports::local::wassette_tools::files::Guest as Files;
use exports::local::wassette_tools::settings::Guest as Settings;
use exports::local::wassette_tools::web::Guest as Web;

struct Tools;

export!(Tools);

impl Files for Tools {
    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(&path).map_err(|err| format!("cannot read {path}: {err}"))
    }

    fn list_folder(path: String) -> Result<Vec<String>, String> {
        let entries = std::fs::read_dir(&path).map_err(|err| format!("cannot list {path}: {err}"))?;
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    fn write_file(path: String, text: String) -> Result<(), String> {
        std::fs::write(&path, text).map_err(|err| format!("cannot write {path}: {err}"))
    }
}

impl Settings for Tools {
    fn get_env(key: String) -> Option<String> {
        std::env::var(key).ok()
    }
}

impl Web for Tools {
    fn fetch(url: String) -> Result<String, String> {
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
        Ok(format!("{status} {}", String::from_utf8_lossy(&bytes)))
    }
}
