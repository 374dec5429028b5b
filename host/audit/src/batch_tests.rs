//! Batch signing end to end in the crate: the writer's heads, receipts
//! checked with the public key alone, and `verify` on every way a file
//! can be changed.

use crate::canonical::Object;
use crate::keys::{Algorithm, PublicKey, SigningKey};
use crate::log::{AuditLog, Pending, Signing, Target};
use crate::verify::{check_receipt, receipt_line, verify};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn keys() -> (Vec<u8>, PublicKey) {
    let der = SigningKey::generate(Algorithm::Ed25519).unwrap();
    let public = SigningKey::from_pkcs8(&der).unwrap().public().clone();
    (der, public)
}

fn batches(lines: usize) -> Signing {
    Signing::Batch { lines, interval: Duration::from_secs(3600) }
}

fn open(path: &Path, der: &[u8], signing: Signing) -> AuditLog {
    let target = Target::File { path: path.to_path_buf(), rotate: u64::MAX, checkpoint: None };
    AuditLog::open(target, SigningKey::from_pkcs8(der).unwrap(), 64, signing).unwrap()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|line| format!("{line}\n")).collect::<String>()).unwrap();
}

fn record(n: u64) -> crate::CallRecord {
    crate::CallRecord {
        kind: "tool",
        started: std::time::SystemTime::now(),
        caller: crate::Caller::on("serve"),
        name: "echo".to_owned(),
        origin: None,
        arguments: format!("{{\"n\":{n}}}"),
        hooks: Vec::new(),
        outcome: Ok(()),
        usage: Default::default(),
        refused: Vec::new(),
        effects: Default::default(),
        cached: None,
        result: Some(json!({"content": [{"type": "text", "text": format!("answer {n}")}]})),
    }
}

/// A log of ten lines in batches of four: heads at seq 5, 10 and (at the
/// writer's end) 13.
fn ten(dir: &Path) -> (PathBuf, Vec<u8>, PublicKey) {
    let path = dir.join("audit.log");
    let (der, public) = keys();
    let log = open(&path, &der, batches(4));
    for n in 0..10 {
        log.record(Pending::Json(json!({"kind": "tool", "n": n})));
    }
    drop(log);
    (path, der, public)
}

fn broken(path: &Path, public: &PublicKey) -> String {
    let err = verify(&[path.to_path_buf()], public).unwrap_err();
    format!("line {}: {}", err.line, err.reason)
}

#[test]
fn heads_follow_each_batch_and_cover_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, public) = ten(dir.path());
    let summary = verify(std::slice::from_ref(&path), &public).unwrap();
    assert_eq!((summary.lines, summary.last_seq, summary.heads), (13, 13, 3));
    let all: Vec<Value> = lines(&path).iter().map(|line| serde_json::from_str(line).unwrap()).collect();
    let heads: Vec<_> = all.iter().filter(|line| line["kind"] == "head").collect();
    let place = |head: &Value| (head["seq"].as_u64().unwrap(), head["tree_size"].as_u64().unwrap());
    assert_eq!(heads.iter().map(|head| place(head)).collect::<Vec<_>>(), [(5, 4), (10, 4), (13, 2)]);
    // Batched lines carry no signature; heads do, and name the head before.
    assert!(all.iter().filter(|line| line["kind"] == "tool").all(|line| line.get("sig").is_none() && line["v"] == 2));
    assert_eq!(heads[0]["prev_head"], crate::line::GENESIS);
    let digest = |line: &str| crate::keys::hex(&<sha2::Sha256 as sha2::Digest>::digest(line.as_bytes()));
    assert_eq!(heads[1]["prev_head"], digest(&lines(&path)[4]));
}

/// A change made to a log's lines.
type Change = Box<dyn Fn(&mut Vec<String>)>;

