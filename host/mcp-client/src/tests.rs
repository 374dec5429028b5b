use super::backoff;
use std::time::Duration;

#[test]
fn restarts_back_off_from_none_to_half_a_second_doubling_to_thirty() {
    let millis = |strikes| backoff(strikes).as_millis();
    let table = [(0, 0), (1, 0), (2, 500), (3, 1000), (4, 2000), (7, 16_000), (8, 30_000), (9, 30_000)];
    for (strikes, expected) in table {
        assert_eq!(millis(strikes), expected, "after {strikes} failures");
    }
    assert_eq!(backoff(u32::MAX), Duration::from_secs(30));
}

#[test]
fn type_names_are_left_out_of_errors() {
    let text = "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::X<reqwest::Client>>] \
                    error: HTTP 500, when send initialize request";
    assert_eq!(
        super::connect::without_type_names(text),
        "Send message error Transport error: HTTP 500, when send initialize request"
    );
}
