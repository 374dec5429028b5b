use super::*;

#[test]
fn only_the_task_requests_are_renamed() {
    let renamed_method = |message: Value| {
        renamed(&message).map(|bytes| serde_json::from_slice::<Value>(&bytes).unwrap()["method"].clone())
    };
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a", "task": {}}});
    assert_eq!(renamed_method(call), Some(json!("toolhost/2025-11-25/tools/call")));
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": "x"}});
    assert_eq!(renamed_method(get), Some(json!("toolhost/2025-11-25/tasks/get")));
    for message in [
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "a"}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {"taskId": "x"}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 6, "result": {}}),
    ] {
        assert_eq!(renamed_method(message.clone()), None, "{message}");
    }
}

#[test]
fn the_capability_and_execution_are_added_for_this_revision_only() {
    let initialize = |version: &str| {
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version,
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}}})
    };
    let mut ours = initialize(VERSION);
    assert!(adjust(Watch::Initialize, &mut ours));
    assert_eq!(ours["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"], json!({}));
    let mut newer = initialize("2026-07-28");
    assert!(!adjust(Watch::Initialize, &mut newer));
    assert_eq!(newer, initialize("2026-07-28"));
    let mut without_tasks = json!({"id": 0, "result": {"protocolVersion": VERSION, "capabilities": {}}});
    assert!(!adjust(Watch::Initialize, &mut without_tasks));
    assert_eq!(without_tasks["result"]["capabilities"].get("tasks"), None);

    let list = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "a", "_meta": {"toolhost/taskSupport": "optional"}}, {"name": "b"}]}});
    let body = format!("id: 0\ndata: \nretry: 3000\n\nid: 1\ndata: {list}\n\n");
    // Through the transports' interface, as they call it.
    let tools_list = super::super::watch(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).unwrap();
    assert!(!tools_list.early());
    let initialize_request = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}});
    assert!(super::super::watch(&initialize_request).is_some_and(|watch| watch.early()));
    let adjusted = String::from_utf8(super::super::adjust_body(tools_list, body.as_bytes(), true)).unwrap();
    let data = adjusted.lines().find_map(|line| line.strip_prefix("data: {")).unwrap();
    let message: Value = serde_json::from_str(&format!("{{{data}")).unwrap();
    assert_eq!(message["result"]["tools"][0]["execution"], json!({"taskSupport": "optional"}));
    assert_eq!(message["result"]["tools"][1].get("execution"), None);
    assert!(adjusted.starts_with("id: 0\ndata: \nretry: 3000\n\nid: 1\n"), "{adjusted}");
    let (line, ours) = super::super::adjust_line(tools_list, list.to_string().as_bytes());
    assert!(!ours && line.ends_with(b"\n"));
    assert_eq!(super::super::adjust_body(tools_list, b"not json", false), b"not json");
}