#[test]
fn verify_refuses_each_change_with_a_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, public) = ten(dir.path());
    let original = lines(&path);
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "a batched line edited",
            Box::new(|lines| lines[1] = lines[1].replace("\"n\":1", "\"n\":7")),
            "line 3: does not follow the line before it (that line was edited",
        ),
        (
            "the last line of a batch edited",
            Box::new(|lines| lines[3] = lines[3].replace("\"n\":3", "\"n\":7")),
            "line 5: does not follow the line before it",
        ),
        ("a line dropped", Box::new(|lines| drop(lines.remove(6))), "line 7: line seq 7 is missing before it"),
        (
            "cut mid-batch",
            Box::new(|lines| lines.truncate(8)),
            "line 6: the log's last 3 lines (seq 6 to 8) are not covered by a signed tree head",
        ),
        (
            "the last head cut",
            Box::new(|lines| lines.truncate(12)),
            "line 11: the log's last 2 lines (seq 11 to 12) are not covered",
        ),
        ("two heads swapped", Box::new(|lines| lines.swap(4, 9)), "line 5: lines seq 5 to 9 are missing before it"),
        ("a head removed", Box::new(|lines| drop(lines.remove(4))), "line 5: line seq 5 is missing before it"),
        (
            "a head's field edited",
            Box::new(|lines| lines[4] = lines[4].replace("\"tree_size\":4", "\"tree_size\":3")),
            "line 5: its signature does not match its content",
        ),
        (
            "a head without its signature",
            Box::new(|lines| {
                let mut head: Value = serde_json::from_str(&lines[4]).unwrap();
                head.as_object_mut().unwrap().remove("sig");
                lines[4] = String::from_utf8(crate::canonical::to_vec(&head)).unwrap();
            }),
            "line 5: a tree head without a signature",
        ),
        (
            "a line added after the last head",
            Box::new(|lines| {
                let last = lines.last().unwrap().clone();
                let prev = crate::keys::hex(&<sha2::Sha256 as sha2::Digest>::digest(last.as_bytes()));
                let (line, _) = crate::head::plain(&mut Object::of(json!({"kind": "tool", "n": 99})), 14, &prev);
                lines.push(String::from_utf8(line).unwrap());
            }),
            "line 14: the log's last line (seq 14) is not covered by a signed tree head",
        ),
        (
            "a batched line re-spaced",
            Box::new(|lines| lines[0] = lines[0].replacen(':', ": ", 1)),
            "line 1: not in the form toolhost writes",
        ),
    ];
    for (what, change, expected) in cases {
        let mut changed = original.clone();
        change(&mut changed);
        write_lines(&path, &changed);
        let said = broken(&path, &public);
        assert!(said.contains(expected), "{what}: {said}");
    }
    write_lines(&path, &original);
    assert!(verify(std::slice::from_ref(&path), &public).is_ok());
}

#[test]
fn a_rewritten_batch_under_its_old_head_is_refused() {
    // Whoever edits a line and writes the chain after it again still meets
    // the head, whose `prev` and root are signed.
    let dir = tempfile::tempdir().unwrap();
    let (path, _, public) = ten(dir.path());
    let mut all = lines(&path);
    let mut prev = crate::line::GENESIS.to_owned();
    for (index, line) in all.iter_mut().take(4).enumerate() {
        let mut value: Value = serde_json::from_str(line).unwrap();
        if index == 1 {
            value["n"] = json!(7);
        }
        let seq = value["seq"].as_u64().unwrap();
        let (bytes, digest) = crate::head::plain(&mut Object::of(value), seq, &prev);
        *line = String::from_utf8(bytes).unwrap();
        prev = digest;
    }
    write_lines(&path, &all);
    let said = broken(&path, &public);
    assert!(said.contains("line 5: does not follow the line before it"), "{said}");
}

#[test]
fn old_logs_signed_line_by_line_still_verify_and_a_chain_may_change_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let (der, public) = keys();
    let log = open(&path, &der, Signing::EachLine);
    for n in 0..3 {
        log.record(Pending::Json(json!({"kind": "tool", "n": n})));
    }
    drop(log);
    let summary = verify(std::slice::from_ref(&path), &public).unwrap();
    assert_eq!((summary.lines, summary.heads), (3, 0));
    assert!(lines(&path).iter().all(|line| line.contains("\"sig\"") && line.contains("\"v\":1")));
    // The same chain goes on in batches, then line by line again.
    let log = open(&path, &der, batches(2));
    for n in 3..6 {
        log.record(Pending::Json(json!({"kind": "tool", "n": n})));
    }
    drop(log);
    let log = open(&path, &der, Signing::EachLine);
    log.record(Pending::Json(json!({"kind": "tool", "n": 6})));
    drop(log);
    let summary = verify(std::slice::from_ref(&path), &public).unwrap();
    assert_eq!((summary.lines, summary.last_seq, summary.heads), (9, 9, 2));
    // The first head names the last line signed alone.
    let all = lines(&path);
    let head: Value = serde_json::from_str(&all[5]).unwrap();
    let digest = crate::keys::hex(&<sha2::Sha256 as sha2::Digest>::digest(all[2].as_bytes()));
    assert_eq!((head["kind"].as_str(), head["prev_head"].as_str()), (Some("head"), Some(digest.as_str())));
    // A line signed alone after batched lines no head covers: named.
    let mut cut = all.clone();
    cut.remove(8);
    cut.remove(7);
    let (line, _) = crate::log::seal(
        &mut Object::of(json!({"kind": "tool"})),
        8,
        &crate::keys::hex(&<sha2::Sha256 as sha2::Digest>::digest(cut[6].as_bytes())),
        &SigningKey::from_pkcs8(&der).unwrap(),
    );
    cut.push(String::from_utf8(line).unwrap());
    write_lines(&path, &cut);
    let said = broken(&path, &public);
    assert!(said.contains("line seq 7 before it is not covered by a signed tree head"), "{said}");
}

#[test]
fn a_restart_after_a_crash_mid_batch_signs_nothing_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let (path, der, public) = ten(dir.path());
    let mut all = lines(&path);
    all.truncate(8);
    write_lines(&path, &all);
    // The same key's writer does not continue (and so sign) a log that ends
    // in lines no head covers: it is moved aside whole, a new chain begun.
    let log = open(&path, &der, batches(4));
    log.record(Pending::Json(json!({"kind": "tool"})));
    drop(log);
    let moved = dir.path().join("audit.log.1");
    assert_eq!(lines(&moved), all);
    let said = broken(&moved, &public);
    assert!(said.contains("not covered by a signed tree head"), "{said}");
}

#[test]
fn a_receipt_proves_its_line_with_the_public_key_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let (der, public) = keys();
    let log = open(&path, &der, batches(64));
    // Lines without receipts wait for the batch; one with a receipt has its
    // head signed as soon as the queue is empty, covering all before it.
    for n in 0..5 {
        log.record(Pending::Call(Box::new(record(n)), false));
    }
    let mut receipts = Vec::new();
    for n in 5..7 {
        let (send, receive) = tokio::sync::oneshot::channel();
        log.record(Pending::Receipted(Box::new(record(n)), false, send));
        receipts.push(receive.blocking_recv().expect("a receipt"));
    }
    drop(log);
    assert_eq!(verify(std::slice::from_ref(&path), &public).unwrap().heads, 2);
    let first = check_receipt(&receipts[0], &public).unwrap();
    let head = first.head.clone().unwrap();
    assert_eq!((first.seq, head.seq, head.tree_size), (6, 7, 6));
    let second = check_receipt(&receipts[1], &public).unwrap();
    assert_eq!((second.seq, second.head.as_ref().unwrap().tree_size), (8, 1));
    // It is the result's: and the log holds its line.
    let result = json!({"content": [{"type": "text", "text": "answer 5"}]});
    assert_eq!(crate::result::check(receipt_line(&receipts[0]), &result), Ok(()));
    let (_, number) = crate::verify::locate(&first, std::slice::from_ref(&path), &public).unwrap();
    assert_eq!(number, 6);
    // Every change to it fails, saying what.
    let wrong = |change: &dyn Fn(&mut Value), expected: &str| {
        let mut receipt = receipts[0].clone();
        change(&mut receipt);
        let err = check_receipt(&receipt, &public).unwrap_err();
        assert!(err.contains(expected), "{expected}: {err}");
    };
    wrong(&|receipt| receipt["line"]["tool"] = json!("other"), "does not lead from the line");
    wrong(&|receipt| receipt["line"]["seq"] = json!(5), "does not lead from the line");
    wrong(&|receipt| receipt["line"]["seq"] = json!(9), "not among the lines its tree head covers");
    wrong(&|receipt| receipt["proof"][0] = json!("00".repeat(32)), "does not lead from the line");
    wrong(&|receipt| receipt["proof"].as_array_mut().unwrap().truncate(1), "does not lead from the line");
    wrong(&|receipt| receipt["proof"][0] = json!("xyz"), "not a list of SHA-256s");
    wrong(&|receipt| receipt["head"] = receipts[1]["head"].clone(), "not among the lines");
    wrong(&|receipt| receipt["head"]["tree_size"] = json!(7), "its tree head: its signature does not match");
    wrong(&|receipt| receipt["head"]["root"] = receipts[1]["head"]["root"].clone(), "signature does not match");
    wrong(&|receipt| receipt["line"]["v"] = json!(1), "not a batched line");
    let (_, other) = keys();
    let err = check_receipt(&receipts[0], &other).unwrap_err();
    assert!(err.contains("not by the key given"), "{err}");
}

#[test]
fn a_batch_is_signed_after_its_interval_without_more_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let (der, public) = keys();
    let log = open(&path, &der, Signing::Batch { lines: 1000, interval: Duration::from_millis(50) });
    log.record(Pending::Json(json!({"kind": "tool"})));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while lines(&path).len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no head after the interval");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Signed while the writer is still running.
    assert_eq!(verify(std::slice::from_ref(&path), &public).unwrap().heads, 1);
    drop(log);
}

#[test]
fn a_rotated_file_ends_in_a_head_and_each_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let (der, public) = keys();
    let target = Target::File { path: path.clone(), rotate: 4096, checkpoint: None };
    let log = AuditLog::open(target, SigningKey::from_pkcs8(&der).unwrap(), 4096, batches(1000)).unwrap();
    for n in 0..200 {
        log.record(Pending::Json(json!({"kind": "tool", "n": n, "pad": "x".repeat(64)})));
    }
    drop(log);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|file| file.file_name().unwrap().to_string_lossy().starts_with("audit.log."))
        .collect();
    files.sort_by_key(|file| file.extension().unwrap().to_string_lossy().parse::<u64>().unwrap());
    assert!(files.len() >= 3, "{files:?}");
    for file in &files {
        assert!(lines(file).last().unwrap().contains("\"kind\":\"head\""), "{}", file.display());
        verify(std::slice::from_ref(file), &public).unwrap();
    }
    files.push(path);
    let summary = verify(&files, &public).unwrap();
    assert_eq!(summary.lines - summary.heads, 200);
}

#[test]
fn a_log_still_being_written_says_which_lines_wait_for_their_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let (der, public) = keys();
    let log = open(&path, &der, batches(3));
    for n in 0..5 {
        log.record(Pending::Json(json!({"kind": "tool", "n": n})));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while lines(&path).len() < 6 {
        assert!(std::time::Instant::now() < deadline, "the lines did not reach the file");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The writer holds the file: its last two lines are pending, not vouched for.
    let summary = verify(std::slice::from_ref(&path), &public).unwrap();
    assert_eq!((summary.lines, summary.last_seq, summary.heads, summary.pending), (4, 4, 1, 2));
    let said = crate::verify::describe(&summary, std::slice::from_ref(&path));
    assert!(said.contains("the 2 line(s) after seq 4 are not under a signed tree head yet"), "{said}");
    // A copy nobody writes is a log whose writer stopped: refused.
    let copy = dir.path().join("copy.log");
    std::fs::copy(&path, &copy).unwrap();
    assert!(broken(&copy, &public).contains("the log's last 2 lines (seq 5 to 6) are not covered"));
    drop(log);
    let summary = verify(std::slice::from_ref(&path), &public).unwrap();
    assert_eq!((summary.lines, summary.heads, summary.pending), (7, 2, 0));
}
